package marginal

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dpsql/dpsql/synth/pgm"
)

// randomCells is a marginal of n cells with nz non-zero ones: counts of
// 1–9, fractions (x.25) if frac, and if big a third of them counts on both
// sides of the 2-byte mark.
func randomCells(rng *rand.Rand, n, nz int, frac, big bool) []float64 {
	x := make([]float64, n)
	for _, i := range rng.Perm(n)[:nz] {
		x[i] = float64(1 + rng.IntN(9))
		switch {
		case frac:
			x[i] += 0.25
		case big && rng.IntN(3) == 0:
			x[i] = float64(math.MaxUint16 - 1 + rng.IntN(3))
		}
	}
	return x
}

func TestCompact(t *testing.T) {
	// 7 × 8 × 9 = 504 cells: a bitmap of 8 words (64 bytes) is smaller than
	// the indexes of 16 or more non-zero cells.
	dom, _ := pgm.NewDomain([]string{"a", "b", "c"}, []int{7, 8, 9})
	attrs := []int{0, 1, 2}
	const n = 504
	rng := rand.New(rand.NewPCG(1, 2))
	type form int
	const (
		pairs form = iota
		bitmap
		floatPairs
		floatDense
	)
	for _, tt := range []struct {
		name string
		nz   int  // non-zero cells
		frac bool // values with fractions (not counts)
		big  bool // counts of 65 535 and more
		want form
	}{
		{"empty cells", 0, false, false, pairs},
		{"few counts", 15, false, false, pairs},
		{"counts just past the bitmap's size", 17, false, false, bitmap},
		{"half counts", n / 2, false, false, bitmap},
		{"every cell a count", n, false, false, bitmap},
		{"few counts, some big", 10, false, true, pairs},
		{"many counts, some big", 400, false, true, bitmap},
		{"sparse fractions", 50, true, false, floatPairs},
		{"three fifths fractions", 3 * n / 5, true, false, floatPairs},
		{"two thirds fractions", 2 * n / 3, true, false, floatDense},
		{"dense fractions", 9 * n / 10, true, false, floatDense},
	} {
		t.Run(tt.name, func(t *testing.T) {
			x := randomCells(rng, n, tt.nz, tt.frac, tt.big)
			if tt.big {
				x[slices.IndexFunc(x, func(v float64) bool { return v != 0 })] = math.MaxUint32 // the largest count held
			}
			c := NewCompact(slices.Clone(x))
			var got form
			switch {
			case c.dense != nil:
				got = floatDense
			case c.val != nil:
				got = floatPairs
			case c.bits != nil:
				got = bitmap
			default:
				got = pairs
			}
			if got != tt.want || c.Len() != n || c.Sparse() != (tt.want != floatDense) {
				t.Fatalf("form %d, len %d, sparse %v; want form %d, len %d", got, c.Len(), c.Sparse(), tt.want, n)
			}
			// Counts never take more than the smaller of dense uint32 and
			// (index, uint32) pairs, the forms before 2 bytes a count.
			if !tt.frac {
				if old := min(4*n, 8*tt.nz); c.Bytes() > old {
					t.Errorf("%d bytes, more than %d", c.Bytes(), old)
				}
			}
			if got := c.Expand(make([]float64, 3)); !slices.Equal(got, x) {
				t.Errorf("Expand = %v, want %v", got, x)
			}
			// CompactOf holds the same cells and not the buffer it was given.
			lent := slices.Clone(x)
			kept := CompactOf(lent)
			for i := range lent {
				lent[i] = -1
			}
			if got := kept.Expand(nil); !slices.Equal(got, x) {
				t.Errorf("CompactOf, its buffer overwritten: Expand = %v, want %v", got, x)
			}
			// L1Total: against a non-negative y with its total.
			y := make([]float64, n)
			var total float64
			for i := range y {
				y[i] = rng.Float64() * 4
				total += y[i]
			}
			if got, want := c.L1Total(y, total), L1(x, y); math.Abs(got-want) > 1e-12*want || (tt.want == floatDense && got != want) {
				t.Errorf("L1Total = %v, want %v (bit for bit when dense)", got, want)
			}
			for _, sub := range [][]int{{0}, {1}, {2}, {0, 2}, {1, 2}, {0, 1, 2}} {
				got := c.ProjectTo(nil, dom, attrs, sub)
				if want := ProjectTo(nil, dom, attrs, x, sub); !slices.Equal(got, want) {
					t.Errorf("ProjectTo(%v) = %v, want %v", sub, got, want)
				}
			}
		})
	}
	var zero Compact
	if zero.Len() != 0 || len(zero.Expand(nil)) != 0 || zero.L1Total(nil, 0) != 0 || zero.Sparse() {
		t.Error("the zero Compact is not an empty marginal")
	}
}

// L1Total is AIM's scoring loop: it allocates nothing, whatever the form.
func TestCompactL1TotalAllocates(t *testing.T) {
	x := make([]float64, 4096)
	for i := range x {
		if i%3 == 0 {
			x[i] = float64(i)
		}
	}
	few := make([]float64, len(x))
	few[10], few[4000] = 3, 70000
	y := make([]float64, len(x))
	for _, c := range []Compact{NewCompact(x), NewCompact(few)} { // a bitmap, pairs
		if n := testing.AllocsPerRun(10, func() { c.L1Total(y[:c.Len()], 1) }); n != 0 {
			t.Errorf("L1Total allocates %v times", n)
		}
	}
}

// BenchmarkCompactL1Total: one L1Total of a 2^20-cell marginal of counts
// with 5 % (pairs), 37 % and 90 % (bitmap) of its cells non-zero.
func BenchmarkCompactL1Total(b *testing.B) {
	for _, fill := range []int{5, 37, 90} {
		rng := rand.New(rand.NewPCG(1, 2))
		x := make([]float64, 1<<20)
		y := make([]float64, len(x))
		for i := range x {
			if rng.IntN(100) < fill {
				x[i] = float64(1 + rng.IntN(300))
			}
			y[i] = rng.Float64()
		}
		c := NewCompact(x)
		b.Run(fmt.Sprintf("%d%%", fill), func(b *testing.B) {
			for range b.N {
				c.L1Total(y, 1)
			}
		})
	}
}
