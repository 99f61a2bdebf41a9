package marginal

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"
)

// TestEncodeView round-trips every representation: a view of the encoding
// is the same Compact (the same arrays, nil where they were nil) and reads
// the same numbers, bit for bit, several encodings laid end to end.
func TestEncodeView(t *testing.T) {
	const n = 504
	rng := rand.New(rand.NewPCG(3, 4))
	var cs []Compact
	for _, tt := range []struct {
		nz   int
		frac bool
		big  bool
	}{
		{0, false, false}, {15, false, false}, {17, false, false}, {n, false, false},
		{10, false, true}, {400, false, true}, {50, true, false}, {9 * n / 10, true, false},
	} {
		cs = append(cs, NewCompact(randomCells(rng, n, tt.nz, tt.frac, tt.big)))
	}
	cs = append(cs, Compact{}, NewCompact(nil), NewCompact([]float64{0.5}))

	var b []byte
	for i := range cs {
		before := len(b)
		b = cs[i].AppendBinary(b)
		if got := len(b) - before; got != cs[i].EncodedLen() || got%8 != 0 {
			t.Fatalf("compact %d: encoding of %d bytes, EncodedLen %d", i, got, cs[i].EncodedLen())
		}
	}
	// An aligned copy, as a reader's buffer is.
	words := make([]uint64, (len(b)+7)/8)
	buf := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), len(b))
	copy(buf, b)

	y := make([]float64, n)
	for i := range y {
		y[i] = rng.Float64() * 3
	}
	off := 0
	for i := range cs {
		var v Compact
		k, err := v.View(buf[off:])
		if err != nil {
			t.Fatalf("compact %d: %v", i, err)
		}
		off += k
		want := &cs[i]
		if v.n != want.n || (v.dense == nil) != (want.dense == nil) || (v.bits == nil) != (want.bits == nil) ||
			(v.val == nil) != (want.val == nil) || (v.idx == nil) != (want.idx == nil) ||
			(v.big == nil) != (want.big == nil) || (v.cnt == nil) != (want.cnt == nil) {
			t.Fatalf("compact %d: view %+v, want %+v", i, v, *want)
		}
		if !slices.Equal(v.Expand(nil), want.Expand(nil)) {
			t.Errorf("compact %d: view expands differently", i)
		}
		if want.n == n {
			if got, exp := v.L1Total(y, 700), want.L1Total(y, 700); math.Float64bits(got) != math.Float64bits(exp) {
				t.Errorf("compact %d: L1Total %v, want %v", i, got, exp)
			}
		}
	}
	if off != len(buf) {
		t.Errorf("views read %d bytes of %d", off, len(buf))
	}
}

// TestViewRejects: a buffer that does not hold an encoding is refused, not
// viewed past its end.
func TestViewRejects(t *testing.T) {
	c := NewCompact([]float64{0, 3, 0, 70000, 1})
	enc := c.AppendBinary(nil)
	aligned := func(b []byte) []byte {
		w := make([]uint64, (len(b)+8)/8)
		out := unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), len(b)+1)
		copy(out, b)
		return out[:len(b)]
	}
	var v Compact
	for name, b := range map[string][]byte{
		"short header":    aligned(enc[:8*headerWords-1]),
		"truncated array": aligned(enc[:len(enc)-8]),
		"misaligned":      aligned(append([]byte{0}, enc...))[1:],
		"unknown flag":    aligned(func() []byte { e := slices.Clone(enc); e[8+7] = 0x80; return e }()),
		"absent but long": aligned(func() []byte { e := slices.Clone(enc); e[8*2] = 1; return e }()), // dense: absent, length 1
	} {
		if _, err := v.View(b); err == nil {
			t.Errorf("%s: viewed", name)
		}
	}
	if _, err := v.View(aligned(enc)); err != nil {
		t.Fatalf("the encoding itself: %v", err)
	}
}
