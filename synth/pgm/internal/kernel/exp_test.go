package kernel

import (
	"math"
	"math/rand/v2"
	"testing"
)

// ulps returns the distance in units in the last place between a and b.
func ulps(a, b float64) float64 {
	if a == b {
		return 0
	}
	return math.Abs(a-b) / (math.Nextafter(b, math.Inf(1)) - b)
}

func TestExp(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	var worst float64
	check := func(x float64) {
		got := Exp(x)
		want, bound := expRef(x)
		if math.IsNaN(want) {
			if !math.IsNaN(got) {
				t.Fatalf("Exp(%v) = %v, want NaN", x, got)
			}
			return
		}
		u := ulps(got, want)
		worst = math.Max(worst, u)
		// math.Exp is itself within 1 ulp of e^x, so two ulps between them
		// bounds an error below 1 ulp for each.
		if u > bound {
			t.Fatalf("Exp(%v) = %v, math.Exp = %v (%v ulps)", x, got, want, u)
		}
	}
	for _, x := range []float64{0, math.Copysign(0, -1), 1, -1, math.Ln2, -math.Ln2, 1e-300, -1e-300, -708, -708.0000001, 709, 709.1, 709.78, 709.782712893384, 709.7828,
		-745, -746, -1000, 1000, math.Inf(1), math.Inf(-1), math.NaN(), -math.Ln2 / 128, math.Ln2 / 128} {
		check(x)
	}
	for range 200_000 {
		check(-rng.Float64() * 750)
		check(709 + rng.Float64())
		check((rng.Float64()*2 - 1) * 40)
		check((rng.Float64()*2 - 1) * 1e-6)
	}
	t.Logf("worst difference from math.Exp: %v ulps", worst)
}

// expRef returns math.Exp(x) and the distance in ulps allowed from it, except
// in (709.09, ln(MaxFloat64)], where math.Exp on amd64 wrongly overflows:
// there it returns e^(x-8)·e^8, within 2 ulps of e^x, and allows 3.
func expRef(x float64) (want, bound float64) {
	want = math.Exp(x)
	if math.IsInf(want, 1) && x <= expLimit {
		return math.Exp(x-8) * 2980.9579870417283, 3
	}
	return want, 2
}

func BenchmarkExp(b *testing.B) {
	x := make([]float64, 4096)
	rng := rand.New(rand.NewPCG(2, 2))
	for i := range x {
		x[i] = -rng.Float64() * 30
	}
	b.Run("kernel", func(b *testing.B) {
		var s float64
		for b.Loop() {
			for _, v := range x {
				s += Exp(v)
			}
		}
		_ = s
	})
	b.Run("math", func(b *testing.B) {
		var s float64
		for b.Loop() {
			for _, v := range x {
				s += math.Exp(v)
			}
		}
		_ = s
	})
}

// TestExpShiftInlined checks that the Go loops with Exp inlined by hand give
// Exp's results bit for bit, on both sides of its fast-path range. (The
// assembly versions are checked against math.Exp in arch_test.go.)
func TestExpShiftInlined(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	x := make([]float64, 10_000)
	for i := range x {
		switch i % 4 {
		case 0:
			x[i] = -rng.Float64() * 800
		case 1:
			x[i] = (rng.Float64()*2 - 1) * 40
		case 2:
			x[i] = math.Inf(-1)
		default:
			x[i] = -rng.Float64() * 1e-3
		}
	}
	for _, s := range []float64{0, 3.5, -20, 750} {
		got := append([]float64(nil), x...)
		sum := expShiftTotalGo(got, s)
		var want float64
		for i, v := range x {
			e := Exp(v - s)
			want += e
			if math.Float64bits(got[i]) != math.Float64bits(e) {
				t.Fatalf("ExpShiftTotal(s=%v)[%d] = %v, Exp = %v", s, i, got[i], e)
			}
		}
		if math.Float64bits(sum) != math.Float64bits(want) {
			t.Fatalf("ExpShiftTotal(s=%v) sum = %v, want %v", s, sum, want)
		}
	}
	shift := []float64{0, 3.5, math.Inf(-1), -20, 750}
	idx := make([]int32, len(x))
	for i := range idx {
		idx[i] = int32(rng.IntN(len(shift)))
	}
	got := append([]float64(nil), x...)
	expShiftGatherGo(got, shift, idx)
	for i, v := range x {
		want := 0.0
		if s := shift[idx[i]]; !math.IsInf(s, -1) {
			want = Exp(v - s)
		}
		if math.Float64bits(got[i]) != math.Float64bits(want) {
			t.Fatalf("ExpShiftGather[%d] = %v, want %v", i, got[i], want)
		}
	}
}
