// Package gem implements GEM and GEM^Pub (Liu, Vietri, Wu, "Iterative
// Methods for Private Synthetic Data", NeurIPS 2021, Sec. 5–6, Alg. 2–3):
// the Adaptive Measurements loop (synth/internal/amloop, with the marginal
// trick: whole workload marginals are selected and measured) whose
// representation is a generator network G_θ evaluated on a fixed batch of
// B latent vectors, i.e. a mixture of B product distributions
// (synth/internal/nn, synth/internal/prodq).
//
// After each round's measurement, GEM-UPDATE takes at most MAX_ITERS Adam
// steps. With LOSS = 2 (Table 6's loss for the marginal trick), each of
// the MAX_ITERS steps is on the squared error summed over every measured
// cell: the least-squares fit to Gaussian measurements, which averages the noise
// over overlapping marginals. Large marginals are fitted in Gram form
// (prodq.SquaredLoss: Σ_y q_y² from B × B Gram matrices, the cross term on
// the non-zero targets only) with their noisy counts not above THRESHOLD·σ
// set to 0 (hard thresholding, post-processing), so a step's cost does not
// grow with the measured cells. LOSS = 2 is the default. LOSS = 1 is
// Alg. 3: each step on the ℓ1 error of the measured cells whose error is at least γ_t —
// at most TOP_K of them, the largest — stopping when none is left, with γ_t
// half an exponential moving average (β = 0.5) of the largest
// measured-cell error at the round's start; it chases the largest noisy
// cells and stops at half the (noise-dominated) maximum, which at small ε
// leaves GEM well behind RAPsoftmax (docs/gem.md). Each round starts a
// fresh Adam with a cosine-annealed learning rate (the reference code).
// The release is the EMA (β = EMA_BETA) of the weights of rounds
// ⌈T/2⌉..T; its rows are drawn by amloop.SampleBalanced (systematic
// sampling inside each component), which removes most of the sampling
// noise the released rows add to the generator's own error.
//
// GEM^Pub (gem_pub) first trains the generator without privacy on the
// public table's workload marginals (PRETRAIN_ITERS steps of the same
// update with γ = 0, each on 32 workload marginals drawn afresh, at a
// constant learning rate), then runs GEM from it with two changes, both
// post-processing: every private step's squared loss also holds 16 public
// marginals drawn afresh, weighted by ANCHOR·(σ/n̂)²·(public rows) per cell
// (the measurements correct the prior instead of replacing it), and n̂ is
// the least-squares scale of the noisy counts against the public
// marginals (amloop.ScaleEstimate) instead of the mean of their totals.
//
// Training randomness (initial weights, the latent batch z) is
// post-processing and comes from in.Post(), so SEED reproduces it given
// the released measurements; privacy noise comes from in.Noise only.
//
// # Options
//
//	ROUNDS          int, default 30: T.
//	ALPHA           float, default 0.5: share of ε₀ on selection.
//	LATENT          int, default 64: dimension of z.
//	HIDDEN          int, default 128: width of each residual block.
//	LAYERS          int, default 2: number of residual blocks.
//	BATCH           int, default 250: B, the rows of z (mixture size; the
//	                paper's 1000 costs 4× the time for little gain here).
//	LR              float, default 1e-3: Adam's learning rate.
//	MAX_ITERS       int, default 100: T_max, GEM-UPDATE steps per round.
//	LOSS            int, default 2: 2 squared error summed over every
//	                measured cell (Table 6), 1 Alg. 3's thresholded ℓ1,
//	                which loses to RAPsoftmax on the reduced adult and to
//	                LOSS = 2 on the full adult (docs/gem.md).
//	THRESHOLD       float, default 2 (LOSS = 2 only): c; before fitting,
//	                the target cells whose noisy count is not above c·σ
//	                are set to 0 (hard thresholding, post-processing).
//	TOP_K           int, default 100: cells per step (the code's max_idxs;
//	                LOSS = 1 only).
//	EMA_BETA        float, default 0.5: weight EMA over the last T/2 rounds.
//	PRETRAIN_ITERS  int, default 500 (gem_pub only): steps, each on 32
//	                workload marginals drawn afresh.
//	ANCHOR          float, default 1 (gem_pub, LOSS = 2 only): weight of
//	                the public marginals in the private rounds' loss, in
//	                units of (σ/n̂)²·(public rows) per cell; 0 turns it off.
package gem

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/internal/amloop"
	"github.com/dpsql/dpsql/synth/internal/nn"
	"github.com/dpsql/dpsql/synth/internal/prodq"
)

