package bench

import (
	"context"
	"io"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/internal/widegen"
	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/internal/synthtest"
)

// PGMError is 0 on the truth, the total variation distance for plain
// marginals, and weighs prefix ranges as seed 001 does.
func TestPGMError(t *testing.T) {
	data := synthtest.Chain(1, 500, []int{3, 5, 2})
	dom := data.Domain()
	work := PrefixWorkload(dom, []bool{false, true, false}, 3, 2, 7)
	if len(work) != 3 {
		t.Fatalf("%d subsets of 3 attributes, want all 3 pairs", len(work))
	}
	truth := func(_ int, a []int) []float64 { return data.MarginalTo(nil, a) }
	if e := PGMError(data, work, truth); e != 0 {
		t.Errorf("error of the truth %v", e)
	}
	uniform := func(_ int, a []int) []float64 {
		x := make([]float64, dom.Cells(a))
		for i := range x {
			x[i] = 1
		}
		return x
	}
	// For the pair without a numeric attribute, the error is the total
	// variation distance to uniform.
	plain := []synth.Marginal{{Attrs: []int{0, 2}, Weight: 1}}
	mu := normalised(data.MarginalTo(nil, []int{0, 2}))
	var tv float64
	for _, v := range mu {
		tv += math.Abs(v-1.0/6) / 2
	}
	if e := PGMError(data, plain, uniform); math.Abs(e-tv) > 1e-12 {
		t.Errorf("plain marginal error %v, want TV %v", e, tv)
	}
	for _, m := range work {
		if (m.Kron != nil) != (m.Attrs[0] == 1 || m.Attrs[1] == 1) {
			t.Errorf("entry %v: Kron %v, want prefix factors exactly on the numeric attribute", m.Attrs, m.Kron)
		}
	}
}

// A tiny end-to-end run of the experiment on a generated wide table.
func TestDropInSmoke(t *testing.T) {
	tab, err := widegen.Generate(widegen.Config{Attrs: 15, Rows: 2000, Bins: 8, Seed: 4})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	csv, dom := filepath.Join(dir, "w.csv"), filepath.Join(dir, "w.json")
	if err := tab.WriteFiles(csv, dom); err != nil {
		t.Fatal(err)
	}
	var numeric []string
	for a, n := range tab.Numeric {
		if n {
			numeric = append(numeric, tab.Data.Domain().Name(a))
		}
	}
	opts, err := ParseOptions("privbayes_pgm:ITERS=100;hdmm_pgm:ITERS=100")
	if err != nil {
		t.Fatal(err)
	}
	res, err := DropIn(context.Background(), DropInConfig{CSV: csv, Domain: dom, Numeric: numeric, Subsets: 4,
		Epsilon: 1, Runs: 1, Mechanisms: []string{"privbayes", "privbayes_pgm", "hdmm_lls", "hdmm_pgm", "dualquery_missing"},
		Options: opts}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res[:4] {
		if len(r.Errors) != 1 || !(r.Errors[0] >= 0 && r.Errors[0] < 1) {
			t.Errorf("%s: errors %v (%s)", r.Mechanism, r.Errors, r.Failed)
		}
	}
	if res[4].Failed == "" {
		t.Error("an unregistered mechanism did not fail")
	}
}

func TestScalingSmoke(t *testing.T) {
	rows, err := Scaling(context.Background(), []int{3, 6}, 3, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[1].ModelMB <= rows[0].ModelMB || rows[0].Iters != 3 {
		t.Errorf("rows %+v", rows)
	}
	svg := ScalingSVG(rows)
	if !strings.HasPrefix(svg, "<svg") || strings.Count(svg, "<polyline") != 2 {
		t.Errorf("svg %.200s", svg)
	}
}
