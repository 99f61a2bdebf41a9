package kernel

import (
	"math"
	"math/rand/v2"
	"testing"
)

// naiveMap computes the index map cell by cell with division, the reference
// for Map.
func naiveMap(sizes, dims []int) []int32 {
	n := 1
	for _, s := range sizes {
		n *= s
	}
	out := make([]int32, n)
	digits := make([]int, len(sizes))
	for i := range n {
		r := i
		for d := len(sizes) - 1; d >= 0; d-- {
			digits[d] = r % sizes[d]
			r /= sizes[d]
		}
		j := 0
		for _, d := range dims {
			j = j*sizes[d] + digits[d]
		}
		out[i] = int32(j)
	}
	return out
}

func TestMap(t *testing.T) {
	tests := []struct {
		sizes, dims []int
	}{
		{nil, nil},
		{[]int{3}, nil},
		{[]int{3}, []int{0}},
		{[]int{2, 3, 4}, []int{0, 2}},
		{[]int{2, 3, 4}, []int{1}},
		{[]int{2, 3, 4}, []int{2}},
		{[]int{5, 1, 3, 2}, []int{0, 1, 3}},
		{[]int{2, 2, 2, 2, 2}, []int{0, 1, 2, 3, 4}},
	}
	for _, tt := range tests {
		want := naiveMap(tt.sizes, tt.dims)
		got := Map(tt.sizes, tt.dims)
		if len(got) != len(want) {
			t.Fatalf("Map(%v, %v) has %d entries, want %d", tt.sizes, tt.dims, len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("Map(%v, %v)[%d] = %d, want %d", tt.sizes, tt.dims, i, got[i], want[i])
			}
		}
	}
}

// guarded returns a slice of n values inside a NaN-filled guard band, so that
// any write outside the window shows up (gonum asm_test.go idea).
func guarded(n int) (inner, all []float64) {
	const pad = 8
	all = make([]float64, n+2*pad)
	for i := range all {
		all[i] = math.NaN()
	}
	return all[pad : pad+n], all
}

func checkGuard(t *testing.T, name string, inner, all []float64) {
	t.Helper()
	const pad = 8
	for i := range pad {
		if !math.IsNaN(all[i]) || !math.IsNaN(all[len(all)-1-i]) {
			t.Fatalf("%s wrote outside its window", name)
		}
	}
	_ = inner
}

// close reports |a-b| ≤ 1e-12·max(1,|a|,|b|): the kernels sum the same terms
// as the references, possibly in another order, so only rounding differs.
func close(a, b float64) bool {
	if math.IsInf(a, 0) || math.IsInf(b, 0) {
		return a == b
	}
	return math.Abs(a-b) <= 1e-12*math.Max(1, math.Max(math.Abs(a), math.Abs(b)))
}

func TestKernelsAgainstReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	sizes := []int{3, 4, 2, 5}
	for _, dims := range [][]int{{}, {0}, {1, 3}, {0, 2, 3}, {0, 1, 2, 3}} {
		idx := Map(sizes, dims)
		n := len(idx)
		m := 1
		for _, d := range dims {
			m *= sizes[d]
		}
		src := make([]float64, n)
		for i := range src {
			src[i] = rng.NormFloat64() * 30
		}
		src[0] = math.Inf(-1)
		sub := make([]float64, m)
		for i := range sub {
			sub[i] = rng.NormFloat64()
		}

		// Expand.
		dst, all := guarded(n)
		for i := range dst {
			dst[i] = float64(i)
		}
		Expand(dst, sub, idx)
		checkGuard(t, "Expand", dst, all)
		for i := range dst {
			if want := float64(i) + sub[idx[i]]; !close(dst[i], want) {
				t.Fatalf("Expand dims %v: cell %d = %v, want %v", dims, i, dst[i], want)
			}
		}

		// Project.
		p, all := guarded(m)
		clear(p)
		Project(p, sub[:0:0], idx[:0])
		q := make([]float64, n)
		for i := range q {
			q[i] = rng.Float64()
		}
		Project(p, q, idx)
		checkGuard(t, "Project", p, all)
		want := make([]float64, m)
		for i := range q {
			want[idx[i]] += q[i]
		}
		for j := range want {
			if !close(p[j], want[j]) {
				t.Fatalf("Project dims %v: cell %d = %v, want %v", dims, j, p[j], want[j])
			}
		}

		// MaxTo then ExpShiftSum give a stable per-cell logsumexp.
		mx, all := guarded(m)
		MaxTo(mx, src, idx)
		checkGuard(t, "MaxTo", mx, all)
		x := append([]float64(nil), src...)
		acc, all2 := guarded(m)
		ExpShiftSum(x, acc, mx, idx)
		checkGuard(t, "ExpShiftSum", acc, all2)
		for j := range m {
			var vals []float64
			for i := range src {
				if int(idx[i]) == j {
					vals = append(vals, src[i])
				}
			}
			if got, want := mx[j]+math.Log(acc[j]), naiveLSE(vals); !close(got, want) {
				t.Fatalf("LSE dims %v: cell %d = %v, want %v", dims, j, got, want)
			}
		}
		for i := range x {
			want := 0.0 // a cell whose whole projection is -Inf becomes 0
			if !math.IsInf(mx[idx[i]], -1) {
				want = math.Exp(src[i] - mx[idx[i]])
			}
			if !close(x[i], want) {
				t.Fatalf("ExpShiftSum dims %v: x[%d] = %v, want %v", dims, i, x[i], want)
			}
		}

		// Scale.
		y := append([]float64(nil), q...)
		Scale(y, sub, idx)
		for i := range y {
			if want := q[i] * sub[idx[i]]; y[i] != want {
				t.Fatalf("Scale: %v want %v", y[i], want)
			}
		}
	}
}

