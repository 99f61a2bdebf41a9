// Package mst implements MST (McKenna, Miklau, Sheldon, "Winning the NIST
// Contest", JPC 2021): a workload-agnostic mechanism that measures all 1-way
// marginals, privately selects a maximum spanning tree of attribute pairs
// and measures the tree's 2-way marginals, then fits Private-PGM.
//
// The budget is split in three equal parts (spec/mst-independent-gaussian.md):
//
//   - 1-way marginals, per-cell noise σ·sqrt(d) with σ = sqrt(3/(2ρ))
//     (the d marginals stacked have L2 sensitivity sqrt(d)): ρ/3;
//   - d−1 exponential-mechanism edge choices in Kruskal's algorithm, each
//     with ε = sqrt(8·(ρ/3)/(d−1)) and score ‖M_ab(D) − M_ab(p̂)‖₁
//     (sensitivity 1): ρ/3;
//   - the d−1 tree marginals, per-cell noise σ·sqrt(d−1): ρ/3.
//
// After the 1-way measurements each attribute's domain is compressed: values
// whose noisy count is below 3 noise scales are merged into one "other"
// value (post-processing). Selection, the 2-way measurements and estimation
// run on the compressed domain; synthetic "other" values are replaced by a
// uniformly random merged value. The returned model is lifted back to the
// full domain by fitting it to the compressed model's marginals spread
// uniformly over merged values (post-processing again).
//
// With a single attribute the whole budget measures its 1-way marginal.
//
// # Options
//
//	PGM_ITERS  int, default DefaultPGMIters: iterations of the final
//	           estimation (the reference implementation uses 5000).
package mst

import (
	"context"
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/pgm"
)

// DefaultPGMIters is the default number of final estimation iterations.
const DefaultPGMIters = 1000

// selectIters is the number of iterations of the 1-way model used for
// selection (as in the reference implementation).
const selectIters = 1000

// liftIters bounds the iterations of the lift to the full domain: it fits
// exactly consistent tree marginals, which converges quickly.
const liftIters = 500

// Options configures MST; zero fields mean defaults.
type Options struct {
	PGMIters int
}

var schema = synth.Schema{
	{Name: "PGM_ITERS", Kind: synth.Int, Default: "1000", Min: 1, Max: 1e6,
		Doc: "iterations of the final estimation"},
}

// Mechanism is MST as a synth.Mechanism.
type Mechanism struct{}

var _ synth.Mechanism = Mechanism{}

// Name returns "mst".
func (Mechanism) Name() string { return "mst" }

// Summary describes MST in one line.
func (Mechanism) Summary() string {
	return "MST: 1-way marginals plus a privately selected maximum spanning tree of 2-way marginals, fitted with Private-PGM"
}

// Output is SyntheticData.
func (Mechanism) Output() synth.Output { return synth.SyntheticData }

// Schema declares the options.
func (Mechanism) Schema() synth.Schema { return schema }

// New parses opts.
func (Mechanism) New(opts []synth.Option) (synth.Runner, error) {
	v, err := schema.Parse("mst", opts)
	if err != nil {
		return nil, err
	}
	return &Options{PGMIters: v.Int("PGM_ITERS", 0)}, nil
}

