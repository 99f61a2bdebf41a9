package hpd

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dpsql/dpsql/internal/hhgen"
	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/noise"
)

// fromGen encodes generated data with the chosen attributes, truncating
// households to K persons.
func fromGen(g *hhgen.Data, K int, ga, ia []int) (*Domain, *Records) {
	d := &Domain{K: K}
	for _, a := range ga {
		d.GroupNames = append(d.GroupNames, hhgen.HouseholdAttrs[a].Name)
		d.Group = append(d.Group, len(hhgen.HouseholdAttrs[a].Values))
	}
	for _, b := range ia {
		d.IndivNames = append(d.IndivNames, hhgen.PersonAttrs[b].Name)
		d.Indiv = append(d.Indiv, len(hhgen.PersonAttrs[b].Values))
	}
	r := &Records{NG: len(ga), NI: len(ia), Off: []int32{0}}
	j := 0
	for h, row := range g.H {
		for _, a := range ga {
			r.G = append(r.G, uint16(row[a]))
		}
		n := 0
		for ; j < len(g.P) && g.PersHH[j] == h; j++ {
			if n < K {
				for _, b := range ia {
					r.P = append(r.P, uint16(g.P[j][b]))
				}
				n++
			}
		}
		r.Off = append(r.Off, r.Off[len(r.Off)-1]+int32(n))
	}
	return d, r
}

func tinyDomain() *Domain {
	return &Domain{GroupNames: []string{"u", "t"}, Group: []int{2, 3}, IndivNames: []string{"s", "a"}, Indiv: []int{2, 2}, K: 3}
}

func TestAnswersBruteForce(t *testing.T) {
	d := tinyDomain()
	// household 0: u=1,t=2; persons (s,a) = (0,1),(0,1),(1,0)
	// household 1: u=0,t=0; persons (1,1)
	r := &Records{NG: 2, NI: 2, G: []uint16{1, 2, 0, 0}, Off: []int32{0, 3, 4}, P: []uint16{0, 1, 0, 1, 1, 0, 1, 1}}
	if err := r.Check(d); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		q    QuerySet
		cell int
		want float64
	}{
		{QuerySet{Kind: GroupLevel, G: []int{0}}, 1, 1},
		{QuerySet{Kind: IndivLevel, G: []int{0}}, 1, 3},
		{QuerySet{Kind: GroupLevel, G: []int{0}, I: []int{0, 1}}, 1*4 + 0*2 + 1, 1}, // u=1, someone s=0,a=1 (two do: counted once)
		{QuerySet{Kind: IndivLevel, G: []int{0}, I: []int{0, 1}}, 1*4 + 0*2 + 1, 2},
		{QuerySet{Kind: GroupLevel, I: []int{0}}, 1, 2},
		{QuerySet{Kind: IndivLevel, I: []int{0}}, 1, 2},
		{QuerySet{Kind: GroupLevel, G: []int{1}, I: []int{1}}, 0*2 + 1, 1},
	}
	for i, c := range cases {
		if err := c.q.Validate(d); err != nil {
			t.Fatal(err)
		}
		got := Answers(d, r, &c.q)
		if got[c.cell] != c.want {
			t.Errorf("case %d %v: cell %d = %v, want %v (table %v)", i, &c.q, c.cell, got[c.cell], c.want, got)
		}
		// queryValue agrees.
		q := c.q
		mq := query{kind: q.Kind, gA: q.G, iA: q.I, gV: make([]int, len(q.G)), iV: make([]int, len(q.I))}
		q.decode(d, c.cell, mq.gV, mq.iV)
		s := 0.0
		for h := range r.Households() {
			s += queryValue(d, r, h, &mq)
		}
		if s != c.want {
			t.Errorf("case %d: queryValue sum %v, want %v", i, s, c.want)
		}
	}
}

