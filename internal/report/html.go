package report

import (
	"fmt"
	"html"
	"html/template"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
)

// Colours of the three sources, in the plots and their legends.
const (
	colorReal  = "#3a3a3a"
	colorModel = "#1f77b4"
	colorSynth = "#ff7f0e"
	colorBound = "#b9d3ea"
)

// WriteHTML writes the report as one self-contained HTML page.
func (r *Report) WriteHTML(w io.Writer) error {
	return page.Execute(w, r)
}

var page = template.Must(template.New("report").Funcs(template.FuncMap{
	"num":      num,
	"barplot":  barPlot,
	"boundsvg": boundPlot,
	"plots1":   func(r *Report) []*Marginal { return largest(r.OneWay, 1, max1WayPlots) },
	"plots2":   func(r *Report) []*Marginal { return largest(r.Marginals, 2, max2WayPlots) },
	"within": func(m *Marginal, owner bool) string {
		if !owner || math.IsNaN(m.Bound) || math.IsNaN(m.ErrModel) {
			return ""
		}
		if m.ErrModel <= m.Bound {
			return "yes"
		}
		return "NO"
	},
	"legend": legend,
}).Parse(`<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>dpsql quality report: {{.Table}}</title>
<style>
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px auto;max-width:1100px;color:#222;padding:0 12px}
h1{font-size:1.5em;margin-bottom:0}h2{font-size:1.2em;margin-top:2em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;font-size:.9em}td,th{border:1px solid #ddd;padding:3px 8px;text-align:right}
th{background:#f4f4f4}td.l,th.l{text-align:left}.basis{background:#fff6d6;border:1px solid #e8d38b;padding:8px 12px}
.no{color:#b00;font-weight:bold}.plot{display:inline-block;margin:6px 12px 18px 0;vertical-align:top}
.muted{color:#777}code{background:#f4f4f4;padding:1px 4px}
</style></head><body>
<h1>Quality report: <code>{{.Table}}</code></h1>
<p class="muted">dpsql · generated {{.Generated.Format "2006-01-02 15:04:05 UTC"}} for {{.User}}</p>
{{if .Owner}}<p class="basis" id="basis">Compared with the real table <code>{{.Source}}</code>, which this user may read: errors are measured against the real data. Reading it costs no privacy budget; share this page only with people who may see the real data's marginals.</p>
{{else}}<p class="basis" id="basis">Built from released information only (the model's answers and error bounds, and the synthetic rows): this user cannot read the real table <code>{{.Source}}</code>, so no error against the real data is shown. The “synthetic vs model” column measures how far the sampled rows are from the model they were drawn from.</p>
{{end}}
<h2>Release</h2>
<table id="release">
<tr><th class="l">source</th><td class="l">{{.Source}}</td></tr>
<tr><th class="l">mechanism</th><td class="l">{{.Mechanism}} ({{.Output}})</td></tr>
<tr><th class="l">ε, δ</th><td class="l">{{num .Epsilon}}, {{num .Delta}}</td></tr>
<tr><th class="l">ρ charged</th><td class="l">{{num .Rho}}</td></tr>
<tr><th class="l">rows, rounds</th><td class="l">{{.Rows}}, {{.Rounds}}</td></tr>
<tr><th class="l">model size</th><td class="l">{{num .ModelMB}} MB</td></tr>
<tr><th class="l">created</th><td class="l">{{.Created}} by {{.Creator}}</td></tr>
</table>

<h2>Ledger entry</h2>
{{with .Ledger}}<table id="ledger">
<tr><th class="l">entry</th><td class="l">{{.ID}} at {{.Time}} by {{.User}}: {{.Status}}</td></tr>
<tr><th class="l">statement</th><td class="l"><code>{{.Statement}}</code></td></tr>
<tr><th class="l">charged</th><td class="l">ρ = {{num .Rho}} (ε = {{num .Epsilon}}, δ = {{num .Delta}})</td></tr>
<tr><th class="l">note</th><td class="l">{{.Note}}</td></tr>
</table>{{else}}<p>Not visible to this user.</p>{{end}}

<h2>Error per workload marginal</h2>
<p>L1 distance between normalised marginals (0: identical, 2: disjoint).
{{if .Owner}}“synthetic” and “model” are the distances of the synthetic rows and of the model's expected counts to the real table.{{else}}“synthetic vs model” is the distance of the synthetic rows to the model.{{end}}
{{if .HasBounds}}The bound holds with probability ≥ 0.95 for the model's error, each marginal on its own.{{end}}</p>
<table id="errors">
<tr><th class="l">marginal</th><th>weight</th><th>cells</th>{{if .Owner}}<th>synthetic</th><th>model</th>{{else}}<th>synthetic vs model</th>{{end}}{{if .HasBounds}}<th>bound (95%)</th><th class="l">support</th>{{if .Owner}}<th>model within bound</th>{{end}}{{end}}</tr>
{{$r := .}}{{range .Marginals}}<tr><td class="l">{{.Name}}</td><td>{{num .Weight}}</td><td>{{len .Cells}}</td><td>{{num .ErrSynth}}</td>{{if $r.Owner}}<td>{{num .ErrModel}}</td>{{end}}{{if $r.HasBounds}}<td>{{num .Bound}}</td><td class="l">{{.Support}}</td>{{if $r.Owner}}{{$w := within . $r.Owner}}<td{{if eq $w "NO"}} class="no"{{end}}>{{$w}}</td>{{end}}{{end}}</tr>
{{if .Failed}}<tr><td class="l muted" colspan="8">{{.Failed}}</td></tr>{{end}}{{end}}
</table>

{{if .HasBounds}}<h2>Error bounds against the observed error</h2>
<p>Bar: the 95% bound on the model's error. Dot: {{if .Owner}}the model's observed error against the real table{{else}}the synthetic rows' distance to the model (no observed error without the real data){{end}}.</p>
<div class="plot" id="bounds">{{boundsvg .}}</div>{{end}}

<h2>Largest 1-way marginals</h2>
{{legend .Owner}}
<div id="plots1">{{range plots1 .}}<div class="plot">{{barplot . $r.Owner}}</div>{{end}}</div>
<h2>Largest 2-way marginals</h2>
{{legend .Owner}}
<div id="plots2">{{range plots2 .}}<div class="plot">{{barplot . $r.Owner}}</div>{{end}}</div>
{{if .Notes}}<h2>Notes</h2><ul>{{range .Notes}}<li>{{.}}</li>{{end}}</ul>{{end}}
</body></html>
`))

