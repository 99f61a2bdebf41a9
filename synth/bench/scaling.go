package bench

import (
	"context"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/dpsql/dpsql/internal/cputime"
	"github.com/dpsql/dpsql/synth/pgm"
)

// ScaleRow is one point of the scalability experiment.
type ScaleRow struct {
	Attrs       int
	Iters       int
	OracleCalls int
	Setup       time.Duration // wall time of one estimation iteration plus setup
	PerIter     time.Duration // wall time per estimation iteration
	CPUPerIter  time.Duration // process CPU time per iteration (robust to a loaded machine)
	ModelMB     float64       // the junction tree's potentials
	HeapMB      float64       // Go heap in use after estimation, before freeing
	PeakMB      float64       // the process's peak resident set so far
}

// Scaling is seed 001's Figure 2b for Private-PGM: d attributes of domain
// 10, one identity measurement on every adjacent triple (i, i+1, i+2),
// estimated for iters iterations of the accelerated proximal algorithm
// (Algorithm 2, one belief propagation per iteration); it reports the time
// per iteration and the memory for each d. The measurements are noisy
// marginals of a random chain (their values do not change the cost).
func Scaling(ctx context.Context, ds []int, iters int, w io.Writer) ([]ScaleRow, error) {
	var rows []ScaleRow
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "attributes\titerations\twall ms/iteration\tCPU ms/iteration\tsetup s\tmodel MB\theap MB\tpeak RSS MB\t\n")
	for _, d := range ds {
		if d < 3 {
			return rows, fmt.Errorf("scaling: %d attributes, want ≥ 3", d)
		}
		names := make([]string, d)
		sizes := make([]int, d)
		for i := range d {
			names[i], sizes[i] = fmt.Sprintf("a%d", i), 10
		}
		dom, err := pgm.NewDomain(names, sizes)
		if err != nil {
			return rows, err
		}
		r := rand.New(rand.NewPCG(uint64(d), 1))
		var meas []pgm.Measurement
		for i := 0; i+2 < d; i++ {
			y := make([]float64, 1000)
			for k := range y {
				y[k] = 10 + 3*r.NormFloat64()
			}
			meas = append(meas, pgm.Measurement{Attrs: []int{i, i + 1, i + 2}, Y: y, Sigma: 3})
		}
		// Time one iteration and 1+iters iterations: the difference is
		// the iterations alone, without building the junction tree and
		// the objective (setup grows faster than linearly in d).
		var st pgm.EstimateStats
		var heap float64
		start, cpu0 := time.Now(), cputime.Process()
		if _, err := pgm.Estimate(ctx, dom, meas, &pgm.EstimateOptions{Iters: 1, Method: pgm.Accelerated}); err != nil {
			return rows, err
		}
		setup, setupCPU := time.Since(start), cputime.Process()-cpu0
		start, cpu0 = time.Now(), cputime.Process()
		model, err := pgm.Estimate(ctx, dom, meas, &pgm.EstimateOptions{Iters: iters + 1, Method: pgm.Accelerated, Stats: &st})
		el, cpu := time.Since(start)-setup, cputime.Process()-cpu0-setupCPU
		if err != nil {
			return rows, err
		}
		st.Iters--
		el, cpu = max(el, 0), max(cpu, 0)
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		heap = float64(ms.HeapInuse) / (1 << 20)
		row := ScaleRow{Attrs: d, Iters: st.Iters, OracleCalls: st.OracleCalls, PerIter: el / time.Duration(max(st.Iters, 1)),
			CPUPerIter: cpu / time.Duration(max(st.Iters, 1)), Setup: setup,
			ModelMB: model.Size(), HeapMB: heap, PeakMB: peakMB()}
		rows = append(rows, row)
		fmt.Fprintf(tw, "%d\t%d\t%.3f\t%.3f\t%.2f\t%.3f\t%.1f\t%.0f\t\n", d, row.Iters, float64(row.PerIter)/1e6, float64(row.CPUPerIter)/1e6, row.Setup.Seconds(), row.ModelMB, row.HeapMB, row.PeakMB)
		runtime.GC()
	}
	return rows, tw.Flush()
}