// randomMixture returns M random components' probabilities.
func randomMixture(l *layout, M int, r *rand.Rand) ([]float64, []float64) {
	th := make([]float64, M*l.L)
	for i := range th {
		th[i] = r.NormFloat64()
	}
	p := make([]float64, len(th))
	l.softmax(th, p)
	return th, p
}

// The differentiable answers equal exact expectations over the universe
// under the HPD's household distribution.
func TestSetAnswersMatchEnumeration(t *testing.T) {
	d := tinyDomain()
	l := newLayout(d)
	r := rand.New(rand.NewPCG(1, 2))
	_, p := randomMixture(l, 3, r)
	u, err := universe(d)
	if err != nil {
		t.Fatal(err)
	}
	M := len(p) / l.L
	tot := 0.0
	for h := range u.W {
		s := int(u.Off[h+1] - u.Off[h])
		w := 0.0
		for m := range M {
			c := p[m*l.L:]
			x := c[l.sOff+s-1]
			for a := range d.Group {
				x *= c[l.gOff[a]+int(u.G[h*u.NG+a])]
			}
			for k := range s {
				for b := range d.Indiv {
					x *= c[l.iOff[k][b]+int(u.P[(int(u.Off[h])+k)*u.NI+b])]
				}
			}
			w += x / float64(M)
		}
		u.W[h] = w
		tot += w
	}
	if math.Abs(tot-1) > 1e-12 {
		t.Fatalf("universe probabilities sum to %v", tot)
	}
	for _, q := range AllKWay(d, 3) {
		got := l.setAnswers(p, &q)
		want := Answers(d, u, &q)
		vG, vI := make([]int, len(q.G)), make([]int, len(q.I))
		K := d.K
		rk, e, tt := make([]float64, K), make([]float64, K), make([]float64, K)
		for c := range want {
			if math.Abs(got[c]-want[c]) > 1e-12 {
				t.Fatalf("%v cell %d: model %v, enumeration %v", &q, c, got[c], want[c])
			}
			q.decode(d, c, vG, vI)
			mq := query{kind: q.Kind, gA: q.G, iA: q.I, gV: vG, iV: vI}
			if v := l.value(p, &mq, 0, nil, rk, e, tt); math.Abs(v-want[c]) > 1e-12 {
				t.Fatalf("%v cell %d: value %v, enumeration %v", &q, c, v, want[c])
			}
		}
	}
}

func testMeasurements(d *Domain, r *rand.Rand, n int) []measured {
	var ms []measured
	sets := AllKWay(d, 3)
	sets = append(sets, AllKWay(d, 1)...)
	for range n {
		q := sets[r.IntN(len(sets))]
		nG, nI := q.cells(d)
		mq := query{kind: q.Kind, gA: q.G, iA: q.I, gV: make([]int, len(q.G)), iV: make([]int, len(q.I)), scale: 1, bound: 1}
		if q.Kind == IndivLevel {
			mq.scale, mq.bound = 1.7, float64(d.K)
		}
		q.decode(d, r.IntN(nG*nI), mq.gV, mq.iV)
		ms = append(ms, measured{q: mq, a: r.Float64()})
	}
	return ms
}

func TestFixedGradientFiniteDifferences(t *testing.T) {
	d := tinyDomain()
	l := newLayout(d)
	r := rand.New(rand.NewPCG(3, 4))
	th, p := randomMixture(l, 2, r)
	ms := testMeasurements(d, r, 12)
	g := make([]float64, len(p))
	l.lossGrad(p, ms, g)
	l.softmaxBack(p, g)
	loss := func() float64 {
		l.softmax(th, p)
		return l.lossGrad(p, ms, make([]float64, len(p)))
	}
	const h = 1e-6
	for i := range th {
		x := th[i]
		th[i] = x + h
		up := loss()
		th[i] = x - h
		dn := loss()
		th[i] = x
		fd := (up - dn) / (2 * h)
		if math.Abs(fd-g[i]) > 1e-6*max(1, math.Abs(fd)) {
			t.Fatalf("θ[%d]: analytic %v, finite difference %v", i, g[i], fd)
		}
	}
}