// Run runs MST on in; the workload is ignored.
func (o *Options) Run(ctx context.Context, in *synth.Input) (*synth.Result, error) {
	if _, err := in.Check(false); err != nil {
		return nil, fmt.Errorf("mst: %w", err)
	}
	dom := in.Data.Domain()
	d := dom.Len()
	// The budget split: 1-way marginals at σ1 (ρ/3, all of ρ when d = 1),
	// a spanning tree selected at ε per edge (ρ/3) and measured at σ2
	// (ρ/3).
	sigma := math.Sqrt(3 / (2 * in.Rho))
	sigma1 := sigma * math.Sqrt(float64(d))
	sigma2 := sigma * math.Sqrt(float64(d-1))
	if d == 1 {
		sigma1 = math.Sqrt(1 / (2 * in.Rho))
	} else if err := synth.CheckNoise([]float64{sigma1, sigma2}, []float64{treeEpsilon(in.Rho/3, d)}); err != nil {
		return nil, fmt.Errorf("mst: %w", err)
	}
	if err := synth.CheckNoise([]float64{sigma1}, nil); err != nil {
		return nil, fmt.Errorf("mst: %w", err)
	}
	if err := ctx.Err(); err != nil {
		return &synth.Result{}, fmt.Errorf("mst: %w", err)
	}
	iters := o.PGMIters
	if iters <= 0 {
		iters = DefaultPGMIters
	}
	res := &synth.Result{}
	fail := func(err error) (*synth.Result, error) {
		res.Model, res.Rows = nil, nil
		return res, fmt.Errorf("mst: %w", err)
	}

	// 1. 1-way measurements.
	sets := make([][]int, d)
	for a := range sets {
		sets[a] = []int{a}
	}
	oneWay, err := in.Data.Marginals(ctx, sets)
	if err != nil {
		return &synth.Result{}, fmt.Errorf("mst: true marginals: %w", err)
	}
	for _, y := range oneWay {
		in.Noise.AddDiscreteGaussian(y, sigma1)
	}
	res.RhoUsed = float64(d) / (2 * sigma1 * sigma1)
	in.Report(synth.Status{Phase: "init", RhoUsed: res.RhoUsed})

	// 2. Compress domains (post-processing of the noisy 1-way counts).
	comp, err := compress(dom, oneWay, 3*sigma1)
	if err != nil {
		return fail(err)
	}
	cdata := comp.data(in.Data)
	var meas []pgm.Measurement
	for a := range d {
		m := comp.oneWay(a, oneWay[a], sigma1)
		meas = append(meas, m)
		res.Measurements = append(res.Measurements, synth.Measurement{Measurement: m, Coarse: comp.coarse([]int{a})})
	}

	if d > 1 {
		// 3. Select a spanning tree, ρ/3.
		model, err := pgm.Estimate(ctx, comp.dom, meas, &pgm.EstimateOptions{Iters: selectIters})
		if err != nil {
			return fail(fmt.Errorf("selection model: %w", err))
		}
		tree, rhoSel, err := selectTree(ctx, cdata, model, in.Rho/3, in.Noise.Exponential)
		if err != nil {
			return fail(err)
		}
		res.RhoUsed += rhoSel
		epsSel := math.Sqrt(8 * rhoSel / float64(len(tree)))
		// 4. Measure the tree's 2-way marginals, ρ/3.
		ans, err := cdata.Marginals(ctx, tree)
		if err != nil {
			return fail(err)
		}
		for i, e := range tree {
			in.Noise.AddDiscreteGaussian(ans[i], sigma2)
			m := pgm.Measurement{Attrs: e, Y: ans[i], Sigma: sigma2}
			meas = append(meas, m)
			res.Measurements = append(res.Measurements, synth.Measurement{
				Measurement: m, Epsilon: epsSel, Coarse: comp.coarse(e),
			})
		}
		res.RhoUsed += float64(len(tree)) / (2 * sigma2 * sigma2)
		in.Report(synth.Status{Phase: "round", Round: 1, RhoUsed: res.RhoUsed})
	}

	// 5. Estimate, sample, undo the compression.
	model, err := pgm.Estimate(ctx, comp.dom, meas, &pgm.EstimateOptions{Iters: iters, Progress: in.FinalProgress(1, res.RhoUsed)})
	if err != nil {
		return fail(fmt.Errorf("estimate: %w", err))
	}
	in.Report(synth.Status{Phase: "final", Round: 1, RhoUsed: res.RhoUsed, ModelSize: model.Size()})
	rows, err := synth.Sample(ctx, model, in)
	if err != nil {
		return fail(err)
	}
	comp.expand(rows, in.Post().IntN)
	res.Rows = rows
	if res.Model, err = comp.lift(ctx, dom, model, meas, min(iters, liftIters)); err != nil {
		return fail(fmt.Errorf("lift model: %w", err))
	}
	in.Report(synth.Status{Phase: "sample", Round: 1, RhoUsed: res.RhoUsed, ModelSize: res.Model.Size()})
	return res, nil
}

