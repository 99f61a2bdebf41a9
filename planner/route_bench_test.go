package planner

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/dpsql/dpsql/catalog/domain"
	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/aim"
	"github.com/dpsql/dpsql/synth/noise"
	"github.com/dpsql/dpsql/synth/pgm"
	"github.com/dpsql/dpsql/synth/pgm/pgmcsv"
)

// adultCliques is the fixed clique set of the estimation benchmark in
// ../shared/reference/targets.md: 20 cliques of 2 and 3 attributes whose
// junction tree has cliques of up to 5 attributes.
var adultCliques = [][]string{
	{"age", "income>50K"}, {"education-num", "income>50K"}, {"marital-status", "relationship"},
	{"relationship", "sex"}, {"occupation", "workclass"}, {"race", "native-country"},
	{"hours-per-week", "income>50K"}, {"capital-gain", "income>50K"}, {"capital-loss", "income>50K"},
	{"age", "marital-status"}, {"education-num", "occupation"}, {"sex", "occupation"},
	{"age", "hours-per-week"}, {"fnlwgt", "race"}, {"age", "education-num", "income>50K"},
	{"marital-status", "relationship", "sex"}, {"occupation", "sex", "income>50K"},
	{"workclass", "education-num", "income>50K"}, {"race", "sex", "native-country"},
	{"age", "relationship", "income>50K"},
}

// adultModels returns two models of adult: one fitted to the exact 1-way
// marginals and the benchmark cliques (no privacy: only the model's shape
// matters here), and one made by AIM on the all-2way workload at ε = 1
// (δ = 1e-9, ρ from spec/aim.md's sanity values). It skips when
// ../shared/data is absent.
func adultModels(b *testing.B) (cliques, aimModel *pgm.Model, dom *domain.Table) {
	b.Helper()
	dir := filepath.Join("..", "..", "shared", "data")
	csvPath, domPath := filepath.Join(dir, "adult.csv"), filepath.Join(dir, "adult-domain.json")
	if _, err := os.Stat(csvPath); err != nil {
		b.Skipf("shared data not available: %v", err)
	}
	data, err := pgmcsv.Load(csvPath, domPath)
	if err != nil {
		b.Fatal(err)
	}
	raw, err := os.ReadFile(domPath)
	if err != nil {
		b.Fatal(err)
	}
	dt, err := domain.ParseDomainFile(raw)
	if err != nil {
		b.Fatal(err)
	}
	pd := data.Domain()
	var meas []pgm.Measurement
	for a := range pd.Len() {
		meas = append(meas, pgm.Measurement{Attrs: []int{a}, Y: data.MarginalTo(nil, []int{a}), Sigma: 1})
	}
	for _, c := range adultCliques {
		attrs, err := pd.Attrs(c...)
		if err != nil {
			b.Fatal(err)
		}
		slices.Sort(attrs)
		meas = append(meas, pgm.Measurement{Attrs: attrs, Y: data.MarginalTo(nil, attrs), Sigma: 1})
	}
	m, err := pgm.Estimate(context.Background(), pd, meas, &pgm.EstimateOptions{Iters: 30})
	if err != nil {
		b.Fatal(err)
	}

	var w []synth.Marginal
	for i := range pd.Len() {
		for j := i + 1; j < pd.Len(); j++ {
			w = append(w, synth.Marginal{Attrs: []int{i, j}, Weight: 1})
		}
	}
	r, err := aim.Mechanism{}.New([]synth.Option{{Name: "PGM_ITERS", Value: 20}, {Name: "FINAL_ITERS", Value: 200}})
	if err != nil {
		b.Fatal(err)
	}
	in := &synth.Input{Data: data, Workload: w, Rho: 1.4973e-2, Rows: 1,
		Noise: noise.Derive([]byte("planner benchmark secret, not real"), 0, "bench")}
	res, err := r.Run(context.Background(), in)
	if err != nil {
		b.Fatal(err)
	}
	return m, res.Model, &dt
}

// BenchmarkRouteAdult times routing and answering 3-way COUNT GROUP BY
// queries from models of adult: attributes inside one clique (projection)
// and spread over cliques (variable elimination), with and without a
// predicate, cold (every query recomputes) and through a warm ModelCache.
func BenchmarkRouteAdult(b *testing.B) {
	cliqueModel, aimModel, dom := adultModels(b)
	ref := SyntheticRef{DB: "db", Name: "adult", Domain: dom}
	queries := []struct{ name, sql string }{
		{"clique", "SELECT age, relationship, `income>50K`, COUNT(*) FROM adult GROUP BY age, relationship, `income>50K`"},
		{"spread", "SELECT sex, race, workclass, COUNT(*) FROM adult GROUP BY sex, race, workclass"},
		{"spread-where", "SELECT sex, race, workclass, COUNT(*) FROM adult WHERE age >= 30 AND `income>50K` = 1 GROUP BY sex, race, workclass ORDER BY 4 DESC LIMIT 10"},
		{"large", "SELECT age, `hours-per-week`, `native-country`, COUNT(*) FROM adult GROUP BY age, `hours-per-week`, `native-country`"},
	}
	for _, mod := range []struct {
		name  string
		model *pgm.Model
	}{{"cliques", cliqueModel}, {"aim", aimModel}} {
		for _, q := range queries {
			for _, cached := range []bool{false, true} {
				name := mod.name + "/" + q.name + "/cold"
				var src ModelSource = mod.model
				if cached {
					name = mod.name + "/" + q.name + "/cached"
					src = NewModelCache(mod.model, dom.Sizes(), 0)
				}
				b.Run(name, func(b *testing.B) {
					run := func() int {
						mq, reason, ok := RouteSQL(q.sql, ref)
						if !ok {
							b.Fatal(reason)
						}
						_, rs, err := mq.Execute(src, nil)
						if err != nil {
							b.Fatal(err)
						}
						return len(rs)
					}
					if cached {
						run() // warm the cache: the loop measures hits
					}
					b.ReportAllocs()
					rows := 0
					for b.Loop() {
						rows = run()
					}
					b.ReportMetric(float64(rows), "rows")
				})
			}
		}
	}
}
