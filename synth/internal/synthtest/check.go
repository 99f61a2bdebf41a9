package synthtest

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/pgm"
)

// CheckResult asserts the invariants every synth.Result must satisfy for
// in: budget within ρ, measurements and rounds well formed, snapshots only
// for last candidate rounds, and (for synthetic data) a model and rows in
// the domain.
func CheckResult(t *testing.T, out synth.Output, in *synth.Input, res *synth.Result) {
	t.Helper()
	if res == nil {
		t.Fatal("nil result")
	}
	if !(res.RhoUsed > 0) || res.RhoUsed > in.Rho*(1+1e-12) {
		t.Errorf("ρ used %v, want in (0, %v]", res.RhoUsed, in.Rho)
	}
	dom := in.Data.Domain()
	for i, m := range res.Measurements {
		if !(m.Sigma > 0) || math.IsInf(m.Sigma, 0) {
			t.Errorf("measurement %d: σ = %v", i, m.Sigma)
		}
		want := dom.Cells(m.Attrs)
		if m.Kron != nil {
			// A Kronecker query: one value per row of ⊗ Kron[j].
			want = 1
			for j, f := range m.Kron {
				if f == nil {
					want *= dom.Size(m.Attrs[j])
				} else {
					r, _ := f.Dims()
					want *= r
				}
			}
		}
		if m.Query == nil && m.Coarse == nil && len(m.Y) != want {
			t.Errorf("measurement %d over %v: %d values, want %d", i, m.Attrs, len(m.Y), want)
		}
		for _, y := range m.Y {
			if math.IsNaN(y) {
				t.Fatalf("measurement %d: NaN", i)
			}
		}
	}
	prev := 0.0
	for i, r := range res.Rounds {
		if r.Round <= 0 || (i > 0 && r.Round <= res.Rounds[i-1].Round) {
			t.Errorf("round %d numbered %d", i, r.Round)
		}
		if r.RhoUsed < prev || r.RhoUsed > in.Rho*(1+1e-12) {
			t.Errorf("round %d: cumulative ρ %v after %v (budget %v)", r.Round, r.RhoUsed, prev, in.Rho)
		}
		prev = r.RhoUsed
		if r.Candidates < 1 || len(r.Selected) == 0 || !(r.Epsilon > 0) || !(r.Sigma > 0) || !(r.Sensitivity > 0) {
			t.Errorf("round %d malformed: %+v", r.Round, r)
		}
	}
	lastRounds := map[int]bool{}
	for _, c := range res.LastCandidate {
		if c.Round < 0 || c.Round > len(res.Rounds)+1000000 {
			t.Errorf("candidate %v: last round %d", c.Attrs, c.Round)
		}
		lastRounds[c.Round] = true
	}
	for _, s := range res.Snapshots {
		if !lastRounds[s.Round] {
			t.Errorf("snapshot of round %d, which is nobody's last candidate round", s.Round)
		}
	}
	if out == synth.AnswersOnly {
		if res.Model != nil || res.Rows != nil {
			t.Error("answers-only mechanism returned a model or rows")
		}
		return
	}
	if res.Model == nil {
		t.Fatal("no model")
	}
	if res.Model.Domain().Len() != dom.Len() {
		t.Fatalf("model over %d attributes, data has %d", res.Model.Domain().Len(), dom.Len())
	}
	for a := range dom.Len() {
		if res.Model.Domain().Size(a) != dom.Size(a) {
			t.Fatalf("model attribute %d has size %d, data %d", a, res.Model.Domain().Size(a), dom.Size(a))
		}
	}
	if len(res.Rows) != dom.Len() {
		t.Fatalf("%d synthetic columns, want %d", len(res.Rows), dom.Len())
	}
	want := in.Rows
	if want == 0 {
		want = int(math.Round(res.Model.Total()))
	}
	for a, col := range res.Rows {
		if len(col) != want {
			t.Fatalf("column %d has %d rows, want %d", a, len(col), want)
		}
		for _, v := range col {
			if int(v) >= dom.Size(a) {
				t.Fatalf("column %d: code %d outside domain %d", a, v, dom.Size(a))
			}
		}
	}
}

// MustRun builds m with opts, runs it on in and fails t on either error.
func MustRun(t *testing.T, m synth.Mechanism, opts []synth.Option, in *synth.Input) *synth.Result {
	t.Helper()
	r, err := m.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Run(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// CheckCancel runs r with a context cancelled at its first progress report
// and asserts that it stops with context.Canceled, reports the budget it
// consumed (≤ ρ) and does not release a model or rows.
func CheckCancel(t *testing.T, r synth.Runner, in *synth.Input) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cin := *in
	reports := 0
	cin.Progress = func(synth.Status) {
		reports++
		cancel()
	}
	res, err := r.Run(ctx, &cin)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled run: err = %v, want context.Canceled", err)
	}
	if res == nil {
		t.Fatal("cancelled run returned no result (ρ used unknown)")
	}
	if res.RhoUsed > in.Rho*(1+1e-12) || res.Model != nil || res.Rows != nil {
		t.Errorf("cancelled run: ρ used %v (budget %v), model %v, rows %d", res.RhoUsed, in.Rho, res.Model != nil, len(res.Rows))
	}
	if reports == 0 {
		t.Error("no progress report before cancellation")
	}
}

// Error is the workload error of rows against data over sets (spec/aim.md):
// the mean of ‖M_r(D)/|D| − M_r(D̂)/|D̂|‖₁.
func Error(t *testing.T, data synth.Data, sets [][]int, rows [][]uint16) float64 {
	t.Helper()
	syn, err := pgm.NewDataset(data.Domain(), rows)
	if err != nil {
		t.Fatal(err)
	}
	truth, err := data.Marginals(context.Background(), sets)
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for k, s := range sets {
		x := truth[k]
		n := 0.0
		for _, v := range x {
			n += v
		}
		y := syn.MarginalTo(nil, s)
		var e float64
		for i := range x {
			e += math.Abs(x[i]/n - y[i]/float64(syn.Rows()))
		}
		sum += e
	}
	return sum / float64(len(sets))
}

// AllK returns every k-subset of d attributes as a weight-1 workload.
func AllK(d, k int) []synth.Marginal {
	var out []synth.Marginal
	for mask := 0; mask < 1<<d; mask++ {
		var s []int
		for a := range d {
			if mask&(1<<a) != 0 {
				s = append(s, a)
			}
		}
		if len(s) == k {
			out = append(out, synth.Marginal{Attrs: s, Weight: 1})
		}
	}
	return out
}