func TestGenGradientFiniteDifferences(t *testing.T) {
	d := tinyDomain()
	r := rand.New(rand.NewPCG(5, 6))
	g := newGen(d, 3, 1, 8, 0.01, r)
	ms := testMeasurements(d, r, 10)
	// Fix the noise: forward draws fresh z, so evaluate with a saved z.
	z := append([]float64(nil), g.z...)
	eval := func() float64 {
		g.r = rand.New(rand.NewPCG(9, 9))
		g.forward()
		copy(g.z, z)
		g.recompute()
		return g.l.lossGrad(g.p, ms, g.gp)
	}
	eval()
	g.l.softmaxBack(g.p, g.gp)
	g.backward()
	an := append([]float64(nil), g.gw...)
	const h = 1e-6
	for i := range g.w {
		x := g.w[i]
		g.w[i] = x + h
		up := eval()
		g.w[i] = x - h
		dn := eval()
		g.w[i] = x
		fd := (up - dn) / (2 * h)
		if math.Abs(fd-an[i]) > 1e-5*max(1, math.Abs(fd)) {
			t.Fatalf("w[%d]: analytic %v, finite difference %v", i, an[i], fd)
		}
	}
}

func TestUniverseGuard(t *testing.T) {
	d := &Domain{GroupNames: []string{"a"}, Group: []int{4}, IndivNames: []string{"b", "c"}, Indiv: []int{10, 10}, K: 8}
	r, _ := MWEM.New(nil)
	err := r.Check(&Input{Domain: d, Data: RecordsSource{}, Rho: 1})
	if err == nil {
		t.Fatal("mwem accepted a universe of 4·100^8 households")
	}
	d.K = 2
	if err := r.Check(&Input{Domain: d, Data: RecordsSource{}, Rho: 1}); err != nil {
		t.Fatal(err)
	}
	if n, _ := universeSize(d); n != 4*(100+10000) {
		t.Fatalf("universe size %d", n)
	}
}

func TestAccounting(t *testing.T) {
	for _, rho := range []float64{0.001, 0.05, 1, 3} {
		for _, T := range []int{1, 7, 50} {
			for _, a := range []float64{0.1, 0.5, 0.9} {
				r := &Runner{m: HPDFixed, rounds: T, alpha: a}
				p, err := r.plan(rho, 8)
				if err != nil {
					t.Fatal(err)
				}
				got := p.spent(T, 8)
				if got > rho*(1+1e-12) || got < rho*(1-1e-9) {
					t.Errorf("ρ=%v T=%d α=%v: plan spends %v", rho, T, a, got)
				}
				// Q_I is measured with K times the noise of Q_G: same cost.
				if math.Abs(p.sigmaI-8*p.sigmaG) > 1e-9*p.sigmaI {
					t.Errorf("σ_I = %v, σ_G = %v", p.sigmaI, p.sigmaG)
				}
			}
		}
	}
}

