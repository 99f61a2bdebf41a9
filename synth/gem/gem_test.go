package gem

import (
	"bytes"
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/internal/amloop"
	"github.com/dpsql/dpsql/synth/internal/nn"
	"github.com/dpsql/dpsql/synth/internal/prodq"
	"github.com/dpsql/dpsql/synth/internal/synthtest"
	"github.com/dpsql/dpsql/synth/noise"
)

var secret = []byte("gem test secret, thirty-two bytes")

func testInput(seed int64) *synth.Input {
	return &synth.Input{
		Data:      synthtest.Chain(5, 3000, []int{4, 3, 5, 2, 4}),
		Workload:  synthtest.AllK(5, 2),
		Rho:       0.5,
		Noise:     noise.Derive(secret, seed, "noise"),
		PostNoise: noise.Derive(secret, seed, "post"),
	}
}

var small = []synth.Option{{Name: "ROUNDS", Value: 8}, {Name: "BATCH", Value: 200}, {Name: "LATENT", Value: 16},
	{Name: "HIDDEN", Value: 32}, {Name: "LR", Value: 0.05}, {Name: "MAX_ITERS", Value: 30}}

// checkRows asserts the rows-only invariants: ρ spent exactly, one
// measurement per round, rows in the domain.
func checkRows(t *testing.T, in *synth.Input, res *synth.Result, rounds, rows int) {
	t.Helper()
	if math.Abs(res.RhoUsed-in.Rho) > 1e-12*in.Rho {
		t.Errorf("ρ used %v, want %v", res.RhoUsed, in.Rho)
	}
	if len(res.Rounds) != rounds || res.Model != nil {
		t.Errorf("%d rounds (want %d), model %v", len(res.Rounds), rounds, res.Model != nil)
	}
	dom := in.Data.Domain()
	for i, m := range res.Measurements {
		if len(m.Y) != dom.Cells(m.Attrs) || !(m.Sigma > 0) {
			t.Errorf("measurement %d malformed", i)
		}
	}
	if len(res.Rows) != dom.Len() {
		t.Fatalf("%d columns", len(res.Rows))
	}
	for a, col := range res.Rows {
		if len(col) != rows {
			t.Fatalf("column %d: %d rows, want %d", a, len(col), rows)
		}
		for _, v := range col {
			if int(v) >= dom.Size(a) {
				t.Fatalf("column %d: code %d outside %d", a, v, dom.Size(a))
			}
		}
	}
}

func sets(w []synth.Marginal) [][]int {
	s := make([][]int, len(w))
	for i, m := range w {
		s[i] = m.Attrs
	}
	return s
}

