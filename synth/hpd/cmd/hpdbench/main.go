// Command hpdbench measures the hierarchical synthesizers of synth/hpd on
// generated household data (internal/hhgen): max and mean workload error
// over Q_G ∪ Q_I (and Q_R for typed households) for hpd_fixed, hpd_gen and
// mwem at several ε, several seeds, with wall and CPU time per run, and the
// baseline that treats persons as independent rows (a flat single-table
// mechanism on persons joined with their household's attributes, at ρ/K²,
// evaluated on Q_I, the only class it can answer).
//
//	GOMAXPROCS=1 go run ./synth/hpd/cmd/hpdbench -households 20000 -k 8 -methods hpd_fixed,hpd_gen -flat mst
//	GOMAXPROCS=1 go run ./synth/hpd/cmd/hpdbench -reduced -methods hpd_fixed,hpd_gen,mwem
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/dpsql/dpsql/budget"
	"github.com/dpsql/dpsql/internal/cputime"
	"github.com/dpsql/dpsql/internal/hhgen"
	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/hpd"
	"github.com/dpsql/dpsql/synth/noise"
	"github.com/dpsql/dpsql/synth/pgm"
	"github.com/dpsql/dpsql/synth/registry"
)

func main() {
	n := flag.Int("households", 20000, "households generated")
	k := flag.Int("k", 8, "privacy unit's MAX K")
	reduced := flag.Bool("reduced", false, "the reduced data set: urban, tenure × sex, employed (MWEM runs)")
	typed := flag.Bool("typed", false, "typed households (rel as the relationship column; adds Q_R)")
	methods := flag.String("methods", "hpd_fixed,hpd_gen", "comma-separated methods")
	flat := flag.String("flat", "", "comma-separated flat baseline mechanisms on persons at ρ/K² (e.g. mst,aim,mwem); empty: none")
	epsList := flag.String("eps", "0.1,0.5,1,2", "comma-separated ε")
	seeds := flag.Int("seeds", 3, "runs per (method, ε)")
	delta := flag.Float64("delta", 1e-9, "δ")
	opts := flag.String("opts", "", "method options NAME=v,NAME=v")
	timeout := flag.Duration("timeout", 10*time.Minute, "per-run timeout")
	flag.BoolVar(&qiOnly, "qi-only", false, "give the hierarchical methods the Q_I sets only (errors are still over every class)")
	flag.IntVar(&hmult, "hmult", 1, "synthetic households drawn, as a multiple of the real count (more: less sampling error)")
	flag.Parse()
	if err := run(*n, *k, *reduced, *typed, *methods, *flat, *epsList, *seeds, *delta, *opts, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "hpdbench:", err)
		os.Exit(1)
	}
}

// hmult scales the number of synthetic households drawn (errors are on the
// fraction scale, so a larger sample only removes sampling error).
var hmult = 1

// qiOnly restricts the methods' workload to Q_I (to compare with the flat
// baseline, which measures Q_I only).
var qiOnly bool

// encode turns generated data into typed-order records over the chosen
// attributes, truncating households to K persons.
func encode(g *hhgen.Data, K int, ga, ia []int, typed bool) (*hpd.Domain, *hpd.Records) {
	d := &hpd.Domain{K: K}
	for _, a := range ga {
		d.GroupNames = append(d.GroupNames, hhgen.HouseholdAttrs[a].Name)
		d.Group = append(d.Group, len(hhgen.HouseholdAttrs[a].Values))
	}
	for j, b := range ia {
		d.IndivNames = append(d.IndivNames, hhgen.PersonAttrs[b].Name)
		d.Indiv = append(d.Indiv, len(hhgen.PersonAttrs[b].Values))
		if typed && b == hhgen.PRel {
			d.Typed, d.Rel, d.RelCodes = true, j, [3]int{hhgen.Head, hhgen.Spouse, hhgen.Child}
		}
	}
	r := &hpd.Records{NG: len(ga), NI: len(ia), Off: []int32{0}}
	j := 0
	for h, row := range g.H {
		for _, a := range ga {
			r.G = append(r.G, uint16(row[a]))
		}
		m := 0
		for ; j < len(g.P) && g.PersHH[j] == h; j++ {
			if m < K {
				for _, b := range ia {
					r.P = append(r.P, uint16(g.P[j][b]))
				}
				m++
			}
		}
		r.Off = append(r.Off, r.Off[len(r.Off)-1]+int32(m))
	}
	return d, r
}

