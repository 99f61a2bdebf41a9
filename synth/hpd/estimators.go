package hpd

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
)

// estimator is the model family of an AM run: it answers query sets,
// refits to the measurements so far, and samples households. Everything it
// does is post-processing of released values.
type estimator interface {
	answers(q *QuerySet) []float64 // per household
	fit(ctx context.Context, ms []measured) error
	sample(n int, r *rand.Rand) *Records
	expectedSize() float64
}

// adam is the Adam optimizer over one parameter vector.
type adam struct {
	lr, b1, b2 float64
	m, v       []float64
	t          int
}

func newAdam(n int, lr float64) *adam {
	return &adam{lr: lr, b1: 0.9, b2: 0.999, m: make([]float64, n), v: make([]float64, n)}
}

func (a *adam) step(x, g []float64) {
	a.t++
	c1 := 1 - math.Pow(a.b1, float64(a.t))
	c2 := 1 - math.Pow(a.b2, float64(a.t))
	for i := range x {
		a.m[i] = a.b1*a.m[i] + (1-a.b1)*g[i]
		a.v[i] = a.b2*a.v[i] + (1-a.b2)*g[i]*g[i]
		x[i] -= a.lr * (a.m[i] / c1) / (math.Sqrt(a.v[i]/c2) + 1e-8)
	}
}

// fixedHPD is HPD-Fixed: the logits are the parameters.
type fixedHPD struct {
	l            *layout
	theta, p, gp []float64
	opt          *adam
	iters        int
}

func newFixed(d *Domain, M, iters int, lr float64, r *rand.Rand) *fixedHPD {
	l := newLayout(d)
	f := &fixedHPD{l: l, theta: make([]float64, M*l.L), p: make([]float64, M*l.L), gp: make([]float64, M*l.L),
		opt: newAdam(M*l.L, lr), iters: iters}
	// Small random logits break the symmetry between components.
	for i := range f.theta {
		f.theta[i] = 0.1 * r.NormFloat64()
	}
	l.softmax(f.theta, f.p)
	return f
}

func (f *fixedHPD) answers(q *QuerySet) []float64 { return f.l.setAnswers(f.p, q) }

func (f *fixedHPD) fit(ctx context.Context, ms []measured) error {
	for it := range f.iters {
		if it%16 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		f.l.lossGrad(f.p, ms, f.gp)
		f.l.softmaxBack(f.p, f.gp)
		f.opt.step(f.theta, f.gp)
		f.l.softmax(f.theta, f.p)
	}
	return nil
}

func (f *fixedHPD) sample(n int, r *rand.Rand) *Records { return sampleHPD(f.l, f.p, n, r) }

func (f *fixedHPD) expectedSize() float64 { return expectedSize(f.l, f.p) }

func expectedSize(l *layout, p []float64) float64 {
	M := len(p) / l.L
	e := 0.0
	if l.typed {
		for m := range M {
			c := p[m*l.L:]
			e += 1 + c[l.psOff+1]
			for n := range l.d.K - 1 {
				e += float64(n) * c[l.ncOff+n]
			}
		}
		return e / float64(M)
	}
	for m := range M {
		for s := range l.d.K {
			e += float64(s+1) * p[m*l.L+l.sOff+s]
		}
	}
	return e / float64(M)
}