// Defaults (see the package documentation and docs/gem.md for how the
// network size was chosen on a 2-core CPU).
const (
	DefaultRounds        = 30
	DefaultAlpha         = 0.5
	DefaultLatent        = 64
	DefaultHidden        = 128
	DefaultLayers        = 2
	DefaultBatch         = 250
	DefaultLR            = 1e-3
	DefaultMaxIters      = 100
	DefaultLoss          = 2
	DefaultTopK          = 100
	DefaultThreshold     = 2
	DefaultEMABeta       = 0.5
	DefaultPretrainIters = 500
	DefaultAnchor        = 1
)

var schema = synth.Schema{
	{Name: "ROUNDS", Kind: synth.Int, Default: "30", Min: 1, Max: 1e5, Doc: "rounds T; each selects and measures one workload marginal"},
	{Name: "ALPHA", Kind: synth.Float, Default: "0.5", Min: 0.01, Max: 0.99, Doc: "share of each round's ε₀ spent on selection"},
	{Name: "LATENT", Kind: synth.Int, Default: "64", Min: 1, Max: 4096, Doc: "dimension of the latent vectors z"},
	{Name: "HIDDEN", Kind: synth.Int, Default: "128", Min: 1, Max: 4096, Doc: "width of each residual block"},
	{Name: "LAYERS", Kind: synth.Int, Default: "2", Min: 0, Max: 8, Doc: "number of residual blocks"},
	{Name: "BATCH", Kind: synth.Int, Default: "250", Min: 1, Max: 1e5, Doc: "B, the fixed latent rows: the mixture's components"},
	{Name: "LR", Kind: synth.Float, Default: "0.001", Min: 1e-7, Max: 1, Doc: "Adam learning rate, cosine-annealed within a round"},
	{Name: "MAX_ITERS", Kind: synth.Int, Default: "100", Min: 1, Max: 1e5, Doc: "T_max, update steps per round"},
	{Name: "LOSS", Kind: synth.Int, Default: "2", Min: 1, Max: 2, Doc: "2: squared error summed over every measured cell (Table 6; large marginals in Gram form with thresholded targets); 1: Alg. 3's ℓ1 on the cells above γ_t"},
	{Name: "THRESHOLD", Kind: synth.Float, Default: "2", Min: 0, Max: 100, Doc: "LOSS = 2: target cells whose noisy count is below THRESHOLD·σ are fitted as 0 (post-processing; 0 keeps every cell)"},
	{Name: "TOP_K", Kind: synth.Int, Default: "100", Min: 1, Max: 1e7, Doc: "largest-error measured cells per update step"},
	{Name: "EMA_BETA", Kind: synth.Float, Default: "0.5", Min: 0, Max: 0.999, Doc: "β of the weight EMA over the last T/2 rounds"},
}

var pubSchema = append(slices.Clone(schema), synth.Param{Name: "PRETRAIN_ITERS", Kind: synth.Int, Default: "500",
	Min: 0, Max: 1e6, Doc: "non-private training steps on the public table's workload marginals"},
	synth.Param{Name: "ANCHOR", Kind: synth.Float, Default: "1", Min: 0, Max: 1e6,
		Doc: "LOSS = 2: weight of the public marginals in every private round's loss, relative to (σ/n̂)²·(public rows) per cell (0: the private measurements only)"})