func run(n, K int, reduced, typed bool, methods, flat, epsList string, seeds int, delta float64, opts string, timeout time.Duration) error {
	g, err := hhgen.Generate(hhgen.Config{Households: n, Seed: 1})
	if err != nil {
		return err
	}
	ga := []int{hhgen.HUrban, hhgen.HRegion, hhgen.HTenure, hhgen.HIncome}
	ia := []int{hhgen.PRel, hhgen.PSex, hhgen.PAge, hhgen.PRace, hhgen.PEdu, hhgen.PEmp}
	if reduced {
		ga, ia = []int{hhgen.HUrban, hhgen.HTenure}, []int{hhgen.PSex, hhgen.PEmp}
	}
	d, recs := encode(g, K, ga, ia, typed)
	if typed {
		recs = hpd.TruncateTyped(d, recs)
	}
	if err := recs.Check(d); err != nil {
		return err
	}
	sets := hpd.DefaultWorkload(d)
	cells := 0
	for i := range sets {
		a := hpd.Answers(d, recs, &sets[i])
		cells += len(a)
	}
	fmt.Printf("# data: %d households, %d persons, K=%d, %d household and %d person attributes, typed=%v; workload %d sets, %d queries\n",
		recs.Households(), recs.Persons(), K, len(ga), len(ia), typed, len(sets), cells)
	var mopts []synth.Option
	if opts != "" {
		for _, kv := range strings.Split(opts, ",") {
			name, v, _ := strings.Cut(kv, "=")
			mopts = append(mopts, synth.Option{Name: name, Value: v})
		}
	}
	fmt.Println("| method | ε | seed | max Q_G∪Q_I(∪Q_R) | mean | max Q_G | max Q_I | max Q_R | mean Q_I | wall s | CPU s |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|")
	for _, es := range strings.Split(epsList, ",") {
		eps, err := strconv.ParseFloat(es, 64)
		if err != nil {
			return err
		}
		rho, err := budget.RhoFromEpsilonDelta(eps, delta)
		if err != nil {
			return err
		}
		for _, name := range strings.Split(methods, ",") {
			m, err := hpd.Lookup(name)
			if err != nil {
				return err
			}
			r, err := m.New(mopts)
			if err != nil {
				return err
			}
			for s := range seeds {
				ctx, cancel := context.WithTimeout(context.Background(), timeout)
				w0, c0 := time.Now(), cputime.Process()
				train := sets
				if qiOnly {
					train = nil
					for _, q := range sets {
						if q.Kind == hpd.IndivLevel {
							train = append(train, q)
						}
					}
				}
				res, err := r.Run(ctx, &hpd.Input{Domain: d, Data: hpd.RecordsSource{R: recs}, Workload: train, Rho: rho,
					Noise: noise.NewSource(), Households: hmult * recs.Households()})
				cancel()
				if err != nil {
					fmt.Printf("| %s | %g | %d | error: %v |\n", name, eps, s, err)
					continue
				}
				wall, cp := time.Since(w0), cputime.Process()-c0
				pk, all := hpd.WorkloadErrors(d, recs, res.Households, sets)
				fmt.Printf("| %s | %g | %d | %.4f | %.5f | %.4f | %.4f | %s | %.5f | %.1f | %.1f |\n", name, eps, s, all.Max, all.Mean,
					pk[hpd.GroupLevel].Max, pk[hpd.IndivLevel].Max, qr(pk), pk[hpd.IndivLevel].Mean, wall.Seconds(), cp.Seconds())
			}
		}
		for _, fm := range strings.Split(flat, ",") {
			if fm == "" {
				continue
			}
			for s := range seeds {
				w0, c0 := time.Now(), cputime.Process()
				e, err := flatBaseline(fm, d, recs, sets, rho/float64(K*K), timeout)
				if err != nil {
					fmt.Printf("| flat %s ρ/K² | %g | %d | error: %v |\n", fm, eps, s, err)
					continue
				}
				fmt.Printf("| flat %s ρ/K² | %g | %d | – | – | – | %.4f | – | %.5f | %.1f | %.1f |\n", fm, eps, s, e.Max, e.Mean,
					time.Since(w0).Seconds(), (cputime.Process() - c0).Seconds())
			}
		}
	}
	return nil
}