// sampleHPD draws n households from the mixture p (Algorithm 2): a uniform
// component m, then the size, group values and each member's values from
// m's distributions.
func sampleHPD(l *layout, p []float64, n int, r *rand.Rand) *Records {
	d := l.d
	M := len(p) / l.L
	out := &Records{NG: len(d.Group), NI: len(d.Indiv), Off: make([]int32, 1, n+1)}
	draw := func(c []float64, off, size int) uint16 {
		u := r.Float64()
		for v := range size - 1 {
			u -= c[off+v]
			if u < 0 {
				return uint16(v)
			}
		}
		return uint16(size - 1)
	}
	for range n {
		c := p[r.IntN(M)*l.L:]
		var s int
		if l.typed {
			// head, then spouse slot 1 if present, then children from slot 2.
			sp := int(draw(c, l.psOff, 2))
			nc := int(draw(c, l.ncOff, d.K-1))
			for a, sz := range d.Group {
				out.G = append(out.G, draw(c, l.gOff[a], sz))
			}
			slots := []int{0}
			if sp == 1 {
				slots = append(slots, 1)
			}
			for j := range nc {
				slots = append(slots, 2+j)
			}
			for _, k := range slots {
				for b, sz := range d.Indiv {
					out.P = append(out.P, draw(c, l.iOff[k][b], sz))
				}
			}
			out.Off = append(out.Off, out.Off[len(out.Off)-1]+int32(len(slots)))
			continue
		}
		s = int(draw(c, l.sOff, d.K)) + 1
		for a, sz := range d.Group {
			out.G = append(out.G, draw(c, l.gOff[a], sz))
		}
		for k := range s {
			for b, sz := range d.Indiv {
				out.P = append(out.P, draw(c, l.iOff[k][b], sz))
			}
		}
		out.Off = append(out.Off, out.Off[len(out.Off)-1]+int32(s))
	}
	return out
}

// genHPD is HPD-Gen: a one-hidden-layer ReLU network maps Gaussian noise z
// (one row per mixture component) to the logits of every block.
type genHPD struct {
	l                *layout
	M, dz, h         int
	w                []float64 // W1 (h×dz), b1 (h), W2 (L×h), b2 (L)
	gw               []float64
	z, hid, theta, p []float64
	gp, gh           []float64
	opt              *adam
	iters            int
	r                *rand.Rand
}

func newGen(d *Domain, M, iters, hidden int, lr float64, r *rand.Rand) *genHPD {
	l := newLayout(d)
	g := &genHPD{l: l, M: M, dz: 16, h: hidden, iters: iters, r: r}
	n := g.h*g.dz + g.h + l.L*g.h + l.L
	g.w, g.gw = make([]float64, n), make([]float64, n)
	s1, s2 := math.Sqrt(2/float64(g.dz)), math.Sqrt(1/float64(g.h))
	for i := range g.h * g.dz {
		g.w[i] = s1 * r.NormFloat64()
	}
	w2 := g.h*g.dz + g.h
	for i := range l.L * g.h {
		g.w[w2+i] = 0.1 * s2 * r.NormFloat64()
	}
	g.z, g.hid = make([]float64, M*g.dz), make([]float64, M*g.h)
	g.theta, g.p, g.gp = make([]float64, M*l.L), make([]float64, M*l.L), make([]float64, M*l.L)
	g.gh = make([]float64, M*g.h)
	g.opt = newAdam(n, lr)
	g.forward()
	return g
}

// forward draws fresh noise and computes the mixture p.
func (g *genHPD) forward() {
	for i := range g.z {
		g.z[i] = g.r.NormFloat64()
	}
	g.recompute()
}

// recompute maps the current noise g.z to the mixture p.
func (g *genHPD) recompute() {
	L := g.l.L
	W1, b1 := g.w[:g.h*g.dz], g.w[g.h*g.dz:g.h*g.dz+g.h]
	W2, b2 := g.w[g.h*g.dz+g.h:g.h*g.dz+g.h+L*g.h], g.w[g.h*g.dz+g.h+L*g.h:]
	for m := range g.M {
		z, hid := g.z[m*g.dz:(m+1)*g.dz], g.hid[m*g.h:(m+1)*g.h]
		for j := range g.h {
			s := b1[j]
			for i, x := range z {
				s += W1[j*g.dz+i] * x
			}
			hid[j] = max(s, 0)
		}
		th := g.theta[m*L : (m+1)*L]
		for o := range L {
			s := b2[o]
			row := W2[o*g.h : (o+1)*g.h]
			for j, x := range hid {
				s += row[j] * x
			}
			th[o] = s
		}
	}
	g.l.softmax(g.theta, g.p)
}

