// Package rap implements RAP (Aydore et al., ICML 2021) and RAPsoftmax
// (Liu, Vietri, Wu, NeurIPS 2021, App. A.2, D.3) in the Adaptive
// Measurements loop (synth/internal/amloop, marginal trick): each of T
// rounds selects K workload marginals with the exponential mechanism and
// measures them with Gaussian noise, then fits a relaxed table of N'
// rows to all measurements so far by Adam on the squared error
// Σ (q(D) − ã)² over every measured cell.
//
//   - rap: the relaxed table is D ∈ [−1, 1]^{N'×d'} in one-hot space,
//     initialised uniformly, its answers (1/N') Σ_rows Π_{j∈S} D[row, j],
//     clipped to [−1, 1] after every step.
//   - rap_softmax: D = softmax per attribute block of free logits M, so
//     every row is a product distribution (GEM with the generator replaced
//     by a parameter matrix).
//
// Each round runs at most MAX_ITERS Adam steps and stops early when the
// loss is below 1e-8 or has not improved by 1e-4 (relative) for 10 steps
// (the reference code's plateau rule). The loss and its gradient come from
// prodq.FitLoss, which evaluates large marginals' squared error in Gram form
// (the same loss, fewer multiply-adds). The release is the last relaxed
// table (Result.Artifact); the synthetic rows pick a relaxed row uniformly
// and sample every attribute from its block: RAPsoftmax's probabilities,
// and RAP's values clipped at 0 and renormalised (uniform if all are ≤ 0),
// the randomized rounding of a relaxed row.
//
// # Options
//
//	ROUNDS     int, default 10: T.
//	PER_ROUND  int, default 5: K, marginals selected per round.
//	ALPHA      float, default 0.5.
//	RELAXED    int, default 1000: N', rows of the relaxed table.
//	LR         float, default 0.001 (rap) / 0.1 (rap_softmax).
//	MAX_ITERS  int, default 1000.
package rap

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"

	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/internal/amloop"
	"github.com/dpsql/dpsql/synth/internal/nn"
	"github.com/dpsql/dpsql/synth/internal/prodq"
)

// Defaults.
const (
	DefaultRounds    = 10
	DefaultPerRound  = 5
	DefaultAlpha     = 0.5
	DefaultRelaxed   = 1000
	DefaultLR        = 0.001
	DefaultSoftLR    = 0.1
	DefaultMaxIters  = 1000
	plateauSteps     = 10
	plateauTolerance = 1e-4
)

func schema(lr string) synth.Schema {
	return synth.Schema{
		{Name: "ROUNDS", Kind: synth.Int, Default: "10", Min: 1, Max: 1e5, Doc: "rounds T"},
		{Name: "PER_ROUND", Kind: synth.Int, Default: "5", Min: 1, Max: 1e4, Doc: "K, workload marginals selected and measured per round"},
		{Name: "ALPHA", Kind: synth.Float, Default: "0.5", Min: 0.01, Max: 0.99, Doc: "share of each selection's ε₀ spent on selection"},
		{Name: "RELAXED", Kind: synth.Int, Default: "1000", Min: 1, Max: 1e5, Doc: "N', rows of the relaxed table"},
		{Name: "LR", Kind: synth.Float, Default: lr, Min: 1e-7, Max: 10, Doc: "Adam learning rate"},
		{Name: "MAX_ITERS", Kind: synth.Int, Default: "1000", Min: 1, Max: 1e6, Doc: "Adam steps per round at most"},
	}
}

var (
	rapSchema  = schema("0.001")
	softSchema = schema("0.1")
)

// Options configures RAP; New fills every field.
type Options struct {
	Rounds, PerRound int
	Alpha            float64
	Relaxed          int
	LR               float64
	MaxIters         int
	Softmax          bool
}

// Mechanism is RAP.
type Mechanism struct{}

// SoftmaxMechanism is RAPsoftmax.
type SoftmaxMechanism struct{}

var _, _ synth.Mechanism = Mechanism{}, SoftmaxMechanism{}

// Name returns "rap".
func (Mechanism) Name() string { return "rap" }