// selectTree builds a spanning tree over the compressed attributes with
// Kruskal's algorithm, choosing each edge with the exponential mechanism
// (ε = sqrt(8·rho/(d−1)), sensitivity 1) among the pairs that join two
// components, scored by ‖M_ab(D) − M_ab(p̂)‖₁. It returns the edges and the
// ρ spent.
func selectTree(ctx context.Context, data synth.Data, model *pgm.Model, rho float64,
	exp func(scores []float64, eps, sens float64) int) ([][]int, float64, error) {
	d := data.Domain().Len()
	var pairs [][]int
	for a := range d {
		for b := a + 1; b < d; b++ {
			pairs = append(pairs, []int{a, b})
		}
	}
	truth, err := data.Marginals(ctx, pairs)
	if err != nil {
		return nil, 0, err
	}
	score := make([]float64, len(pairs))
	for i, p := range pairs {
		est := model.Marginal(p)
		for j, x := range truth[i] {
			score[i] += math.Abs(x - est[j])
		}
	}
	eps := treeEpsilon(rho, d)
	uf := newUnionFind(d)
	var tree [][]int
	var idx []int
	var sc []float64
	for range d - 1 {
		idx, sc = idx[:0], sc[:0]
		for i, p := range pairs {
			if uf.find(p[0]) != uf.find(p[1]) {
				idx = append(idx, i)
				sc = append(sc, score[i])
			}
		}
		e := pairs[idx[exp(sc, eps, 1)]]
		uf.union(e[0], e[1])
		tree = append(tree, e)
	}
	return tree, float64(d-1) * eps * eps / 8, nil
}

type unionFind []int

func newUnionFind(n int) unionFind {
	u := make(unionFind, n)
	for i := range u {
		u[i] = i
	}
	return u
}

func (u unionFind) find(x int) int {
	for u[x] != x {
		u[x] = u[u[x]]
		x = u[x]
	}
	return x
}

func (u unionFind) union(x, y int) { u[u.find(x)] = u.find(y) }

// compression maps each attribute's values to compressed codes.
type compression struct {
	full *pgm.Domain
	dom  *pgm.Domain // compressed domain
	code [][]int     // code[a][v]: compressed code of value v
	// merged[a] are the original values merged into a's "other" code (the
	// last code), empty if nothing was merged.
	merged [][]int
}

// compress keeps, per attribute, the values whose noisy count is at least
// threshold and merges the rest into one last code.
func compress(dom *pgm.Domain, noisy [][]float64, threshold float64) (*compression, error) {
	d := dom.Len()
	c := &compression{full: dom, code: make([][]int, d), merged: make([][]int, d)}
	names, sizes := make([]string, d), make([]int, d)
	for a := range d {
		names[a] = dom.Name(a)
		code := make([]int, dom.Size(a))
		kept := 0
		for v, y := range noisy[a] {
			if y >= threshold {
				code[v] = kept
				kept++
			} else {
				c.merged[a] = append(c.merged[a], v)
			}
		}
		for _, v := range c.merged[a] {
			code[v] = kept
		}
		c.code[a] = code
		sizes[a] = kept
		if len(c.merged[a]) > 0 {
			sizes[a]++
		}
	}
	cd, err := pgm.NewDomain(names, sizes)
	if err != nil {
		return nil, fmt.Errorf("compressed domain: %w", err)
	}
	c.dom = cd
	return c, nil
}

// data is the sensitive data seen on the compressed domain: a marginal
// over compressed codes is the full-domain marginal with merged cells
// summed, so it is computed from the source's own marginals.
func (c *compression) data(src synth.Data) synth.Data {
	return &compressed{c: c, src: src}
}

// compressed is a synth.Data over a compression's coarse domain.
type compressed struct {
	c   *compression
	src synth.Data
}

func (d *compressed) Domain() *pgm.Domain { return d.c.dom }

func (d *compressed) Marginals(ctx context.Context, sets [][]int) ([][]float64, error) {
	full, err := d.src.Marginals(ctx, sets)
	if err != nil {
		return nil, err
	}
	out := make([][]float64, len(sets))
	for i, s := range sets {
		out[i] = d.c.coarsen(s, full[i])
	}
	return out, nil
}

// coarsen maps marginal x over attrs on the full domain to the compressed
// domain, summing merged cells.
func (c *compression) coarsen(attrs []int, x []float64) []float64 {
	out := make([]float64, c.dom.Cells(attrs))
	idx := make([]int, len(attrs))
	for _, v := range x {
		dst := 0
		for j, a := range attrs {
			dst = dst*c.dom.Size(a) + c.code[a][idx[j]]
		}
		out[dst] += v
		for j := len(attrs) - 1; j >= 0; j-- {
			idx[j]++
			if idx[j] < c.full.Size(attrs[j]) {
				break
			}
			idx[j] = 0
		}
	}
	return out
}

