package pgm_test

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dpsql/dpsql/synth/pgm"
	"gonum.org/v1/gonum/mat"
)

// denseKron materialises ⊗ factors (nil = identity of the size).
func denseKron(factors []*mat.Dense, sizes []int) *mat.Dense {
	q := mat.NewDense(1, 1, []float64{1})
	for j, f := range factors {
		if f == nil {
			id := mat.NewDense(sizes[j], sizes[j], nil)
			for i := range sizes[j] {
				id.Set(i, i, 1)
			}
			f = id
		}
		var k mat.Dense
		k.Kronecker(q, f)
		q = &k
	}
	return q
}

func randFactor(r *rand.Rand, rows, cols int) *mat.Dense {
	f := mat.NewDense(rows, cols, nil)
	for i := range rows {
		for j := range cols {
			if r.IntN(3) == 0 {
				f.Set(i, j, float64(r.IntN(3)-1))
			}
		}
	}
	return f
}

func TestKronMulMatchesDense(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for trial := range 20 {
		k := 1 + r.IntN(3)
		sizes := make([]int, k)
		factors := make([]*mat.Dense, k)
		for j := range k {
			sizes[j] = 1 + r.IntN(4)
			if r.IntN(3) > 0 {
				factors[j] = randFactor(r, 1+r.IntN(5), sizes[j])
			}
		}
		q := denseKron(factors, sizes)
		rows, cols := q.Dims()
		x := make([]float64, cols)
		for i := range x {
			x[i] = r.NormFloat64()
		}
		var want mat.VecDense
		want.MulVec(q, mat.NewVecDense(cols, x))
		got := pgm.KronMul(factors, sizes, x, false)
		for i := range rows {
			if math.Abs(got[i]-want.AtVec(i)) > 1e-9 {
				t.Fatalf("trial %d: Qx[%d] = %v, want %v", trial, i, got[i], want.AtVec(i))
			}
		}
		z := make([]float64, rows)
		for i := range z {
			z[i] = r.NormFloat64()
		}
		var wantT mat.VecDense
		wantT.MulVec(q.T(), mat.NewVecDense(rows, z))
		got = pgm.KronMul(factors, sizes, z, true)
		for i := range cols {
			if math.Abs(got[i]-wantT.AtVec(i)) > 1e-9 {
				t.Fatalf("trial %d: Qᵀz[%d] = %v, want %v", trial, i, got[i], wantT.AtVec(i))
			}
		}
	}
}

// A Kronecker measurement is the same measurement as its dense matrix:
// the estimates and the estimated totals agree.
func TestKronMeasurementMatchesDense(t *testing.T) {
	dom, err := pgm.NewDomain([]string{"a", "b", "c"}, []int{3, 4, 2})
	if err != nil {
		t.Fatal(err)
	}
	prefix := mat.NewDense(4, 4, nil)
	for i := range 4 {
		for j := 0; j <= i; j++ {
			prefix.Set(i, j, 1)
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	kr := []*mat.Dense{nil, prefix}
	sizes := []int{3, 4}
	y := make([]float64, 12)
	for i := range y {
		y[i] = float64(10 + r.IntN(50))
	}
	y2 := make([]float64, 8)
	for i := range y2 {
		y2[i] = float64(10 + r.IntN(30))
	}
	kronMeas := []pgm.Measurement{
		{Attrs: []int{0, 1}, Kron: kr, Y: y, Sigma: 2},
		{Attrs: []int{1, 2}, Y: y2, Sigma: 3},
	}
	denseMeas := []pgm.Measurement{
		{Attrs: []int{0, 1}, Query: denseKron(kr, sizes), Y: y, Sigma: 2},
		{Attrs: []int{1, 2}, Y: y2, Sigma: 3},
	}
	if a, b := pgm.EstimateTotal(dom, kronMeas), pgm.EstimateTotal(dom, denseMeas); math.Abs(a-b) > 1e-9*b {
		t.Fatalf("total %v (Kronecker) vs %v (dense)", a, b)
	}
	for _, loss := range []pgm.Loss{pgm.L2, pgm.L1} {
		o := &pgm.EstimateOptions{Iters: 200, Loss: loss}
		if loss == pgm.L1 {
			o.StepSize = 0.05
		}
		mk, err := pgm.Estimate(context.Background(), dom, kronMeas, o)
		if err != nil {
			t.Fatal(err)
		}
		md, err := pgm.Estimate(context.Background(), dom, denseMeas, o)
		if err != nil {
			t.Fatal(err)
		}
		a, b := mk.Marginal([]int{0, 1, 2}), md.Marginal([]int{0, 1, 2})
		for i := range a {
			if math.Abs(a[i]-b[i]) > 1e-6*(1+math.Abs(b[i])) {
				t.Fatalf("loss %d cell %d: %v (Kronecker) vs %v (dense)", loss, i, a[i], b[i])
			}
		}
	}
	bad := []pgm.Measurement{{Attrs: []int{0, 1}, Kron: []*mat.Dense{nil}, Y: y, Sigma: 1}}
	if _, err := pgm.Estimate(context.Background(), dom, bad, nil); err == nil {
		t.Error("a Kronecker measurement with a missing factor was accepted")
	}
}
