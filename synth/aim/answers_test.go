package aim

import (
	"context"
	"slices"
	"testing"

	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/internal/synthtest"
)

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
	viaCache := &remote{Data: data}
	for _, tt := range []struct {
		name   string
		data   synth.Data
		batch  int
		remote *remote // asked exactly once
	}{
		{"in memory, one set per batch", data, 1, nil},
		{"in memory, batches of 100 cells", data, 100, nil},
		{"cache over memory", synth.NewCache(data), 100, nil},
		{"remote", &remote{Data: data}, 1, nil},
		{"cache over a remote source", synth.NewCache(viaCache), 1, viaCache},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fetchCells = tt.batch
			got, err := candidateAnswers(ctx, &synth.Input{Data: tt.data}, w, cands)
			if err != nil {
				t.Fatal(err)
			}
			for i, c := range cands {
				want := data.MarginalTo(nil, c.attrs)
				if x := got[i].Expand(nil); !slices.Equal(x, want) {
					t.Fatalf("candidate %v: %v, want %v", c.attrs, x, want)
				}
			}
			r, ok := tt.data.(*remote)
			if !ok {
				r = tt.remote
			}
			if r != nil && r.calls != 1 {
				t.Errorf("remote source asked %d times, want once", r.calls)
			}
		})
	}
}