// Options configures GEM; New fills every field.
type Options struct {
	Rounds        int
	Alpha         float64
	Latent        int
	Hidden        int
	Layers        int
	Batch         int
	LR            float64
	MaxIters      int
	Loss          int
	TopK          int
	Threshold     float64
	EMABeta       float64
	PretrainIters int
	Anchor        float64
	Public        bool // GEM^Pub
}

// Mechanism is GEM as a synth.Mechanism.
type Mechanism struct{}

// PubMechanism is GEM^Pub: GEM started from a generator pretrained on the
// public table.
type PubMechanism struct{}

var (
	_ synth.Mechanism       = Mechanism{}
	_ synth.PublicMechanism = PubMechanism{}
)

// Name returns "gem".
func (Mechanism) Name() string { return "gem" }

// Summary describes GEM in one line.
func (Mechanism) Summary() string {
	return "GEM: adaptive exponential-mechanism selection and Gaussian measurement of workload marginals, fitted by a generator network (a mixture of product distributions) trained on the CPU"
}

// Output is RowsOnly.
func (Mechanism) Output() synth.Output { return synth.RowsOnly }

// Schema declares the options.
func (Mechanism) Schema() synth.Schema { return schema }

// New parses opts.
func (Mechanism) New(opts []synth.Option) (synth.Runner, error) {
	return parse("gem", schema, opts, false)
}

// Name returns "gem_pub".
func (PubMechanism) Name() string { return "gem_pub" }

// Summary describes GEM^Pub in one line.
func (PubMechanism) Summary() string {
	return "GEM^Pub: GEM whose generator is first trained, at no privacy cost, on the workload marginals of a public table (PUBLIC = db.t)"
}

// Output is RowsOnly.
func (PubMechanism) Output() synth.Output { return synth.RowsOnly }

// Schema declares the options.
func (PubMechanism) Schema() synth.Schema { return pubSchema }

// PublicData is PublicRequired.
func (PubMechanism) PublicData() synth.PublicUse { return synth.PublicRequired }

// New parses opts.
func (PubMechanism) New(opts []synth.Option) (synth.Runner, error) {
	return parse("gem_pub", pubSchema, opts, true)
}

func parse(name string, s synth.Schema, opts []synth.Option, public bool) (*Options, error) {
	v, err := s.Parse(name, opts)
	if err != nil {
		return nil, err
	}
	return &Options{
		Rounds: v.Int("ROUNDS", DefaultRounds), Alpha: v.Float("ALPHA", DefaultAlpha),
		Latent: v.Int("LATENT", DefaultLatent), Hidden: v.Int("HIDDEN", DefaultHidden), Layers: v.Int("LAYERS", DefaultLayers),
		Batch: v.Int("BATCH", DefaultBatch), LR: v.Float("LR", DefaultLR), MaxIters: v.Int("MAX_ITERS", DefaultMaxIters),
		Loss: v.Int("LOSS", DefaultLoss), TopK: v.Int("TOP_K", DefaultTopK), Threshold: v.Float("THRESHOLD", DefaultThreshold), EMABeta: v.Float("EMA_BETA", DefaultEMABeta),
		PretrainIters: v.Int("PRETRAIN_ITERS", DefaultPretrainIters), Anchor: v.Float("ANCHOR", DefaultAnchor), Public: public,
	}, nil
}

func (o *Options) name() string {
	if o.Public {
		return "gem_pub"
	}
	return "gem"
}

// Arch is the generator's shape for a domain with the given attribute sizes.
func (o *Options) Arch(sizes []int) nn.Arch {
	hidden := make([]int, o.Layers)
	for i := range hidden {
		hidden[i] = o.Hidden
	}
	return nn.Arch{Latent: o.Latent, Hidden: hidden, Blocks: sizes}
}

