package audit

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"gonum.org/v1/gonum/mat"

	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/pgm"
)

// Scenario is a pair of neighbouring datasets: D and D' = D plus one target
// row, with the workload the mechanisms are given. The attacker knows all
// of it and tries to tell from a release which of the two was used.
type Scenario struct {
	D, DPrime *pgm.Dataset
	Row       []uint16 // the target row, one code per attribute
	Workload  []synth.Marginal

	all  []int // every attribute, ascending
	cell int   // the target row's index in the full joint marginal
}

// NewScenario returns the scenario of d and d plus row. The workload must be
// valid for d's domain.
func NewScenario(d *pgm.Dataset, row []uint16, workload []synth.Marginal) (*Scenario, error) {
	dom := d.Domain()
	if len(row) != dom.Len() {
		return nil, fmt.Errorf("audit: target row has %d values, domain %d attributes", len(row), dom.Len())
	}
	if _, err := synth.CanonicalWorkload(dom.Len(), workload); err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	cols := make([][]uint16, dom.Len())
	one := make([][]uint16, dom.Len())
	for a := range cols {
		cols[a] = append(slices.Clone(d.Column(a)), row[a])
		one[a] = []uint16{row[a]}
	}
	dp, err := pgm.NewDataset(dom, cols)
	if err != nil {
		return nil, fmt.Errorf("audit: target row: %w", err)
	}
	oneRow, err := pgm.NewDataset(dom, one)
	if err != nil {
		return nil, err
	}
	all := make([]int, dom.Len())
	for a := range all {
		all[a] = a
	}
	// The cell of the row is where a dataset of that row alone has its count,
	// whatever the order in which marginals are laid out.
	cell := slices.Index(oneRow.MarginalTo(nil, all), 1)
	return &Scenario{D: d, DPrime: dp, Row: slices.Clone(row), Workload: workload, all: all, cell: cell}, nil
}

// DefaultScenario is the audit's fixed, seeded scenario: 100 rows over three
// correlated attributes of sizes 2, 4 and 2 (c = a; b is a or a+1), the
// workload of all 2-way marginals, and a target row (a=0, b=3, c=1) alone
// in its cell of every marginal on b or on both a and c: value 3 of b never
// occurs in D and neither does c≠a. A row that rare is the one mechanisms
// that adapt to the data (MST's domain compression, the selections of AIM
// and MWEM) react to most.
func DefaultScenario() *Scenario {
	dom, err := pgm.NewDomain([]string{"a", "b", "c"}, []int{2, 4, 2})
	if err != nil {
		panic(err)
	}
	const n = 100
	// Not privacy noise: this only makes up the audited data.
	rng := rand.New(rand.NewPCG(2026, 8))
	cols := [][]uint16{make([]uint16, n), make([]uint16, n), make([]uint16, n)}
	for i := range n {
		a := rng.IntN(2)
		cols[0][i] = uint16(a)
		cols[1][i] = uint16(a + rng.IntN(2))
		cols[2][i] = uint16(a)
	}
	d, err := pgm.NewDataset(dom, cols)
	if err != nil {
		panic(err)
	}
	w := []synth.Marginal{{Attrs: []int{0, 1}, Weight: 1}, {Attrs: []int{0, 2}, Weight: 1}, {Attrs: []int{1, 2}, Weight: 1}}
	sc, err := NewScenario(d, []uint16{0, 3, 1}, w)
	if err != nil {
		panic(err)
	}
	return sc
}

// data returns D (i = 0) or D' (i = 1).
func (sc *Scenario) data(i int) *pgm.Dataset {
	if i == 0 {
		return sc.D
	}
	return sc.DPrime
}

// statistic is a test statistic of one release: a scalar the attacker
// computes from the release and what it knows (the scenario). NaN means the
// release has nothing to compute it from (no model, no rows).
type statistic struct {
	name  string
	value func(sc *Scenario, res *synth.Result) (float64, error)
}

// statistics are the test statistics every audit computes; it picks the
// most telling one on the first half of the runs. The first is the llr,
// which Repeat also tests for correlation.
var statistics = []statistic{
	{"llr", (*Scenario).llr},
	{"model-count", (*Scenario).modelCount},
	{"synthetic-count", (*Scenario).syntheticCount},
}