// backward turns g.gp (gradient w.r.t. the logits) into g.gw.
func (g *genHPD) backward() {
	L := g.l.L
	clear(g.gw)
	W1 := g.w[:g.h*g.dz]
	W2 := g.w[g.h*g.dz+g.h : g.h*g.dz+g.h+L*g.h]
	gW1, gb1 := g.gw[:g.h*g.dz], g.gw[g.h*g.dz:g.h*g.dz+g.h]
	gW2, gb2 := g.gw[g.h*g.dz+g.h:g.h*g.dz+g.h+L*g.h], g.gw[g.h*g.dz+g.h+L*g.h:]
	_ = W1
	clear(g.gh)
	for m := range g.M {
		gt, hid, gh := g.gp[m*L:(m+1)*L], g.hid[m*g.h:(m+1)*g.h], g.gh[m*g.h:(m+1)*g.h]
		for o, x := range gt {
			if x == 0 {
				continue
			}
			gb2[o] += x
			row, grow := W2[o*g.h:(o+1)*g.h], gW2[o*g.h:(o+1)*g.h]
			for j := range g.h {
				grow[j] += x * hid[j]
				gh[j] += x * row[j]
			}
		}
		z := g.z[m*g.dz : (m+1)*g.dz]
		for j := range g.h {
			if hid[j] <= 0 {
				continue
			}
			gb1[j] += gh[j]
			for i, x := range z {
				gW1[j*g.dz+i] += gh[j] * x
			}
		}
	}
}

func (g *genHPD) answers(q *QuerySet) []float64 { return g.l.setAnswers(g.p, q) }

func (g *genHPD) fit(ctx context.Context, ms []measured) error {
	for it := range g.iters {
		if it%16 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		g.forward()
		g.l.lossGrad(g.p, ms, g.gp)
		g.l.softmaxBack(g.p, g.gp)
		g.backward()
		g.opt.step(g.w, g.gw)
	}
	g.forward()
	return nil
}

func (g *genHPD) sample(n int, r *rand.Rand) *Records {
	// Each batch of M households comes from a fresh batch of noise.
	out := &Records{NG: len(g.l.d.Group), NI: len(g.l.d.Indiv), Off: []int32{0}}
	saved := g.r
	g.r = r
	defer func() { g.r = saved; g.forward() }()
	for n > 0 {
		g.forward()
		b := min(n, g.M)
		part := sampleHPD(g.l, g.p, b, r)
		base := out.Off[len(out.Off)-1]
		out.G = append(out.G, part.G...)
		out.P = append(out.P, part.P...)
		for _, o := range part.Off[1:] {
			out.Off = append(out.Off, base+o)
		}
		n -= b
	}
	return out
}

func (g *genHPD) expectedSize() float64 { return expectedSize(g.l, g.p) }

// MaxUniverse is the largest explicit universe the mwem baseline accepts:
// d_G · Σ_{s=1..K} d_I^s households.
const MaxUniverse = 1 << 21

// universeSize returns |𝒳| (households with 1..K ordered persons), or an
// error above MaxUniverse.
func universeSize(d *Domain) (int, error) {
	dG, dI := 1.0, 1.0
	for _, n := range d.Group {
		dG *= float64(n)
	}
	for _, n := range d.Indiv {
		dI *= float64(n)
	}
	tot, pw := 0.0, 1.0
	for range d.K {
		pw *= dI
		tot += dG * pw
	}
	if tot > MaxUniverse {
		return 0, fmt.Errorf("hpd: mwem's explicit universe has %.3g households (limit %d): use hpd_fixed, or fewer attributes or a smaller K", tot, MaxUniverse)
	}
	return int(tot), nil
}

// universe enumerates every household of 1..K persons, uniform weights.
func universe(d *Domain) (*Records, error) {
	n, err := universeSize(d)
	if err != nil {
		return nil, err
	}
	r := &Records{NG: len(d.Group), NI: len(d.Indiv), Off: make([]int32, 1, n+1), W: make([]float64, n)}
	g := make([]uint16, len(d.Group))
	for i := range r.W {
		r.W[i] = 1 / float64(n)
	}
	var persons func(left int, members []uint16)
	var cur []uint16
	// iterate group values × sizes × member tuples
	var groups func(a int)
	groups = func(a int) {
		if a == len(d.Group) {
			for s := 1; s <= d.K; s++ {
				persons(s, cur[:0])
			}
			return
		}
		for v := range d.Group[a] {
			g[a] = uint16(v)
			groups(a + 1)
		}
	}
	// person is one buffer per slot: a deeper slot must not overwrite the
	// values of the slot enumerating around it.
	var personVals func(b, left int, members, person []uint16)
	personVals = func(b, left int, members, person []uint16) {
		if b == len(d.Indiv) {
			persons(left-1, append(members, person...))
			return
		}
		for v := range d.Indiv[b] {
			person[b] = uint16(v)
			personVals(b+1, left, members, person)
		}
	}
	persons = func(left int, members []uint16) {
		if left == 0 {
			r.G = append(r.G, g...)
			r.P = append(r.P, members...)
			r.Off = append(r.Off, r.Off[len(r.Off)-1]+int32(len(members)/max(len(d.Indiv), 1)))
			return
		}
		if len(d.Indiv) == 0 {
			persons(left-1, members)
			return
		}
		personVals(0, left, members, make([]uint16, len(d.Indiv)))
	}
	groups(0)
	return r, nil
}