// Run runs GEM (or GEM^Pub) on in.
func (o *Options) Run(ctx context.Context, in *synth.Input) (*synth.Result, error) {
	name := o.name()
	w, err := in.Check(true)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	dom := in.Data.Domain()
	if o.Public {
		if in.Public == nil {
			return nil, fmt.Errorf("%s: %w: no public table (PUBLIC = db.t)", name, synth.ErrInvalidInput)
		}
		if !in.Public.Domain().Equal(dom) {
			return nil, fmt.Errorf("%s: %w: the public table's domain differs from the data's", name, synth.ErrInvalidInput)
		}
		if in.Public.Rows() == 0 {
			return nil, fmt.Errorf("%s: %w: the public table is empty", name, synth.ErrInvalidInput)
		}
	}
	cfg := amloop.Config{Name: name, Rounds: o.Rounds, PerRound: 1, Alpha: o.Alpha}
	if err := amloop.CheckBudget(in, cfg, w); err != nil {
		return nil, err
	}
	sizes := make([]int, dom.Len())
	for a := range sizes {
		sizes[a] = dom.Size(a)
	}
	arch := o.Arch(sizes)
	B := float64(o.Batch)
	// Parameters with gradients, Adam's moments and the EMA; activations
	// and their gradients; probabilities and theirs; the scratch.
	mem := 8*(5*float64(arch.NumParams())+2*B*float64(arch.Width())+2*B*float64(arch.Out())+B*float64(o.Latent)) +
		amloop.ScratchBytes(sizes, w, o.Batch)
	if o.Loss == 2 {
		// Gram matrices and their gradients, p and its gradient transposed.
		mem += 8 * (2*B*B*float64(len(sizes)) + 2*B*float64(arch.Out()))
	}
	if err := amloop.CheckMemory(name, mem); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return &synth.Result{}, fmt.Errorf("%s: %w", name, err)
	}
	rng := in.Post()
	z := make([]float64, o.Batch*o.Latent)
	for i := range z {
		z[i] = rng.NormFloat64()
	}
	net, err := nn.New(arch, z, rng)
	if err != nil {
		return nil, fmt.Errorf("%s: %w: %v", name, synth.ErrInvalidInput, err)
	}
	tr := &trainer{stepOffset: -1, o: o, net: net, adam: nn.NewAdam(len(net.Params())), dp: make([]float64, net.B*net.Out())}
	in.Report(synth.Status{Phase: "init", ModelSize: float64(8*len(net.Params())) / (1 << 20)})
	if o.Public {
		// The public table's workload marginals: the pretraining's targets
		// and the prior of n̂ (amloop.ScaleEstimate: n̂ from the total of
		// the selected marginals was 10 % high at ε = 0.1, because GEM^Pub
		// selects large marginals; docs/gem.md).
		sets := make([][]int, len(w))
		for i, m := range w {
			sets[i] = m.Attrs
		}
		pub, err := in.Public.Marginals(ctx, sets)
		if err != nil {
			return &synth.Result{}, fmt.Errorf("%s: public marginals: %w", name, err)
		}
		cfg.Prior = amloop.NewPrior(pub)
		if cfg.Prior == nil {
			return &synth.Result{}, fmt.Errorf("%s: %w: the public table needs at least two rows", name, synth.ErrInvalidInput)
		}
		if o.PretrainIters > 0 {
			if err := tr.pretrain(ctx, sets, cfg.Prior.Shape, prodq.NewLayout(sizes), rng); err != nil {
				return &synth.Result{}, fmt.Errorf("%s: pretraining: %w", name, err)
			}
		}
		if o.Anchor > 0 && o.Loss == 2 {
			tr.anchor = &anchor{sets: sets, target: make([]prodq.Sparse, len(sets)), rows: float64(in.Public.Rows()), rng: rng}
			for i, q := range cfg.Prior.Shape {
				tr.anchor.target[i].Set(q, 0)
			}
		}
	}
	var ema []float64
	res, st, err := amloop.Run(ctx, in, cfg, w, net, func(ctx context.Context, st *amloop.State) error {
		if err := tr.round(ctx, st); err != nil {
			return err
		}
		if 2*st.Round >= st.Rounds {
			if ema == nil {
				ema = slices.Clone(net.Params())
			} else {
				nn.EMA(ema, net.Params(), o.EMABeta)
			}
		}
		return nil
	})
	if err != nil {
		res.Rows = nil
		return res, err
	}
	copy(net.Params(), ema)
	p := net.Forward()
	in.Report(synth.Status{Phase: "final", Round: len(res.Rounds), RhoUsed: res.RhoUsed})
	res.Rows = amloop.SampleBalanced(st.Layout, p, net.B, amloop.OutRows(in, st.NHat), rng)
	res.Artifact = MarshalGenerator(net.Arch, z, ema)
	res.Note = fmt.Sprintf("%s: %d rounds, B=%d, %d parameters, n̂=%.0f (from the totals: %.0f)", name, len(res.Rounds), net.B, len(ema), st.NHat, st.NHatTotal)
	return res, nil
}