// Summary describes RAP in one line.
func (Mechanism) Summary() string {
	return "RAP: adaptive selection and Gaussian measurement of K workload marginals per round, fitted by a relaxed table in [-1,1] (squared loss, Adam)"
}

// Output is RowsOnly.
func (Mechanism) Output() synth.Output { return synth.RowsOnly }

// Schema declares the options.
func (Mechanism) Schema() synth.Schema { return rapSchema }

// New parses opts.
func (Mechanism) New(opts []synth.Option) (synth.Runner, error) {
	return parse("rap", rapSchema, opts, false)
}

// Name returns "rap_softmax".
func (SoftmaxMechanism) Name() string { return "rap_softmax" }

// Summary describes RAPsoftmax in one line.
func (SoftmaxMechanism) Summary() string {
	return "RAPsoftmax: RAP whose relaxed rows are per-attribute softmax distributions (a mixture of product distributions)"
}

// Output is RowsOnly.
func (SoftmaxMechanism) Output() synth.Output { return synth.RowsOnly }

// Schema declares the options.
func (SoftmaxMechanism) Schema() synth.Schema { return softSchema }

// New parses opts.
func (SoftmaxMechanism) New(opts []synth.Option) (synth.Runner, error) {
	return parse("rap_softmax", softSchema, opts, true)
}

func parse(name string, s synth.Schema, opts []synth.Option, soft bool) (*Options, error) {
	v, err := s.Parse(name, opts)
	if err != nil {
		return nil, err
	}
	lr := DefaultLR
	if soft {
		lr = DefaultSoftLR
	}
	return &Options{Rounds: v.Int("ROUNDS", DefaultRounds), PerRound: v.Int("PER_ROUND", DefaultPerRound),
		Alpha: v.Float("ALPHA", DefaultAlpha), Relaxed: v.Int("RELAXED", DefaultRelaxed), LR: v.Float("LR", lr),
		MaxIters: v.Int("MAX_ITERS", DefaultMaxIters), Softmax: soft}, nil
}

func (o *Options) name() string {
	if o.Softmax {
		return "rap_softmax"
	}
	return "rap"
}

// table is the relaxed table as an amloop.Model.
type table struct {
	rows    int
	blocks  []int
	softmax bool
	params  []float64 // D (rap) or the logits M (rap_softmax)
	grads   []float64
	p       []float64 // softmax(M) (rap_softmax)
}

func (t *table) Rows() int         { return t.rows }
func (t *table) Params() []float64 { return t.params }
func (t *table) Grads() []float64  { return t.grads }
func (t *table) Forward() []float64 {
	if !t.softmax {
		return t.params
	}
	copy(t.p, t.params)
	nn.Softmax(t.p, t.rows, t.blocks)
	return t.p
}

func (t *table) Backward(dp []float64) {
	if t.softmax {
		nn.SoftmaxBackward(dp, t.p, t.rows, t.blocks)
	}
	copy(t.grads, dp)
}

// project clips RAP's table to [−1, 1].
func (t *table) project() {
	if t.softmax {
		return
	}
	for i, v := range t.params {
		t.params[i] = min(max(v, -1), 1)
	}
}

