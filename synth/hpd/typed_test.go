package hpd

import (
	"context"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/dpsql/dpsql/internal/hhgen"
	"github.com/dpsql/dpsql/synth/noise"
)

// typedTiny: one group attribute (3 codes), persons with rel (codes
// child=0, head=1, spouse=2: not in slot order on purpose) and x (2 codes),
// K = 4 (head, spouse, up to 2 children).
func typedTiny() *Domain {
	return &Domain{GroupNames: []string{"g"}, Group: []int{3}, IndivNames: []string{"rel", "x"}, Indiv: []int{3, 2}, K: 4,
		Typed: true, Rel: 0, RelCodes: [3]int{1, 2, 0}}
}

// typedUniverse enumerates every valid typed household with its
// probability under the mixture p.
func typedUniverse(l *layout, p []float64) *Records {
	d := l.d
	M := len(p) / l.L
	u := &Records{NG: 1, NI: 2, Off: []int32{0}}
	for g := range d.Group[0] {
		for sp := range 2 {
			for nc := range d.K - 1 {
				slots := []int{0}
				if sp == 1 {
					slots = append(slots, 1)
				}
				for j := range nc {
					slots = append(slots, 2+j)
				}
				n := len(slots)
				for xs := range 1 << n {
					w := 0.0
					for m := range M {
						c := p[m*l.L:]
						x := c[l.gOff[0]+g] * c[l.psOff+sp] * c[l.ncOff+nc]
						for i, k := range slots {
							x *= c[l.iOff[k][1]+(xs>>i)&1]
						}
						w += x / float64(M)
					}
					u.G = append(u.G, uint16(g))
					for i, k := range slots {
						u.P = append(u.P, uint16(d.RelCodes[slotType(k)]), uint16((xs>>i)&1))
					}
					u.Off = append(u.Off, u.Off[len(u.Off)-1]+int32(n))
					u.W = append(u.W, w)
				}
			}
		}
	}
	return u
}

func TestTypedAnswersMatchEnumeration(t *testing.T) {
	d := typedTiny()
	if err := d.Check(); err != nil {
		t.Fatal(err)
	}
	l := newLayout(d)
	_, p := randomMixture(l, 3, rand.New(rand.NewPCG(8, 9)))
	u := typedUniverse(l, p)
	if err := u.Check(d); err != nil {
		t.Fatal(err)
	}
	tot := 0.0
	for _, w := range u.W {
		tot += w
	}
	if math.Abs(tot-1) > 1e-12 {
		t.Fatalf("probabilities sum to %v", tot)
	}
	sets := append(AllKWay(d, 3), AllKWay(d, 1)...)
	for rel := MarriedTo; rel <= HasParent; rel++ {
		sets = append(sets, QuerySet{Kind: RelationLevel, Rel: rel, I: []int{1}, I2: []int{1}},
			QuerySet{Kind: RelationLevel, Rel: rel, G: []int{0}, I: []int{1}, I2: []int{0, 1}},
			QuerySet{Kind: RelationLevel, Rel: rel},
			// The relationship in I and I2, as the SQL forms compile it.
			QuerySet{Kind: RelationLevel, Rel: rel, G: []int{0}, I: []int{0, 1}, I2: []int{0, 1}, Where: []Cond{{Attr: 0, Value: 2}, {Relative: true, Attr: 0, Value: 1}}})
	}
	for _, q := range sets {
		if err := q.Validate(d); err != nil {
			t.Fatal(err)
		}
		got, want := l.setAnswers(p, &q), Answers(d, u, &q)
		for c := range want {
			if math.Abs(got[c]-want[c]) > 1e-12 {
				t.Fatalf("%v cell %d: model %v, enumeration %v", &q, c, got[c], want[c])
			}
		}
	}
	if e, want := expectedSize(l, p), Answers(d, u, &QuerySet{Kind: IndivLevel})[0]; math.Abs(e-want) > 1e-12 {
		t.Fatalf("expected size %v, enumeration %v", e, want)
	}
}

func TestTypedGradientFiniteDifferences(t *testing.T) {
	d := typedTiny()
	l := newLayout(d)
	r := rand.New(rand.NewPCG(10, 11))
	th, p := randomMixture(l, 2, r)
	sets := append(AllKWay(d, 2), AllKWay(d, 1)...)
	for rel := MarriedTo; rel <= HasParent; rel++ {
		sets = append(sets, QuerySet{Kind: RelationLevel, Rel: rel, G: []int{0}, I: []int{1}, I2: []int{1}})
	}
	var ms []measured
	for _, q := range sets {
		nG, nI := q.cells(d)
		mq := q.query(d)
		q.decodeQuery(d, r.IntN(nG*nI), &mq)
		mq.scale = 1.3
		ms = append(ms, measured{q: mq, a: r.Float64()})
	}
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

// typedFromGen encodes generated data as typed households (hhgen puts the
// head first, then the spouse, then children).
func typedFromGen(g *hhgen.Data, K int, ga, ia []int) (*Domain, *Records) {
	d, r := fromGen(g, K, ga, ia)
	for j, b := range ia {
		if b == hhgen.PRel {
			d.Typed, d.Rel, d.RelCodes = true, j, [3]int{hhgen.Head, hhgen.Spouse, hhgen.Child}
		}
	}
	return d, TruncateTyped(d, r)
}

func TestTypedRun(t *testing.T) {
	g, _ := hhgen.Generate(hhgen.Config{Households: 3000, Seed: 12})
	d, recs := typedFromGen(g, 6, []int{hhgen.HUrban, hhgen.HIncome}, []int{hhgen.PRel, hhgen.PSex, hhgen.PAge, hhgen.PEmp})
	if err := recs.Check(d); err != nil {
		t.Fatal(err)
	}
	r, err := HPDFixed.New(toOpts([]synthOption{{"ROUNDS", 30}, {"ITERS", 30}, {"COMPONENTS", 30}}))
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Run(context.Background(), &Input{Domain: d, Data: RecordsSource{recs}, Rho: 0.5,
		Noise: noise.Derive([]byte("0123456789abcdef0123456789abcdef"), 2, "typed")})
	if err != nil {
		t.Fatal(err)
	}
	// Every synthetic household is valid: one head, at most one spouse.
	if err := res.Households.Check(d); err != nil {
		t.Fatal(err)
	}
	uni := &fixedHPD{l: newLayout(d)}
	uni.p = make([]float64, uni.l.L)
	uni.l.softmax(make([]float64, uni.l.L), uni.p)
	base := uni.sample(recs.Households(), rand.New(rand.NewPCG(1, 1)))
	sets := AllRelations(d)
	mx, mean := workloadErr(d, recs, res.Households, sets)
	bmx, bmean := workloadErr(d, recs, base, sets)
	t.Logf("Q_R: max %.4f mean %.4f (uniform: max %.4f mean %.4f)", mx, mean, bmx, bmean)
	if mean > bmean/2 {
		t.Errorf("Q_R no better than uniform")
	}
	if _, err := MWEM.New(nil); err != nil {
		t.Fatal(err)
	}
	mw, _ := MWEM.New(nil)
	if err := mw.Check(&Input{Domain: d, Data: RecordsSource{}, Rho: 1}); err == nil {
		t.Error("mwem accepted typed households")
	}
}