// trainer runs GEM-UPDATE on one network.
type trainer struct {
	o     *Options
	net   *nn.Net
	adam  *nn.Adam
	dp    []float64
	ans   [][]float64
	grad  [][]float64
	cells []cellErr
	// stepOffset < 0: a GEM round (cosine-annealed learning rate);
	// otherwise pretraining (constant rate).
	stepOffset int
	touched    []bool
	emaErr     float64
	// l2: the round's loss is the squared error on every measured cell
	// (LOSS = 2; pretraining always uses the ℓ1 steps).
	l2 bool
	sc prodq.Scratch
	// sparse: the round's targets with the cells not above THRESHOLD·σ/n̂
	// set to 0 (LOSS = 2).
	sparse []prodq.Sparse
	forms  []bool
	gs     prodq.GramScratch
	// anchor: GEM^Pub's public marginals, kept in the private rounds' loss.
	anchor *anchor
}

// anchor keeps the public table's workload marginals in GEM^Pub's private
// rounds (LOSS = 2): each step adds w·Σ_y (q_y − q̂_y)² over anchorBatch
// public marginals drawn afresh, scaled by |W|/anchorBatch so that it is
// an unbiased estimate of the sum over the whole workload. Without it the
// rounds fit the few measured marginals and the generator forgets the
// prior on the others: at ε = 0.1 three private rounds took GEM^Pub from
// the pretrained generator's max error of 0.038 to 0.066 (docs/gem.md).
// The weight is the ratio of the two terms' per-cell noise: a measured
// target has variance (σ/n̂)², a public cell q̂_y at most 1/(public rows)
// (p(1 − p)/m ≤ p/m), so the public term gets ANCHOR·(σ/n̂)²·m per cell,
// the least-squares combination when ANCHOR = 1 and the public table is a
// sample of the private distribution. It weighs most at small ε and
// vanishes as σ/n̂ → 0; both σ and n̂ are public (post-processing).
type anchor struct {
	sets   [][]int
	target []prodq.Sparse
	rows   float64
	rng    *rand.Rand
	w      float64 // this round's weight per cell, scaled to the workload
	bs     [][]int
	bt     []prodq.Sparse
}

// anchorBatch is the number of public marginals in each step's anchor.
const anchorBatch = 16

// draw picks the step's batch of public marginals (post-processing
// randomness).
func (a *anchor) draw() {
	n := min(anchorBatch, len(a.sets))
	a.bs, a.bt = a.bs[:0], a.bt[:0]
	for range n {
		k := a.rng.IntN(len(a.sets))
		a.bs = append(a.bs, a.sets[k])
		a.bt = append(a.bt, a.target[k])
	}
}

type cellErr struct {
	m, y int
	c    float64 // signed error target − answer
}