func qr(pk [3]hpd.Errors) string {
	if pk[hpd.RelationLevel].N == 0 {
		return "–"
	}
	return fmt.Sprintf("%.4f", pk[hpd.RelationLevel].Max)
}

// flatBaseline runs a flat mechanism on persons joined with their
// household's attributes (one row per person) at ρ and returns its Q_I
// errors.
func flatBaseline(name string, d *hpd.Domain, recs *hpd.Records, sets []hpd.QuerySet, rho float64, timeout time.Duration) (hpd.Errors, error) {
	names := append(append([]string(nil), d.GroupNames...), d.IndivNames...)
	sizes := append(append([]int(nil), d.Group...), d.Indiv...)
	dom, err := pgm.NewDomain(names, sizes)
	if err != nil {
		return hpd.Errors{}, err
	}
	cols := make([][]uint16, len(names))
	for h := range recs.Households() {
		for p := recs.Off[h]; p < recs.Off[h+1]; p++ {
			for a := range d.Group {
				cols[a] = append(cols[a], recs.G[h*recs.NG+a])
			}
			for b := range d.Indiv {
				cols[len(d.Group)+b] = append(cols[len(d.Group)+b], recs.P[int(p)*recs.NI+b])
			}
		}
	}
	ds, err := pgm.NewDataset(dom, cols)
	if err != nil {
		return hpd.Errors{}, err
	}
	mech, err := registry.Lookup(name)
	if err != nil {
		return hpd.Errors{}, err
	}
	runner, err := mech.New(nil)
	if err != nil {
		return hpd.Errors{}, err
	}
	var margs []synth.Marginal
	for _, s := range sets {
		if s.Kind != hpd.IndivLevel {
			continue
		}
		attrs := append([]int(nil), s.G...)
		for _, b := range s.I {
			attrs = append(attrs, len(d.Group)+b)
		}
		margs = append(margs, synth.Marginal{Attrs: attrs, Weight: 1})
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	res, err := runner.Run(ctx, &synth.Input{Data: synth.NewCache(ds), Workload: margs, Rho: rho, Noise: noise.NewSource(), Rows: hmult * recs.Persons()})
	if err != nil {
		return hpd.Errors{}, err
	}
	// Synthetic persons as one-person households, evaluated on Q_I only
	// (each synthetic person carries its household's attributes).
	syn := &hpd.Records{NG: recs.NG, NI: recs.NI, Off: []int32{0}}
	nrows := len(res.Rows[0])
	for i := range nrows {
		for a := range d.Group {
			syn.G = append(syn.G, res.Rows[a][i])
		}
		for b := range d.Indiv {
			syn.P = append(syn.P, res.Rows[len(d.Group)+b][i])
		}
		syn.Off = append(syn.Off, int32(i+1))
	}
	var qi []hpd.QuerySet
	for _, s := range sets {
		if s.Kind == hpd.IndivLevel {
			qi = append(qi, s)
		}
	}
	pk, _ := hpd.WorkloadErrors(d, recs, syn, qi)
	return pk[hpd.IndivLevel], nil
}