func TestRun(t *testing.T) {
	in := testInput(1)
	r, err := Mechanism{}.New(small)
	if err != nil {
		t.Fatal(err)
	}
	var reports []synth.Status
	in.Progress = func(s synth.Status) { reports = append(reports, s) }
	res, err := r.Run(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	// n̂ is within a few σ·√cells of the 3000 rows.
	checkRows(t, in, res, 8, len(res.Rows[0]))
	if n := len(res.Rows[0]); n < 2900 || n > 3100 {
		t.Errorf("%d rows, want about 3000", n)
	}
	rounds := 0
	for _, s := range reports {
		if s.Phase == "round" {
			rounds++
		}
	}
	if rounds != 8 {
		t.Errorf("%d round reports, want 8", rounds)
	}
	// The chain's adjacent pairs carry the structure: an independent
	// model's error is about 0.3 here (see mwem's test); GEM fits the
	// measured pairs by least squares, and the 3000 sampled rows add
	// about 0.07.
	if e := synthtest.Error(t, in.Data, sets(in.Workload), res.Rows); e > 0.2 {
		t.Errorf("workload error %.4f, want < 0.15", e)
	}
	// The artifact rebuilds the released generator.
	net, err := UnmarshalGenerator(res.Artifact)
	if err != nil {
		t.Fatal(err)
	}
	if net.B != 200 || net.Latent != 16 || !slices.Equal(net.Hidden, []int{32, 32}) {
		t.Errorf("decoded shape %+v B=%d", net.Arch, net.B)
	}
	if !bytes.Equal(MarshalGenerator(net.Arch, zOf(res.Artifact, net), net.Params()), res.Artifact) {
		t.Error("artifact does not round-trip")
	}
	if _, err := UnmarshalGenerator(res.Artifact[:len(res.Artifact)-1]); err == nil {
		t.Error("truncated artifact accepted")
	}
}

// zOf re-reads the latent batch of an artifact (it follows the header).
func zOf(b []byte, n interface{ Rows() int }) []float64 {
	net, _ := UnmarshalGenerator(b)
	hdr := len(b) - 8*(net.B*net.Latent+len(net.Params()))
	z := make([]float64, net.B*net.Latent)
	for i := range z {
		z[i] = math.Float64frombits(uint64(b[hdr+8*i]) | uint64(b[hdr+8*i+1])<<8 | uint64(b[hdr+8*i+2])<<16 |
			uint64(b[hdr+8*i+3])<<24 | uint64(b[hdr+8*i+4])<<32 | uint64(b[hdr+8*i+5])<<40 | uint64(b[hdr+8*i+6])<<48 | uint64(b[hdr+8*i+7])<<56)
	}
	return z
}

// TestDeterministic: with the same released measurements (same noise
// stream) and the same post-processing stream, the rows and the weights
// are identical; another post-processing stream changes them.
func TestDeterministic(t *testing.T) {
	run := func(post string) *synth.Result {
		in := testInput(3)
		in.PostNoise = noise.Derive(secret, 3, post)
		r, _ := Mechanism{}.New(small)
		res, err := r.Run(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	a, b, c := run("p"), run("p"), run("q")
	if !bytes.Equal(a.Artifact, b.Artifact) || !slices.EqualFunc(a.Rows, b.Rows, slices.Equal) {
		t.Error("same seeds, different release")
	}
	if bytes.Equal(a.Artifact, c.Artifact) {
		t.Error("another post-processing seed gave the same generator")
	}
}

func TestPublic(t *testing.T) {
	in := testInput(4)
	in.Rho = 0.002 // little budget: the public pretraining matters
	in.Public = synthtest.Chain(6, 2000, []int{4, 3, 5, 2, 4})
	opts := append(slices.Clone(small), synth.Option{Name: "PRETRAIN_ITERS", Value: 300})
	r, err := PubMechanism{}.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Run(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, in, res, 8, len(res.Rows[0]))
	if e := synthtest.Error(t, in.Data, sets(in.Workload), res.Rows); e > 0.2 {
		t.Errorf("GEM^Pub workload error %.4f, want < 0.15", e)
	}
	// Without public data it is refused before any noise is drawn.
	in2 := testInput(4)
	if _, err := r.Run(context.Background(), in2); err == nil {
		t.Error("gem_pub without public data ran")
	}
	if synth.PublicUseOf(PubMechanism{}) != synth.PublicRequired || synth.PublicUseOf(Mechanism{}) != synth.PublicNone {
		t.Error("public use")
	}
}

func TestCancel(t *testing.T) {
	r, _ := Mechanism{}.New(small)
	synthtest.CheckCancel(t, r, testInput(2))
}

func TestOptions(t *testing.T) {
	for _, o := range [][]synth.Option{
		{{Name: "ROUNDS", Value: 0}}, {{Name: "ALPHA", Value: 1}}, {{Name: "BATCH", Value: 0}},
		{{Name: "NOPE", Value: 1}}, {{Name: "LR", Value: -1}}, {{Name: "PRETRAIN_ITERS", Value: 5}},
		{{Name: "LOSS", Value: 0}}, {{Name: "LOSS", Value: 3}},
	} {
		if _, err := (Mechanism{}).New(o); err == nil {
			t.Errorf("%v accepted", o)
		}
	}
	if _, err := (PubMechanism{}).New([]synth.Option{{Name: "PRETRAIN_ITERS", Value: 5}}); err != nil {
		t.Error(err)
	}
}

// TestBudget: T rounds of one selection and one measurement spend ρ
// exactly, and the workload caps T.
func TestBudget(t *testing.T) {
	for _, rho := range []float64{1e-4, 0.0144, 2} {
		for _, tk := range [][2]int{{1, 1}, {30, 1}, {10, 5}} {
			for _, alpha := range []float64{0.5, 0.67, 0.9} {
				_, eps, sigma := amloop.Budget(rho, tk[0], tk[1], alpha)
				got := float64(tk[0]*tk[1]) * (eps*eps/8 + 1/(2*sigma*sigma))
				if math.Abs(got-rho) > 1e-12*rho {
					t.Errorf("ρ=%v T,K=%v α=%v: spends %v", rho, tk, alpha, got)
				}
			}
		}
	}
	if T, K := amloop.Shape(30, 1, 10); T != 10 || K != 1 {
		t.Errorf("Shape(30,1,10) = %d,%d", T, K)
	}
	in := testInput(5)
	in.Workload = in.Workload[:3]
	r, _ := Mechanism{}.New(small)
	res, err := r.Run(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, in, res, 3, len(res.Rows[0]))
	seen := map[string]bool{}
	for _, m := range res.Measurements {
		k := synth.Key(m.Attrs)
		if seen[k] {
			t.Errorf("%v measured twice", m.Attrs)
		}
		seen[k] = true
	}
}

// TestMemoryRefused: a network that would not fit is refused before any
// noise is drawn (the engine's preflight sees the error).
func TestMemoryRefused(t *testing.T) {
	in := testInput(6)
	r, _ := Mechanism{}.New([]synth.Option{{Name: "BATCH", Value: 100000}, {Name: "HIDDEN", Value: 4096}, {Name: "LAYERS", Value: 8}})
	if _, err := r.Run(context.Background(), in); err == nil || !strings.Contains(err.Error(), "memory") {
		t.Errorf("huge network: %v, want a memory error", err)
	}
}

// TestSquared checks the squared loss on every measured cell (the Gram
// form, on targets thresholded at 0.1) against a brute-force mixture
// marginal, and its gradient against central finite differences in every
// coordinate of the mixture.
func TestSquared(t *testing.T) {
	sizes := []int{3, 2, 4}
	l := prodq.NewLayout(sizes)
	const B = 3
	rng := rand.New(rand.NewPCG(1, 2))
	p := make([]float64, B*l.Width)
	for i := range p {
		p[i] = rng.Float64()
	}
	attrs := [][]int{{0, 2}, {1}, {0, 1, 2}}
	target := make([][]float64, len(attrs))
	for m, a := range attrs {
		target[m] = make([]float64, l.Cells(a))
		for y := range target[m] {
			target[m][y] = rng.Float64() / 4
		}
	}
	net := &nn.Net{}
	net.B = B
	tr := &trainer{net: net, dp: make([]float64, len(p)), sparse: make([]prodq.Sparse, len(attrs))}
	const tau = 0.1
	for m := range attrs {
		tr.sparse[m].Set(target[m], tau)
		for y, v := range target[m] {
			if v <= tau {
				target[m][y] = 0 // what the loss fits
			}
		}
	}
	// brute: the sum over cells of (answer − target)², answers by
	// enumerating each marginal's cells (first attribute slowest).
	brute := func(p []float64) float64 {
		sum := 0.0
		for m, a := range attrs {
			for y := range target[m] {
				rest, v := y, 0.0
				idx := make([]int, len(a))
				for k := len(a) - 1; k >= 0; k-- {
					idx[k] = rest % sizes[a[k]]
					rest /= sizes[a[k]]
				}
				for b := range B {
					pr := 1.0
					for k, at := range a {
						pr *= p[b*l.Width+l.Off[at]+idx[k]]
					}
					v += pr / B
				}
				sum += (v - target[m][y]) * (v - target[m][y])
			}
		}
		return sum
	}
	got := tr.squared(l, p, attrs)
	if want := brute(p); math.Abs(got-want) > 1e-12 {
		t.Fatalf("loss %v, brute force %v", got, want)
	}
	grad := slices.Clone(tr.dp)
	const h = 1e-6
	for i := range p {
		x := p[i]
		p[i] = x + h
		up := brute(p)
		p[i] = x - h
		down := brute(p)
		p[i] = x
		if fd := (up - down) / (2 * h); math.Abs(fd-grad[i]) > 1e-7 {
			t.Errorf("∂loss/∂p[%d] = %v, finite difference %v", i, grad[i], fd)
		}
	}
}

// TestLossL1: Alg. 3's thresholded ℓ1 (LOSS = 1) still runs and fits.
func TestLossL1(t *testing.T) {
	in := testInput(7)
	r, err := Mechanism{}.New(append(slices.Clone(small), synth.Option{Name: "LOSS", Value: 1}))
	if err != nil {
		t.Fatal(err)
	}
	res, err := r.Run(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	checkRows(t, in, res, 8, len(res.Rows[0]))
	if e := synthtest.Error(t, in.Data, sets(in.Workload), res.Rows); e > 0.2 {
		t.Errorf("workload error %.4f, want < 0.2", e)
	}
}

// TestLossL2: the squared loss (LOSS = 2) runs and fits with every cell
// kept (THRESHOLD = 0) and with THRESHOLD = 2 (on this small domain every
// marginal is answered cell by cell, so the targets are not thresholded:
// the same fit).
func TestLossL2(t *testing.T) {
	for _, c := range []float64{0, 2} {
		in := testInput(8)
		r, err := Mechanism{}.New(append(slices.Clone(small), synth.Option{Name: "LOSS", Value: 2},
			synth.Option{Name: "THRESHOLD", Value: c}))
		if err != nil {
			t.Fatal(err)
		}
		res, err := r.Run(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		checkRows(t, in, res, 8, len(res.Rows[0]))
		if e := synthtest.Error(t, in.Data, sets(in.Workload), res.Rows); e > 0.2 {
			t.Errorf("THRESHOLD = %v: workload error %.4f, want < 0.2", c, e)
		}
	}
}

// TestSquaredScale: on a marginal of many cells (here 144 000, full
// adult's reach up to 10^6) a round of squared-loss steps must move the
// generator. The loss is the sum over the cells, not their mean: with the
// mean, the gradient of a start near uniform is about 1e-11 per
// parameter, below Adam's ε = 1e-8, and the generator did not move at all
// (full adult, docs/gem.md "Issue 16, third pass").
func TestSquaredScale(t *testing.T) {
	sizes := []int{60, 60, 40}
	l := prodq.NewLayout(sizes)
	rng := rand.New(rand.NewPCG(3, 4))
	o := &Options{Latent: 8, Hidden: 16, Layers: 1, Batch: 50, LR: 1e-2, MaxIters: 60}
	z := make([]float64, o.Batch*o.Latent)
	for i := range z {
		z[i] = rng.NormFloat64()
	}
	net, err := nn.New(o.Arch(sizes), z, rng)
	if err != nil {
		t.Fatal(err)
	}
	tr := &trainer{stepOffset: -1, o: o, net: net, adam: nn.NewAdam(len(net.Params())), dp: make([]float64, net.B*net.Out()),
		l2: true, sparse: make([]prodq.Sparse, 1)}
	attrs := [][]int{{0, 1, 2}}
	target := make([]float64, l.Cells(attrs[0]))
	target[0] = 0.8 // the mass of one cell, as capital-gain × capital-loss × native-country's
	tr.sparse[0].Set(target, 0)
	var sc prodq.Scratch
	before := l.Answer(nil, &sc, net.Forward(), net.B, attrs[0])[0]
	if err := tr.steps(context.Background(), l, attrs, [][]float64{target}, o.MaxIters, nil); err != nil {
		t.Fatal(err)
	}
	after := l.Answer(nil, &sc, net.Forward(), net.B, attrs[0])[0]
	// A near-uniform start puts about 1e-5 on the cell; 60 steps at this
	// learning rate reach most of the 0.8.
	if before > 0.01 || after < 0.4 {
		t.Errorf("cell 0: %.3g before the steps, %.3g after, want ≥ 0.4 after", before, after)
	}
}

// TestAnchor: at a small budget the public marginals kept in the private
// rounds' loss (ANCHOR) leave GEM^Pub closer to the data than private
// rounds alone, which fit a few very noisy marginals and forget the prior
// on the rest (seeded, summed over two seeds). The public table is
// another sample of the data's distribution.
func TestAnchor(t *testing.T) {
	run := func(anchor float64, seed int64) float64 {
		in := testInput(seed)
		in.Rho = 0.0005
		in.Public = synthtest.Chain(6, 2000, []int{4, 3, 5, 2, 4})
		opts := append(slices.Clone(small), synth.Option{Name: "PRETRAIN_ITERS", Value: 300},
			synth.Option{Name: "ANCHOR", Value: anchor})
		res := synthtest.MustRun(t, PubMechanism{}, opts, in)
		return synthtest.Error(t, in.Data, sets(in.Workload), res.Rows)
	}
	var with, without float64
	for seed := range int64(2) {
		with += run(1, seed)
		without += run(0, seed)
	}
	t.Logf("workload error over 2 seeds: anchored %.4f, private rounds only %.4f", with, without)
	if with >= without {
		t.Errorf("anchored %.4f not below %.4f", with, without)
	}
}
