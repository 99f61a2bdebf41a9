package planner

import (
	"math"
	"slices"
	"testing"
)

// TestMeasured: a noisy marginal answers sub-marginal count queries by
// summing its cells, WHERE by weighting them, and the least noisy
// containing marginal is chosen.
func TestMeasured(t *testing.T) {
	dom := synRef.Domain // sex (2), race (4: a, b, c, NULL), age (10), …
	sizes := dom.Sizes()
	// sex × race with cell i holding i-3 (some negative).
	y := make([]float64, 8)
	for i := range y {
		y[i] = float64(i - 3)
	}
	ms := []Measured{
		{Attrs: []int{0, 2}, Y: make([]float64, 20), Sigma: 1.5}, // 45 > 2² · 8
		{Attrs: []int{0, 1}, Y: y, Sigma: 2},
		{Attrs: []int{0, 1}, Y: y, Sigma: 3},
	}
	for _, c := range []struct {
		attrs []int
		want  int
	}{{[]int{0}, 1}, {[]int{1}, 1}, {[]int{1, 0}, 1}, {[]int{2}, 0}, {nil, 1}, {[]int{1, 2}, -1}} {
		if got := ChooseMeasured(ms, sizes, c.attrs); got != c.want {
			t.Errorf("ChooseMeasured(%v) = %d, want %d", c.attrs, got, c.want)
		}
	}
	if _, err := NewMeasuredSource(Measured{Attrs: []int{0, 1}, Y: y[:7]}, sizes); err == nil {
		t.Error("a marginal of the wrong size accepted")
	}
	src, err := NewMeasuredSource(ms[1], sizes)
	if err != nil {
		t.Fatal(err)
	}
	if src.Total() != 4 {
		t.Errorf("total %v", src.Total())
	}
	if got := src.Marginal([]int{1}); !slices.Equal(got, []float64{-2, 0, 2, 4}) {
		t.Errorf("race marginal %v", got)
	}
	if got := src.MarginalWhere([]int{0}, map[int][]float64{1: {1, 0, 0, 1}}); !slices.Equal(got, []float64{-3, 5}) {
		t.Errorf("sex where race in (a, NULL): %v", got)
	}

	// Executed with NonNegative: negative groups are clipped to 0 and
	// left out; the total is the marginal's noisy total.
	mq, reason, ok := RouteSQL("SELECT race, COUNT(*), COUNT(*) / (SELECT COUNT(*) FROM t) FROM t WHERE sex = 'M' GROUP BY race", synRef)
	if !ok {
		t.Fatal(reason)
	}
	_, rows, err := mq.Execute(src, &ExecOptions{NonNegative: true})
	if err != nil {
		t.Fatal(err)
	}
	// sex = M: cells 4..7 hold 1, 2, 3, 4 for a, b, c, NULL.
	if len(rows) != 4 || rows[0][0] != "a" || rows[0][1] != int64(1) || rows[3][1] != int64(4) {
		t.Errorf("rows %v", rows)
	}
	_, rows, _ = mq.Execute(src, &ExecOptions{NonNegative: true, Unrounded: true})
	if r := rows[0][2].(float64); math.Abs(r-0.25) > 1e-12 {
		t.Errorf("ratio %v, want 1/4", r)
	}
	mq, _, _ = RouteSQL("SELECT race, COUNT(*) FROM t WHERE sex = 'F' GROUP BY race", synRef)
	if _, rows, _ = mq.Execute(src, &ExecOptions{NonNegative: true}); len(rows) != 0 {
		t.Errorf("sex = F (cells -3..0): %v, want no groups", rows)
	}
	if ex := mq.ExplainMeasured(2, ms[1]); ex != "released marginal 2 (sex, race) of db.t: noisy counts by (race) where sex = 'F' (as evidence); negative counts clipped at 0" {
		t.Errorf("explain %q", ex)
	}
	mq, _, _ = RouteSQL("SELECT COUNT(*) FROM t", synRef)
	if ex := mq.ExplainMeasured(1, ms[1]); ex != "released marginal 1 (sex, race) of db.t: noisy total count; summed over sex, race; negative counts clipped at 0" {
		t.Errorf("explain %q", ex)
	}
}