// ScalingSVG draws the rows as a log-log plot: time per iteration (ms) and
// model and peak memory (MB) against the number of attributes.
func ScalingSVG(rows []ScaleRow) string {
	const W, H, L, R, T, B = 640.0, 400.0, 70.0, 20.0, 30.0, 50.0
	lo, hi := math.Inf(1), math.Inf(-1)
	xlo, xhi := math.Inf(1), math.Inf(-1)
	series := []struct {
		name, color string
		val         func(ScaleRow) float64
	}{
		{"CPU ms per iteration", "#1f77b4", func(r ScaleRow) float64 { return float64(r.CPUPerIter) / 1e6 }},
		{"model MB", "#d62728", func(r ScaleRow) float64 { return r.ModelMB }},
	}
	for _, r := range rows {
		xlo, xhi = min(xlo, float64(r.Attrs)), max(xhi, float64(r.Attrs))
		for _, s := range series {
			if v := s.val(r); v > 0 {
				lo, hi = min(lo, v), max(hi, v)
			}
		}
	}
	lx0, lx1 := math.Floor(math.Log10(xlo)), math.Ceil(math.Log10(xhi))
	ly0, ly1 := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	if lx1 == lx0 {
		lx1++
	}
	if ly1 == ly0 {
		ly1++
	}
	px := func(x float64) float64 { return L + (math.Log10(x)-lx0)/(lx1-lx0)*(W-L-R) }
	py := func(y float64) float64 { return H - B - (math.Log10(y)-ly0)/(ly1-ly0)*(H-T-B) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%g" height="%g" font-family="sans-serif" font-size="12">`+"\n", W, H)
	fmt.Fprintf(&b, `<rect width="%g" height="%g" fill="white"/>`+"\n", W, H)
	for e := lx0; e <= lx1; e++ {
		x := px(math.Pow(10, e))
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%g" x2="%.1f" y2="%g" stroke="#ddd"/><text x="%.1f" y="%g" text-anchor="middle">%g</text>`+"\n", x, T, x, H-B, x, H-B+16, math.Pow(10, e))
	}
	for e := ly0; e <= ly1; e++ {
		y := py(math.Pow(10, e))
		fmt.Fprintf(&b, `<line x1="%g" y1="%.1f" x2="%g" y2="%.1f" stroke="#ddd"/><text x="%g" y="%.1f" text-anchor="end">%g</text>`+"\n", L, y, W-R, y, L-6, y+4, math.Pow(10, e))
	}
	fmt.Fprintf(&b, `<text x="%g" y="%g" text-anchor="middle">attributes (domain 10 each, measurements on adjacent triples)</text>`+"\n", (L+W-R)/2, H-12)
	fmt.Fprintf(&b, `<text x="%g" y="%g" text-anchor="middle">Private-PGM scalability (seed 001, Fig. 2b), log-log</text>`+"\n", (L+W-R)/2, T-12)
	for k, s := range series {
		var pts []string
		for _, r := range rows {
			if v := s.val(r); v > 0 {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(float64(r.Attrs)), py(v)))
			}
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", s.color, strings.Join(pts, " "))
		for _, p := range pts {
			xy := strings.Split(p, ",")
			fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="3" fill="%s"/>`+"\n", xy[0], xy[1], s.color)
		}
		fmt.Fprintf(&b, `<line x1="%g" y1="%g" x2="%g" y2="%g" stroke="%s" stroke-width="2"/><text x="%g" y="%g">%s</text>`+"\n",
			L+10, T+12+16*float64(k), L+30, T+12+16*float64(k), s.color, L+35, T+16+16*float64(k), s.name)
	}
	b.WriteString("</svg>\n")
	return b.String()
}
