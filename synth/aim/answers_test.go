package aim

import (
	"context"
	"math"
	"slices"
	"testing"

	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/internal/marginal"
	"github.com/dpsql/dpsql/synth/internal/synthtest"
)

func TestAnswerCompact(t *testing.T) {
	for _, tt := range []struct {
		name   string
		x, y   []float64
		sparse bool
	}{
		{"mostly zero", []float64{0, 0, 3, 0, 0, 0, 1, 0, 0}, []float64{0.5, 1, 2, 0, 0.25, 0, 4, 0, 1}, true},
		{"dense", []float64{1, 2, 0, 4}, []float64{0, 2, 1, 1}, false},
		{"all zero", []float64{0, 0, 0}, []float64{1, 0, 2}, true},
		{"negative model cells", []float64{0, 5, 0, 0}, []float64{-1, 4, 0.5, -2}, true},
		{"empty", nil, nil, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			a := compact(slices.Clone(tt.x))
			if got := a.dense == nil && a.cells > 0; got != tt.sparse {
				t.Errorf("sparse = %v, want %v", got, tt.sparse)
			}
			if got := a.expand(); !slices.Equal(got, tt.x) && len(tt.x) > 0 {
				t.Errorf("expand = %v, want %v", got, tt.x)
			}
			if got, want := a.l1(tt.y), marginal.L1(tt.x, tt.y); math.Abs(got-want) > 1e-12 {
				t.Errorf("l1 = %v, want %v", got, want)
			}
		})
	}
}

// remote hides a dataset's type, as a federated source would.
type remote struct {
	synth.Data
	calls int
}

func (r *remote) Marginals(ctx context.Context, sets [][]int) ([][]float64, error) {
	r.calls++
	return r.Data.Marginals(ctx, sets)
}

// TestCandidateAnswers: every candidate's answer is its true marginal,
// whether the workload is counted in batches (in-memory data, a batch
// limit smaller than one marginal) or in one call (a remote source), and
// with workload sets nested in others.
func TestCandidateAnswers(t *testing.T) {
	ctx := context.Background()
	data := synthtest.Chain(2, 500, []int{4, 3, 5, 2, 6})
	work := append(synthtest.AllK(5, 3), synth.Marginal{Attrs: []int{1, 3}, Weight: 2})
	w, err := synth.CanonicalWorkload(5, work)
	if err != nil {
		t.Fatal(err)
	}
	cands := closure(w)
	defer func(n int) { fetchCells = n }(fetchCells)
	for _, tt := range []struct {
		name  string
		data  synth.Data
		batch int
	}{
		{"in memory, one set per batch", data, 1},
		{"in memory, batches of 100 cells", data, 100},
		{"cache over memory", synth.NewCache(data), 100},
		{"remote", &remote{Data: data}, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fetchCells = tt.batch
			got, err := candidateAnswers(ctx, &synth.Input{Data: tt.data}, w, cands)
			if err != nil {
				t.Fatal(err)
			}
			for i, c := range cands {
				want := data.MarginalTo(nil, c.attrs)
				if x := got[i].expand(); !slices.Equal(x, want) {
					t.Fatalf("candidate %v: %v, want %v", c.attrs, x, want)
				}
			}
			if r, ok := tt.data.(*remote); ok && r.calls != 1 {
				t.Errorf("remote source asked %d times, want once", r.calls)
			}
		})
	}
}