// oneWay re-expresses attribute a's noisy 1-way marginal y (noise sigma)
// on the compressed domain: kept cells as they are, and the merged cells'
// sum divided by sqrt(k), with Query entry 1/sqrt(k), so that every entry
// keeps noise sigma.
func (c *compression) oneWay(a int, y []float64, sigma float64) pgm.Measurement {
	m := pgm.Measurement{Attrs: []int{a}, Sigma: sigma}
	k := len(c.merged[a])
	if k == 0 {
		m.Y = y
		return m
	}
	n := c.dom.Size(a)
	y2 := make([]float64, n)
	for v, x := range y {
		y2[c.code[a][v]] += x
	}
	s := 1 / math.Sqrt(float64(k))
	y2[n-1] *= s
	q := mat.NewDense(n, n, nil)
	for i := range n - 1 {
		q.Set(i, i, 1)
	}
	q.Set(n-1, n-1, s)
	m.Y, m.Query = y2, q
	return m
}

// coarse returns the Coarse maps for attrs, nil if none is compressed.
func (c *compression) coarse(attrs []int) [][]int {
	any := false
	for _, a := range attrs {
		any = any || len(c.merged[a]) > 0
	}
	if !any {
		return nil
	}
	out := make([][]int, len(attrs))
	for j, a := range attrs {
		out[j] = c.code[a]
	}
	return out
}

// expand maps compressed synthetic codes back to original values in place;
// an "other" code becomes a uniformly random merged value (intn is
// post-processing randomness).
func (c *compression) expand(cols [][]uint16, intn func(int) int) {
	for a, col := range cols {
		if len(c.merged[a]) == 0 {
			continue
		}
		orig := make([]uint16, c.dom.Size(a))
		for v, code := range c.code[a] {
			orig[code] = uint16(v) // the "other" entry is never read
		}
		other := uint16(c.dom.Size(a) - 1)
		merged := c.merged[a]
		for i, x := range col {
			if x == other {
				col[i] = uint16(merged[intn(len(merged))])
			} else {
				col[i] = orig[x]
			}
		}
	}
}

// lift fits a model on the full domain to the compressed model's marginals
// over the measured sets, spread uniformly over merged values.
func (c *compression) lift(ctx context.Context, full *pgm.Domain, m *pgm.Model, meas []pgm.Measurement, iters int) (*pgm.Model, error) {
	compressed := false
	for _, mg := range c.merged {
		compressed = compressed || len(mg) > 0
	}
	if !compressed {
		return m, nil
	}
	var lifted []pgm.Measurement
	seen := map[string]bool{}
	for _, ms := range meas {
		k := synth.Key(ms.Attrs)
		if seen[k] {
			continue
		}
		seen[k] = true
		lifted = append(lifted, pgm.Measurement{Attrs: ms.Attrs, Y: c.spread(full, ms.Attrs, m.Marginal(ms.Attrs)), Sigma: 1})
	}
	return pgm.Estimate(ctx, full, lifted, &pgm.EstimateOptions{Iters: iters, Total: m.Total()})
}

// spread expands a compressed marginal over attrs to the full domain,
// dividing each merged cell's mass equally among its values.
func (c *compression) spread(full *pgm.Domain, attrs []int, x []float64) []float64 {
	out := make([]float64, full.Cells(attrs))
	vals := make([]int, len(attrs))
	for cell := range out {
		rem := cell
		for j := len(attrs) - 1; j >= 0; j-- {
			vals[j] = rem % full.Size(attrs[j])
			rem /= full.Size(attrs[j])
		}
		off, share := 0, 1.0
		for j, a := range attrs {
			code := c.code[a][vals[j]]
			off = off*c.dom.Size(a) + code
			if len(c.merged[a]) > 0 && code == c.dom.Size(a)-1 {
				share /= float64(len(c.merged[a]))
			}
		}
		out[cell] = x[off] * share
	}
	return out
}

// treeEpsilon is the ε of each of the d−1 edge selections that spend rho.
func treeEpsilon(rho float64, d int) float64 { return math.Sqrt(8 * rho / float64(d-1)) }