// naiveLSE is log Σ exp with big-number-safe shifting by the maximum.
func naiveLSE(x []float64) float64 {
	m := math.Inf(-1)
	for _, v := range x {
		m = math.Max(m, v)
	}
	if math.IsInf(m, -1) {
		return m
	}
	s := 0.0
	for _, v := range x {
		s += math.Exp(v - m)
	}
	return m + math.Log(s)
}

func TestLogSumExp(t *testing.T) {
	inf := math.Inf(-1)
	tests := []struct {
		x    []float64
		want float64
	}{
		{nil, inf},
		{[]float64{inf, inf}, inf},
		{[]float64{0}, 0},
		{[]float64{1000, 1000}, 1000 + math.Ln2}, // would overflow without the shift
		{[]float64{-1000, -1000}, -1000 + math.Ln2},
		{[]float64{inf, 3}, 3},
		{[]float64{math.Log(1), math.Log(2), math.Log(3)}, math.Log(6)},
	}
	for _, tt := range tests {
		if got := LogSumExp(tt.x); !close(got, tt.want) {
			t.Errorf("LogSumExp(%v) = %v, want %v", tt.x, got, tt.want)
		}
	}
	x := []float64{inf, 0, 1}
	ExpShift(x, 1)
	if x[0] != 0 || !close(x[1], math.Exp(-1)) || x[2] != 1 {
		t.Errorf("ExpShift = %v", x)
	}
	ExpShift(x, inf)
	if x[0] != 0 || x[1] != 0 || x[2] != 0 {
		t.Errorf("ExpShift with -Inf shift = %v", x)
	}
}

func TestVectorKernels(t *testing.T) {
	x := []float64{1, 2, 3}
	y := []float64{4, 5, 6}
	if got := DotDiff(x, y, x); got != 1*3+2*3+3*3 {
		t.Errorf("DotDiff = %v", got)
	}
	d := make([]float64, 3)
	AxpyTo(d, y, -2, x)
	if d[0] != 2 || d[1] != 1 || d[2] != 0 {
		t.Errorf("AxpyTo = %v", d)
	}
	Axpy(d, 1, x)
	if d[0] != 3 || d[1] != 3 || d[2] != 3 {
		t.Errorf("Axpy = %v", d)
	}
	defer func() {
		if recover() == nil {
			t.Error("DotDiff with mismatched lengths did not panic")
		}
	}()
	DotDiff(x, y[:2], x)
}

func TestKernelsDoNotAllocate(t *testing.T) {
	sizes := []int{4, 5, 6}
	idx := Map(sizes, []int{0, 2})
	src := make([]float64, len(idx))
	sub := make([]float64, 24)
	acc := make([]float64, 24)
	n := testing.AllocsPerRun(10, func() {
		Expand(src, sub, idx)
		Project(sub, src, idx)
		MaxTo(sub, src, idx)
		ExpShiftSum(src, acc, sub, idx)
		Scale(src, acc, idx)
		MapTo(idx, sizes, []int{0, 2})
	})
	if n != 0 {
		t.Errorf("kernels allocate %v times", n)
	}
}