// Run runs RAP or RAPsoftmax on in.
func (o *Options) Run(ctx context.Context, in *synth.Input) (*synth.Result, error) {
	name := o.name()
	w, err := in.Check(true)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	cfg := amloop.Config{Name: name, Rounds: o.Rounds, PerRound: o.PerRound, Alpha: o.Alpha}
	if err := amloop.CheckBudget(in, cfg, w); err != nil {
		return nil, err
	}
	dom := in.Data.Domain()
	t := &table{rows: o.Relaxed, softmax: o.Softmax}
	for a := range dom.Len() {
		t.blocks = append(t.blocks, dom.Size(a))
	}
	l := prodq.NewLayout(t.blocks)
	if err := amloop.CheckMemory(name, 8*6*float64(o.Relaxed)*float64(l.Width)+amloop.ScratchBytes(t.blocks, w, o.Relaxed)+
		prodq.FitBytes(o.Relaxed, len(t.blocks))); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return &synth.Result{}, fmt.Errorf("%s: %w", name, err)
	}
	t.params = make([]float64, o.Relaxed*l.Width)
	t.grads = make([]float64, len(t.params))
	rng := in.Post()
	if o.Softmax {
		t.p = make([]float64, len(t.params))
		// Standard normal logits: distinct rows, so that the mixture can
		// express correlations from the first step.
		for i := range t.params {
			t.params[i] = rng.NormFloat64()
		}
	} else {
		for i := range t.params {
			t.params[i] = 2*rng.Float64() - 1
		}
	}
	in.Report(synth.Status{Phase: "init", ModelSize: float64(8*len(t.params)) / (1 << 20)})
	adam := nn.NewAdam(len(t.params))
	dp := make([]float64, len(t.params))
	var fs prodq.FitScratch
	res, st, err := amloop.Run(ctx, in, cfg, w, t, func(ctx context.Context, st *amloop.State) error {
		adam.Reset()
		best, since := math.Inf(1), 0
		for range o.MaxIters {
			if err := ctx.Err(); err != nil {
				return err
			}
			p := t.Forward()
			clear(dp)
			loss := st.Layout.FitLoss(dp, &fs, p, t.rows, st.Attrs, st.Target)
			if loss < 1e-8 {
				break
			}
			if loss < best*(1-plateauTolerance) {
				best, since = loss, 0
			} else if since++; since >= plateauSteps {
				break
			}
			t.Backward(dp)
			adam.Step(t.params, t.grads, o.LR)
			t.project()
		}
		return nil
	})
	if err != nil {
		res.Rows = nil
		return res, err
	}
	p := t.Forward()
	in.Report(synth.Status{Phase: "final", Round: len(res.Rounds), RhoUsed: res.RhoUsed})
	res.Rows = amloop.Sample(st.Layout, p, t.rows, amloop.OutRows(in, st.NHat), rng)
	res.Artifact = MarshalTable(o.Softmax, t.blocks, t.rows, p)
	res.Note = fmt.Sprintf("%s: %d rounds of %d marginals, N'=%d, n̂=%.0f", name, len(res.Rounds), o.PerRound, t.rows, st.NHat)
	return res, nil
}

// The relaxed-table encoding (Result.Artifact), little-endian:
//
//	magic "DPRAP", version byte (1), kind byte (0 rap, 1 rap_softmax)
//	uint32 len(blocks), uint32 each block size, uint32 rows
//	rows·Σblocks float64: the relaxed table, row-major in one-hot space
//	    (rap_softmax: the per-block probabilities)
const (
	tableMagic   = "DPRAP"
	tableVersion = 1
)

// MarshalTable encodes a relaxed table.
func MarshalTable(softmax bool, blocks []int, rows int, d []float64) []byte {
	kind := byte(0)
	if softmax {
		kind = 1
	}
	b := append([]byte(tableMagic), tableVersion, kind)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(blocks)))
	for _, s := range blocks {
		b = binary.LittleEndian.AppendUint32(b, uint32(s))
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(rows))
	for _, x := range d {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
	}
	return b
}

// UnmarshalTable decodes MarshalTable's encoding.
func UnmarshalTable(b []byte) (softmax bool, blocks []int, rows int, d []float64, err error) {
	bad := fmt.Errorf("rap: malformed relaxed-table encoding")
	if len(b) < len(tableMagic)+6 || string(b[:len(tableMagic)]) != tableMagic || b[len(tableMagic)] != tableVersion {
		return false, nil, 0, nil, bad
	}
	softmax = b[len(tableMagic)+1] == 1
	b = b[len(tableMagic)+2:]
	nb := int(binary.LittleEndian.Uint32(b))
	b = b[4:]
	if nb > len(b)/4 {
		return false, nil, 0, nil, bad
	}
	width := 0
	for range nb {
		s := int(binary.LittleEndian.Uint32(b))
		blocks = append(blocks, s)
		width += s
		b = b[4:]
	}
	if len(b) < 4 {
		return false, nil, 0, nil, bad
	}
	rows = int(binary.LittleEndian.Uint32(b))
	b = b[4:]
	if len(b) != 8*rows*width {
		return false, nil, 0, nil, bad
	}
	d = make([]float64, rows*width)
	for i := range d {
		d[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return softmax, blocks, rows, d, nil
}