// llr is the log-likelihood ratio ln p(release | D')/p(release | D) of the
// released measurements, treating their noise as Gaussian with the stated
// σ: Σ over measurements and entries of Δ·(y − a_D − Δ/2)/σ², where a_D is
// the entry's exact answer on D and Δ = a_D' − a_D. It is the most powerful
// test between D and D' for a fixed set of Gaussian measurements (Neyman–
// Pearson), and the noisy count of the target cell, rescaled, when there is
// a single one.
func (sc *Scenario) llr(res *synth.Result) (float64, error) {
	var sum float64
	for i := range res.Measurements {
		m := &res.Measurements[i]
		aD, err := answer(m, sc.D)
		if err != nil {
			return 0, err
		}
		aP, err := answer(m, sc.DPrime)
		if err != nil {
			return 0, err
		}
		if len(aD) != len(m.Y) {
			return 0, fmt.Errorf("audit: measurement %d on %v has %d values, its query %d", i, m.Attrs, len(m.Y), len(aD))
		}
		s2 := m.Sigma * m.Sigma
		for j, y := range m.Y {
			if d := aP[j] - aD[j]; d != 0 {
				sum += d * (y - aD[j] - d/2) / s2
			}
		}
	}
	return sum, nil
}

// modelCount is the released model's count of the target row's cell.
func (sc *Scenario) modelCount(res *synth.Result) (float64, error) {
	if res.Model == nil {
		return math.NaN(), nil
	}
	return res.Model.Marginal(sc.all)[sc.cell], nil
}

// syntheticCount is the number of synthetic rows equal to the target row.
func (sc *Scenario) syntheticCount(res *synth.Result) (float64, error) {
	if res.Rows == nil {
		return math.NaN(), nil
	}
	if len(res.Rows) != len(sc.Row) {
		return 0, fmt.Errorf("audit: %d synthetic columns, want %d", len(res.Rows), len(sc.Row))
	}
	n := 0
	for i := range res.Rows[0] {
		match := true
		for a, col := range res.Rows {
			match = match && col[i] == sc.Row[a]
		}
		if match {
			n++
		}
	}
	return float64(n), nil
}

// values computes every statistic of res.
func (sc *Scenario) values(res *synth.Result) ([]float64, error) {
	out := make([]float64, len(statistics))
	for i, s := range statistics {
		v, err := s.value(sc, res)
		if err != nil {
			return nil, err
		}
		out[i] = v
	}
	return out, nil
}

// answer is the exact, noise-free value of measurement m on ds: Q·M with M
// the marginal over m.Attrs, on the coarse codes when m.Coarse is set.
func answer(m *synth.Measurement, ds *pgm.Dataset) ([]float64, error) {
	var x []float64
	if m.Coarse == nil {
		x = ds.MarginalTo(nil, m.Attrs)
	} else {
		if len(m.Coarse) != len(m.Attrs) {
			return nil, fmt.Errorf("audit: measurement on %v has %d coarse maps", m.Attrs, len(m.Coarse))
		}
		// The marginal of the coarsened columns alone, laid out as the
		// coarse marginal of those attributes in a dataset of all of them.
		names, sizes := make([]string, len(m.Attrs)), make([]int, len(m.Attrs))
		cols := make([][]uint16, len(m.Attrs))
		for j, a := range m.Attrs {
			code := m.Coarse[j]
			src := ds.Column(a)
			col := make([]uint16, len(src))
			for r, v := range src {
				if int(v) >= len(code) {
					return nil, fmt.Errorf("audit: coarse map of attribute %d has %d values", a, len(code))
				}
				col[r] = uint16(code[v])
			}
			names[j], sizes[j], cols[j] = fmt.Sprint(a), slices.Max(code)+1, col
		}
		dom, err := pgm.NewDomain(names, sizes)
		if err != nil {
			return nil, err
		}
		cds, err := pgm.NewDataset(dom, cols)
		if err != nil {
			return nil, err
		}
		idx := make([]int, len(m.Attrs))
		for j := range idx {
			idx[j] = j
		}
		x = cds.MarginalTo(nil, idx)
	}
	if m.Kron != nil {
		// A Kronecker query (HDMM's strategies) on the marginal.
		sizes := make([]int, len(m.Attrs))
		for j, a := range m.Attrs {
			sizes[j] = ds.Domain().Size(a)
		}
		if m.Coarse != nil || m.Query != nil || len(m.Kron) != len(m.Attrs) {
			return nil, fmt.Errorf("audit: measurement on %v: malformed Kronecker query", m.Attrs)
		}
		return pgm.KronMul(m.Kron, sizes, x, false), nil
	}
	if m.Query == nil {
		return x, nil
	}
	r, c := m.Query.Dims()
	if c != len(x) {
		return nil, fmt.Errorf("audit: measurement on %v: query has %d columns, marginal %d cells", m.Attrs, c, len(x))
	}
	y := mat.NewVecDense(r, nil)
	y.MulVec(m.Query, mat.NewVecDense(len(x), x))
	return y.RawVector().Data, nil
}