// round is GEM-UPDATE (Alg. 3) for round st.Round.
func (tr *trainer) round(ctx context.Context, st *amloop.State) error {
	tr.adam.Reset()
	if tr.o.Loss == 2 {
		tr.l2 = true
		defer func() { tr.l2 = false }()
		// Hard thresholding of the noisy counts (post-processing), only
		// for the marginals whose quadratic term is in Gram form: most
		// cells of a large marginal are 0, and each cell kept only for its
		// noise costs the cross term B·|r| operations per step. A marginal
		// answered cell by cell gains nothing from sparsity and keeps
		// every cell (the exact least-squares fit). n̂ changes every
		// round, so the sparse targets are rebuilt.
		tau := tr.o.Threshold * st.Sigma() / st.NHat
		if a := tr.anchor; a != nil {
			r := st.Sigma() / st.NHat
			a.w = tr.o.Anchor * r * r * a.rows * float64(len(a.sets)) / float64(min(anchorBatch, len(a.sets)))
		}
		for len(tr.sparse) < len(st.Target) {
			tr.sparse = append(tr.sparse, prodq.Sparse{})
		}
		tr.forms = st.Layout.Forms(tr.forms, tr.net.B, st.Attrs)
		for m, t := range st.Target {
			if tr.forms[m] {
				tr.sparse[m].Set(t, tau)
			} else {
				tr.sparse[m].Set(t, 0)
			}
		}
	}
	first := true
	return tr.steps(ctx, st.Layout, st.Attrs, st.Target, tr.o.MaxIters, func(maxErr float64) float64 {
		if first {
			first = false
			if st.Round == 1 {
				tr.emaErr = maxErr
			} else {
				tr.emaErr = 0.5*tr.emaErr + 0.5*maxErr
			}
		}
		return 0.5 * tr.emaErr
	})
}

// pretrain fits the generator to the public table's workload marginals
// pub (normalised, one per set).
func (tr *trainer) pretrain(ctx context.Context, sets [][]int, pub [][]float64, l *prodq.Layout, rng *rand.Rand) error {
	tr.adam.Reset()
	tr.stepOffset = 0 // a constant learning rate
	defer func() { tr.stepOffset = -1 }()
	if len(sets) <= pretrainBatch {
		return tr.steps(ctx, l, sets, pub, tr.o.PretrainIters, func(float64) float64 { return 0 })
	}
	// Each step looks at pretrainBatch workload marginals drawn afresh
	// (post-processing randomness): answering all of them every step costs
	// B·Σ cells, minutes per hundred steps on a wide table.
	perm := make([]int, len(sets))
	bs, bt := make([][]int, pretrainBatch), make([][]float64, pretrainBatch)
	for range tr.o.PretrainIters {
		for j := range perm {
			perm[j] = j
		}
		for j := range pretrainBatch {
			k := j + rng.IntN(len(perm)-j)
			perm[j], perm[k] = perm[k], perm[j]
			bs[j], bt[j] = sets[perm[j]], pub[perm[j]]
		}
		if err := tr.steps(ctx, l, bs, bt, 1, func(float64) float64 { return 0 }); err != nil {
			return err
		}
	}
	return nil
}

// pretrainBatch is the number of public workload marginals per pretraining
// step.
const pretrainBatch = 32

