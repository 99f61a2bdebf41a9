package pgm

import (
	"context"
	"math"
	"testing"
)

// l2Custom is the L2 loss of identity measurements written as a
// CustomLoss: ½Σ‖(N·x − y)/σ‖².
type l2Custom struct {
	meas  []Measurement
	total float64
}

func (l *l2Custom) Sets() [][]int {
	s := make([][]int, len(l.meas))
	for i, m := range l.meas {
		s[i] = m.Attrs
	}
	return s
}

func (l *l2Custom) Eval(x, g [][]float64) float64 {
	var loss float64
	for i, m := range l.meas {
		for j, y := range m.Y {
			d := (l.total*x[i][j] - y) / m.Sigma
			loss += 0.5 * d * d
			g[i][j] = d * l.total / m.Sigma
		}
	}
	return loss
}

// EstimateCustom with the L2 loss written by hand reaches the fit of
// Estimate's own L2 loss.
func TestEstimateCustomMatchesL2(t *testing.T) {
	dom, err := NewDomain([]string{"a", "b", "c", "d"}, []int{3, 4, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	// Noisy-looking but consistent-ish measurements over a chain.
	meas := []Measurement{
		{Attrs: []int{0, 1}, Sigma: 1},
		{Attrs: []int{1, 2}, Sigma: 2},
		{Attrs: []int{2, 3}, Sigma: 1},
	}
	for i := range meas {
		n := dom.Cells(meas[i].Attrs)
		meas[i].Y = make([]float64, n)
		for j := range n {
			meas[i].Y[j] = 100 + float64((j*37+i*11)%23)*7 - 50
		}
	}
	const total = 1500.0
	ref, err := Estimate(context.Background(), dom, meas, &EstimateOptions{Iters: 3000, Total: total})
	if err != nil {
		t.Fatal(err)
	}
	var st EstimateStats
	got, err := EstimateCustom(context.Background(), dom, &l2Custom{meas: meas, total: total},
		&EstimateOptions{Iters: 3000, Total: total, Stats: &st})
	if err != nil {
		t.Fatal(err)
	}
	if got.Total() != total {
		t.Fatalf("total %v", got.Total())
	}
	for _, m := range meas {
		a, b := ref.Marginal(m.Attrs), got.Marginal(m.Attrs)
		for j := range a {
			if math.Abs(a[j]-b[j]) > 0.5 {
				t.Fatalf("marginal %v cell %d: Estimate %v, EstimateCustom %v (%d iterations, loss %v)", m.Attrs, j, a[j], b[j], st.Iters, st.Loss)
			}
		}
	}
}

func TestEstimateCustomRejects(t *testing.T) {
	dom, _ := NewDomain([]string{"a", "b"}, []int{2, 2})
	l := &l2Custom{meas: []Measurement{{Attrs: []int{0, 1}, Y: make([]float64, 4), Sigma: 1}}, total: 1}
	if _, err := EstimateCustom(context.Background(), dom, l, &EstimateOptions{}); err == nil {
		t.Error("no total accepted")
	}
	l.meas[0].Attrs = []int{1, 0}
	if _, err := EstimateCustom(context.Background(), dom, l, &EstimateOptions{Total: 1}); err == nil {
		t.Error("unsorted set accepted")
	}
}