// num formats a number for the page ("–" for NaN).
func num(x float64) string {
	if math.IsNaN(x) {
		return "–"
	}
	return strconv.FormatFloat(x, 'g', 4, 64)
}

// largest returns up to n marginals of k attributes with the most cells.
func largest(ms []*Marginal, k, n int) []*Marginal {
	var out []*Marginal
	for _, m := range ms {
		if len(m.Attrs) == k && len(m.Cells) > 0 {
			out = append(out, m)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return len(out[i].Cells) > len(out[j].Cells) })
	if len(out) > n {
		out = out[:n]
	}
	return out
}

// legend is the colour key of the bar plots.
func legend(owner bool) template.HTML {
	var b strings.Builder
	b.WriteString(`<svg width="420" height="20" role="img" aria-label="legend">`)
	x := 0
	item := func(color, label string) {
		fmt.Fprintf(&b, `<rect x="%d" y="5" width="12" height="12" fill="%s"/><text x="%d" y="15" font-size="12">%s</text>`, x, color, x+16, label)
		x += 16 + 8*len(label) + 12
	}
	if owner {
		item(colorReal, "real")
	}
	item(colorModel, "model")
	item(colorSynth, "synthetic")
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// barPlot draws the largest cells of m (by the reference: real for an
// owner, else the model) as grouped bars of each source's share.
func barPlot(m *Marginal, owner bool) template.HTML {
	type series struct {
		color string
		get   func(Cell) float64
	}
	var ss []series
	if owner {
		ss = append(ss, series{colorReal, func(c Cell) float64 { return c.Real }})
	}
	ss = append(ss, series{colorModel, func(c Cell) float64 { return c.Model }}, series{colorSynth, func(c Cell) float64 { return c.Synth }})
	totals := make([]float64, len(ss))
	for i, s := range ss {
		for _, c := range m.Cells {
			totals[i] += max(s.get(c), 0)
		}
	}
	share := func(i int, c Cell) float64 {
		if v := ss[i].get(c); totals[i] == 0 || math.IsNaN(v) {
			return 0
		}
		return max(ss[i].get(c), 0) / totals[i]
	}
	cells := append([]Cell(nil), m.Cells...)
	sort.SliceStable(cells, func(a, b int) bool { return share(0, cells[a]) > share(0, cells[b]) })
	if len(cells) > maxPlotCells {
		cells = cells[:maxPlotCells]
	}
	top := 0.0
	for _, c := range cells {
		for i := range ss {
			top = max(top, share(i, c))
		}
	}
	if top == 0 {
		top = 1
	}
	const (
		plotH  = 160.0
		left   = 40.0
		bottom = 90.0
		groupW = 26.0
	)
	width := left + groupW*float64(len(cells)) + 10
	height := plotH + bottom + 24
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" role="img" aria-label="%s" class="bars">`, width, height, html.EscapeString(m.Name()))
	fmt.Fprintf(&b, `<text x="%.0f" y="14" font-size="13" font-weight="bold">%s</text>`, left, html.EscapeString(m.Name()))
	y0 := 20.0
	// Axis and ticks (shares).
	fmt.Fprintf(&b, `<line x1="%.0f" y1="%.1f" x2="%.0f" y2="%.1f" stroke="#999"/>`, left, y0, left, y0+plotH)
	fmt.Fprintf(&b, `<line x1="%.0f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#999"/>`, left, y0+plotH, width-10, y0+plotH)
	for _, t := range []float64{0, 0.5, 1} {
		y := y0 + plotH - t*plotH
		fmt.Fprintf(&b, `<text x="%.0f" y="%.1f" font-size="10" text-anchor="end">%s</text>`, left-4, y+3, strconv.FormatFloat(t*top*100, 'f', 1, 64)+"%")
	}
	barW := (groupW - 4) / float64(len(ss))
	for gi, c := range cells {
		gx := left + 2 + groupW*float64(gi)
		for i, s := range ss {
			h := share(i, c) / top * plotH
			fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>%s: %.4f</title></rect>`,
				gx+barW*float64(i), y0+plotH-h, barW, h, s.color, html.EscapeString(strings.Join(c.Key, ", ")), share(i, c))
		}
		label := strings.Join(c.Key, ",")
		if len([]rune(label)) > 14 {
			label = string([]rune(label)[:13]) + "…"
		}
		lx, ly := gx+groupW/2, y0+plotH+6
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="10" text-anchor="end" transform="rotate(-60 %.1f %.1f)">%s</text>`, lx, ly, lx, ly, html.EscapeString(label))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// boundPlot draws, per workload marginal, the bound as a bar and the
// observed error (owner) or the synthetic rows' distance to the model as
// a dot, on a common scale.
func boundPlot(r *Report) template.HTML {
	const (
		rowH  = 14.0
		left  = 230.0
		plotW = 520.0
	)
	scale := 0.0
	for _, m := range r.Marginals {
		for _, x := range []float64{m.Bound, m.ErrModel, m.ErrSynth} {
			if !math.IsNaN(x) {
				scale = max(scale, x)
			}
		}
	}
	if scale == 0 {
		scale = 1
	}
	scale = min(scale*1.05, 2)
	obs := func(m *Marginal) float64 {
		if r.Owner {
			return m.ErrModel
		}
		return m.ErrSynth
	}
	height := 30 + rowH*float64(len(r.Marginals))
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" role="img" aria-label="error bounds" class="boundplot">`, left+plotW+20, height)
	for i, m := range r.Marginals {
		y := 6 + rowH*float64(i)
		fmt.Fprintf(&b, `<text x="%.0f" y="%.1f" font-size="10" text-anchor="end">%s</text>`, left-6, y+10, html.EscapeString(m.Name()))
		if !math.IsNaN(m.Bound) {
			fmt.Fprintf(&b, `<rect x="%.0f" y="%.1f" width="%.1f" height="%.1f" fill="%s"><title>bound %.4f</title></rect>`, left, y+2, m.Bound/scale*plotW, rowH-4, colorBound, m.Bound)
		}
		if x := obs(m); !math.IsNaN(x) {
			color := colorModel
			if !r.Owner {
				color = colorSynth
			}
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="4" fill="%s"><title>observed %.4f</title></circle>`, left+x/scale*plotW, y+rowH/2, color, x)
		}
	}
	axisY := 8 + rowH*float64(len(r.Marginals))
	fmt.Fprintf(&b, `<line x1="%.0f" y1="%.1f" x2="%.0f" y2="%.1f" stroke="#999"/>`, left, axisY, left+plotW, axisY)
	for _, t := range []float64{0, 0.25, 0.5, 0.75, 1} {
		x := left + t*plotW
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="10" text-anchor="middle">%s</text>`, x, axisY+14, strconv.FormatFloat(t*scale, 'f', 2, 64))
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}