// explicit is the MWEM baseline: a distribution over the whole universe.
type explicit struct {
	d      *Domain
	u      *Records
	passes int
}

func newExplicit(d *Domain, passes int) (*explicit, error) {
	u, err := universe(d)
	if err != nil {
		return nil, err
	}
	return &explicit{d: d, u: u, passes: passes}, nil
}

func (x *explicit) answers(q *QuerySet) []float64 { return Answers(x.d, x.u, q) }

// fit runs passes of multiplicative-weights updates over the measurements:
// A(x) ∝ A(x)·exp(φ(x)(a − q(A))/(2·B²)) with φ(x)/B ∈ [0,1] (B = 1 for Q_G,
// K for Q_I: the spec's rescaling of individual-level queries).
func (x *explicit) fit(ctx context.Context, ms []measured) error {
	phi := make([]float64, len(x.u.W))
	for range x.passes {
		for i := range ms {
			if err := ctx.Err(); err != nil {
				return err
			}
			q := &ms[i].q
			f := 0.0
			for h := range x.u.W {
				phi[h] = queryValue(x.d, x.u, h, q)
				f += x.u.W[h] * phi[h]
			}
			eta := (ms[i].a - f) / (2 * q.bound * q.bound)
			tot := 0.0
			for h, w := range x.u.W {
				x.u.W[h] = w * math.Exp(eta*phi[h])
				tot += x.u.W[h]
			}
			for h := range x.u.W {
				x.u.W[h] /= tot
			}
		}
	}
	return nil
}

func (x *explicit) sample(n int, r *rand.Rand) *Records {
	cum := make([]float64, len(x.u.W))
	s := 0.0
	for i, w := range x.u.W {
		s += w
		cum[i] = s
	}
	out := &Records{NG: x.u.NG, NI: x.u.NI, Off: []int32{0}}
	for range n {
		u := r.Float64() * s
		lo, hi := 0, len(cum)-1
		for lo < hi {
			mid := (lo + hi) / 2
			if cum[mid] > u {
				hi = mid
			} else {
				lo = mid + 1
			}
		}
		out.G = append(out.G, x.u.G[lo*x.u.NG:(lo+1)*x.u.NG]...)
		a, b := x.u.Off[lo], x.u.Off[lo+1]
		out.P = append(out.P, x.u.P[int(a)*x.u.NI:int(b)*x.u.NI]...)
		out.Off = append(out.Off, out.Off[len(out.Off)-1]+b-a)
	}
	return out
}

func (x *explicit) expectedSize() float64 {
	e := 0.0
	for h, w := range x.u.W {
		e += w * float64(x.u.Off[h+1]-x.u.Off[h])
	}
	return e
}

// queryValue is q's value on household h of r: 0/1 for a group-level query,
// the number of matching persons for an individual-level one.
func queryValue(d *Domain, r *Records, h int, q *query) float64 {
	for j, a := range q.gA {
		if int(r.G[h*r.NG+a]) != q.gV[j] {
			return 0
		}
	}
	n := 0.0
	for p := r.Off[h]; p < r.Off[h+1]; p++ {
		ok := true
		for j, b := range q.iA {
			if int(r.P[int(p)*r.NI+b]) != q.iV[j] {
				ok = false
				break
			}
		}
		if ok {
			if q.kind == GroupLevel {
				return 1
			}
			n++
		}
	}
	return n
}