// steps takes at most iters Adam steps on the mean absolute error of the
// TOP_K largest-error cells whose error is at least gamma(maxErr), where
// maxErr is the largest error before the step; it stops when no cell is
// left.
func (tr *trainer) steps(ctx context.Context, l *prodq.Layout, attrs [][]int, target [][]float64, iters int, gamma func(maxErr float64) float64) error {
	net := tr.net
	for len(tr.ans) < len(attrs) {
		tr.ans = append(tr.ans, nil)
		tr.grad = append(tr.grad, nil)
	}
	for i := range iters {
		if err := ctx.Err(); err != nil {
			return err
		}
		p := net.Forward()
		if tr.l2 {
			// Every round takes all iters steps (Alg. 3's T_max), with no
			// plateau rule: a fresh Adam's first steps often raise the loss,
			// and the newly measured marginal is a small part of the sum,
			// so RAP's rule (no 1e-4 gain in 10 steps) ended rounds after
			// 11 steps with that marginal still unfitted (docs/gem.md).
			if tr.squared(l, p, attrs) < 1e-12 {
				return nil
			}
			net.Backward(tr.dp)
			tr.adam.Step(net.Params(), net.Grads(), nn.Cosine(tr.o.LR, 1e-8, i, iters))
			continue
		}
		maxErr := 0.0
		tr.cells = tr.cells[:0]
		for m, a := range attrs {
			tr.ans[m] = l.Answer(tr.ans[m], &tr.sc, p, net.B, a)
			for y, v := range tr.ans[m] {
				maxErr = max(maxErr, math.Abs(target[m][y]-v))
			}
		}
		g := gamma(maxErr)
		for m := range attrs {
			for y, v := range tr.ans[m] {
				if c := target[m][y] - v; math.Abs(c) >= g && c != 0 {
					tr.cells = append(tr.cells, cellErr{m, y, c})
				}
			}
		}
		if len(tr.cells) == 0 {
			return nil
		}
		if len(tr.cells) > tr.o.TopK {
			slices.SortFunc(tr.cells, func(a, b cellErr) int {
				if d := math.Abs(b.c) - math.Abs(a.c); d != 0 {
					return int(math.Copysign(1, d))
				}
				return 0
			})
			tr.cells = tr.cells[:tr.o.TopK]
		}
		// loss = (1/|J|) Σ_J |c_j| with c = target − answer:
		// ∂loss/∂answer_j = −sign(c_j)/|J|.
		touched := tr.touched[:0]
		for range attrs {
			touched = append(touched, false)
		}
		tr.touched = touched
		inv := 1 / float64(len(tr.cells))
		for _, c := range tr.cells {
			if !touched[c.m] {
				touched[c.m] = true
				tr.grad[c.m] = grow(tr.grad[c.m], len(tr.ans[c.m]))
				clear(tr.grad[c.m])
			}
			tr.grad[c.m][c.y] = -math.Copysign(inv, c.c)
		}
		clear(tr.dp)
		for m := range attrs {
			if touched[m] {
				l.Backward(tr.dp, &tr.sc, p, net.B, attrs[m], tr.grad[m])
			}
		}
		net.Backward(tr.dp)
		lr := tr.o.LR
		if tr.stepOffset < 0 {
			lr = nn.Cosine(tr.o.LR, 1e-8, i, iters)
		}
		tr.adam.Step(net.Params(), net.Grads(), lr)
	}
	return nil
}

// squared returns the squared error of the mixture p's answers summed
// over every cell of the measured marginals against the sparse targets
// tr.sparse and leaves its gradient with respect to p in tr.dp (the Gram
// form of prodq.SquaredLoss: its cost does not grow with the cells). The
// sum, not the mean over cells (RAP's loss): Adam is invariant to the
// loss's scale only while the gradients are well above its ε = 1e-8, and
// the mean over the up to 10^6 cells of each full-adult marginal put them
// near 1e-11, where the generator did not move at all.
func (tr *trainer) squared(l *prodq.Layout, p []float64, attrs [][]int) float64 {
	clear(tr.dp)
	loss := l.SquaredLoss(tr.dp, &tr.gs, p, tr.net.B, attrs, tr.sparse[:len(attrs)], 1)
	if a := tr.anchor; a != nil && a.w > 0 {
		a.draw()
		loss += l.SquaredLoss(tr.dp, &tr.gs, p, tr.net.B, a.bs, a.bt, a.w)
	}
	return loss
}

func grow(b []float64, n int) []float64 {
	if cap(b) < n {
		return make([]float64, n)
	}
	return b[:n]
}