// The default number of rounds follows the budget (10 + 120·√ρ within
// [10, 50]); ROUNDS overrides it; the plan spends ρ exactly either way.
func TestRoundsFor(t *testing.T) {
	auto, err := HPDFixed.New(nil)
	if err != nil {
		t.Fatal(err)
	}
	fixed, err := HPDFixed.New([]synth.Option{{Name: "ROUNDS", Value: "7"}})
	if err != nil {
		t.Fatal(err)
	}
	single, err := HPDFixed.New([]synth.Option{{Name: "MARGINALS", Value: "0"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		rho  float64
		want int
	}{{1e-6, 10}, {1.2e-4, 11}, {0.0029, 16}, {0.0118, 23}, {0.043, 35}, {0.1, 48}, {1, 50}, {750, 50}} {
		if got := auto.roundsFor(c.rho); got != c.want {
			t.Errorf("ρ = %v: T = %d, want %d", c.rho, got, c.want)
		}
		if got := single.roundsFor(c.rho); got != 50 {
			t.Errorf("MARGINALS = 0 at ρ = %v: T = %d, want 50", c.rho, got)
		}
		if got := fixed.roundsFor(c.rho); got != 7 {
			t.Errorf("ROUNDS = 7 at ρ = %v: T = %d", c.rho, got)
		}
		p, err := auto.plan(c.rho, 8)
		if err != nil {
			t.Fatal(err)
		}
		if got := p.spent(c.want, 8); math.Abs(got-c.rho) > 1e-9*c.rho {
			t.Errorf("ρ = %v: the plan spends %v", c.rho, got)
		}
	}
}

// hpd_gen's default steps per round keep ~1250 Adam steps in all; ITERS
// overrides it; hpd_fixed keeps 25.
func TestItersFor(t *testing.T) {
	gen, _ := HPDGen.New(nil)
	gen7, _ := HPDGen.New([]synth.Option{{Name: "ITERS", Value: "7"}})
	fixed, _ := HPDFixed.New(nil)
	for _, c := range []struct{ T, gen, gen7, fixed int }{{11, 114, 7, 25}, {23, 55, 7, 25}, {35, 36, 7, 25}, {50, 25, 7, 25}, {100, 25, 7, 25}} {
		if g, g7, f := gen.itersFor(c.T), gen7.itersFor(c.T), fixed.itersFor(c.T); g != c.gen || g7 != c.gen7 || f != c.fixed {
			t.Errorf("T = %d: hpd_gen %d, ITERS = 7 %d, hpd_fixed %d; want %d %d %d", c.T, g, g7, f, c.gen, c.gen7, c.fixed)
		}
	}
	if _, err := HPDFixed.New([]synth.Option{{Name: "ITERS", Value: "0"}}); err == nil {
		t.Error("hpd_fixed accepted ITERS = 0")
	}
}

// errors returns the max and mean error over the workload, on the paper's
// scale: Q_G per household of the data, Q_I per person of the data.
func workloadErr(d *Domain, real, syn *Records, sets []QuerySet) (mx, mean float64) {
	n := 0
	for i := range sets {
		a, b := Answers(d, real, &sets[i]), Answers(d, syn, &sets[i])
		nr, ns := float64(real.Households()), float64(syn.Households())
		if sets[i].Kind == IndivLevel {
			nr, ns = float64(real.Persons()), float64(syn.Persons())
		}
		for c := range a {
			e := math.Abs(a[c]/nr - b[c]/ns)
			mx = max(mx, e)
			mean += e
			n++
		}
	}
	return mx, mean / float64(n)
}

func TestRunMethods(t *testing.T) {
	g, _ := hhgen.Generate(hhgen.Config{Households: 3000, Seed: 11})
	cases := []struct {
		m      Method
		ga, ia []int
		K      int
		opts   map[string]any
	}{
		{HPDFixed, []int{hhgen.HUrban, hhgen.HIncome}, []int{hhgen.PSex, hhgen.PAge, hhgen.PEdu}, 8, map[string]any{"ROUNDS": 15, "ITERS": 20, "COMPONENTS": 20}},
		{HPDFixed, []int{hhgen.HUrban, hhgen.HIncome}, []int{hhgen.PSex, hhgen.PAge, hhgen.PEdu}, 8, map[string]any{"ROUNDS": 20, "ITERS": 30, "COMPONENTS": 30, "MARGINALS": 0}},
		{HPDGen, []int{hhgen.HUrban, hhgen.HIncome}, []int{hhgen.PSex, hhgen.PAge, hhgen.PEdu}, 8, map[string]any{"ROUNDS": 12, "ITERS": 20, "COMPONENTS": 24, "LR": 0.01}},
		{MWEM, []int{hhgen.HUrban}, []int{hhgen.PSex, hhgen.PEmp}, 3, map[string]any{"ROUNDS": 10}},
	}
	for _, c := range cases {
		t.Run(fmt.Sprintf("%s/%v", c.m.Name(), c.opts["MARGINALS"]), func(t *testing.T) {
			d, recs := fromGen(g, c.K, c.ga, c.ia)
			var opts []synthOption
			for k, v := range c.opts {
				opts = append(opts, synthOption{k, v})
			}
			r, err := c.m.New(toOpts(opts))
			if err != nil {
				t.Fatal(err)
			}
			rounds := 0
			in := &Input{Domain: d, Data: RecordsSource{recs}, Rho: 0.5, Noise: noise.Derive([]byte("0123456789abcdef0123456789abcdef"), 1, "test"),
				Progress: func(s statusT) { rounds = max(rounds, s.Round) }}
			res, err := r.Run(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			if res.RhoUsed > in.Rho || res.RhoUsed < 0.999*in.Rho {
				t.Errorf("spent %v of %v", res.RhoUsed, in.Rho)
			}
			// T is capped by the number of candidates; ρ is split over
			// the rounds that run.
			if rounds < 1 || rounds > c.opts["ROUNDS"].(int) {
				t.Errorf("last round reported %d", rounds)
			}
			syn := res.Households
			if err := syn.Check(d); err != nil {
				t.Fatal(err)
			}
			if n := syn.Households(); math.Abs(float64(n-recs.Households())) > 100 {
				t.Errorf("%d synthetic households for %d", n, recs.Households())
			}
			// Better than the independent uniform model.
			uni := &fixedHPD{l: newLayout(d)}
			uni.p = make([]float64, uni.l.L)
			uni.l.softmax(make([]float64, uni.l.L), uni.p)
			base := uni.sample(recs.Households(), rand.New(rand.NewPCG(1, 1)))
			sets := AllKWay(d, 3)
			mx, mean := workloadErr(d, recs, syn, sets)
			bmx, bmean := workloadErr(d, recs, base, sets)
			t.Logf("%s: max %.4f mean %.4f (uniform: max %.4f mean %.4f)", c.m.Name(), mx, mean, bmx, bmean)
			if mean > bmean/2 || mx > bmx {
				t.Errorf("no better than uniform")
			}
		})
	}
}

// setSensitivity bounds the change of a query set's counts when a household
// is added: checked against every household of generated typed data.
func TestSetSensitivity(t *testing.T) {
	g, _ := hhgen.Generate(hhgen.Config{Households: 400, Seed: 21})
	d, recs := typedFromGen(g, 6, []int{hhgen.HUrban}, []int{hhgen.PRel, hhgen.PSex, hhgen.PAge})
	sets := append(AllKWay(d, 3), AllKWay(d, 2)...)
	sets = append(sets, AllKWay(d, 1)...)
	sets = append(sets, AllRelations(d)...)
	for rel := MarriedTo; rel <= HasParent; rel++ {
		sets = append(sets, QuerySet{Kind: RelationLevel, Rel: rel, I: []int{1}}, QuerySet{Kind: RelationLevel, Rel: rel, I2: []int{1, 2}})
		// The relationship fixed on either side (the SQL forms' pins).
		for v := range 3 {
			sets = append(sets,
				QuerySet{Kind: RelationLevel, Rel: rel, I: []int{0, 1}, I2: []int{2}, Where: []Cond{{Attr: 0, Value: v}}},
				QuerySet{Kind: RelationLevel, Rel: rel, I: []int{1}, I2: []int{0, 2}, Where: []Cond{{Relative: true, Attr: 0, Value: v}}},
				QuerySet{Kind: RelationLevel, Rel: rel, G: []int{0}, I: []int{0, 2}, I2: []int{0, 1}, Where: []Cond{{Attr: 0, Value: v}, {Relative: true, Attr: 0, Value: (v + 1) % 3}, {Relative: true, Attr: 1, Value: 1}}})
		}
	}
	sets = append(sets, QuerySet{Kind: GroupLevel, I: []int{1, 2}, Where: []Cond{{Attr: 2, Value: 1}}},
		QuerySet{Kind: GroupLevel, G: []int{0}, I: []int{0, 1, 2}, Where: []Cond{{Attr: 0, Value: 2}, {Group: true, Attr: 0, Value: 0}}})
	vG, vI := make([]int, len(d.Group)), make([]int, 2*len(d.Indiv))
	for i := range sets {
		q := &sets[i]
		if err := q.Validate(d); err != nil {
			t.Fatal(err)
		}
		l1, l2 := setSensitivity(d, q)
		for h := range recs.Households() {
			// One household's own contribution is the neighbour difference.
			one := &Records{NG: recs.NG, NI: recs.NI, G: recs.G[h*recs.NG : (h+1)*recs.NG],
				P: recs.P[int(recs.Off[h])*recs.NI : int(recs.Off[h+1])*recs.NI], Off: []int32{0, recs.Off[h+1] - recs.Off[h]}}
			a := Answers(d, one, q)
			s1, s2 := 0.0, 0.0
			for c, x := range a {
				if !q.matches(d, c, vG, vI) {
					continue // not measured
				}
				s1 += math.Abs(x)
				s2 += x * x
			}
			if s1 > l1+1e-9 || math.Sqrt(s2) > l2+1e-9 {
				t.Fatalf("%v: household %d moves L1 %v (bound %v), L2 %v (bound %v)", q, h, s1, l1, math.Sqrt(s2), l2)
			}
		}
	}
}

// The pins of the SQL relationship forms tighten the sensitivity.
func TestSetSensitivityPinned(t *testing.T) {
	d := &Domain{GroupNames: []string{"u"}, Group: []int{2}, IndivNames: []string{"rel", "x"}, Indiv: []int{3, 4}, K: 8,
		Typed: true, Rel: 0, RelCodes: [3]int{0, 1, 2}}
	for _, c := range []struct {
		q      QuerySet
		l1, l2 float64
	}{
		{QuerySet{Kind: RelationLevel, Rel: MarriedTo, I: []int{1}, I2: []int{1}}, 2, 2},
		{QuerySet{Kind: RelationLevel, Rel: MarriedTo, I: []int{0, 1}, I2: []int{0, 1}, Where: []Cond{{Attr: 0, Value: 1}, {Relative: true, Attr: 0, Value: 0}}}, 1, 1},
		{QuerySet{Kind: RelationLevel, Rel: HasChild, I: []int{1}, I2: []int{1}}, 8, 2 * 2},
		{QuerySet{Kind: RelationLevel, Rel: HasChild, I: []int{0}, I2: []int{1}, Where: []Cond{{Attr: 0, Value: 0}}}, 4, 2},
		{QuerySet{Kind: RelationLevel, Rel: HasChild, I: []int{0}, I2: []int{1}, Where: []Cond{{Attr: 0, Value: 0}, {Relative: true, Attr: 1, Value: 3}}}, 1, 1},
		{QuerySet{Kind: RelationLevel, Rel: HasParent, I: []int{1}, I2: []int{1}}, 12, 6 * math.Sqrt2},
		{QuerySet{Kind: RelationLevel, Rel: HasParent, I: []int{1}, I2: []int{0, 1}, Where: []Cond{{Relative: true, Attr: 0, Value: 0}}}, 6, 6},
		{QuerySet{Kind: GroupLevel, I: []int{1}, Where: []Cond{{Attr: 1, Value: 2}}}, 1, 1},
		{QuerySet{Kind: GroupLevel, I: []int{0, 1}}, 8, math.Sqrt(8)},
	} {
		if err := c.q.Validate(d); err != nil {
			t.Fatal(err)
		}
		if l1, l2 := setSensitivity(d, &c.q); math.Abs(l1-c.l1) > 1e-12 || math.Abs(l2-c.l2) > 1e-12 {
			t.Errorf("%v: L1 %v L2 %v, want %v %v", &c.q, l1, l2, c.l1, c.l2)
		}
	}
}
