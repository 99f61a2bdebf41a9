package pep

import (
	"github.com/dpsql/dpsql/synth"
)

// Defaults.
const (
	DefaultRounds       = 30
	DefaultAlpha        = 0.5
	DefaultProjectIters = 25
	DefaultMaxModelSize = 80
)

var (
	pRounds = synth.Param{Name: "ROUNDS", Kind: synth.Int, Default: "30", Min: 1, Max: 1e5,
		Doc: "rounds T (capped at the number of selectable candidates); each spends (ρ − ρ_N)/T"}
	pAlpha = synth.Param{Name: "ALPHA", Kind: synth.Float, Default: "0.5", Min: 0.01, Max: 0.99,
		Doc: "fraction α of each round's ε0 spent on selection (1 − α on measurement)"}
	pIters = synth.Param{Name: "PROJECT_ITERS", Kind: synth.Int, Default: "25", Min: 1, Max: 1e6,
		Doc: "projection steps per round (the paper's T_max)"}
	pTol = synth.Param{Name: "TOLERANCE", Kind: synth.Float, Default: "0", Min: 0, Max: 1,
		Doc: "projection tolerance γ on normalised answers (0 as in the paper's experiments)"}
	pPast = synth.Param{Name: "PAST_QUERIES", Kind: synth.Int, Default: "1", Min: 0, Max: 1,
		Doc: "1: replay past queries whose error is ≥ half the new one's ([000] App. D.6)"}
	pDense = synth.Param{Name: "DENSE", Kind: synth.Int, Default: "0", Min: 0, Max: 1,
		Doc: "1: explicit histogram over the domain (at most 4194304 cells) instead of the graphical model"}
	pSize = synth.Param{Name: "MAX_MODEL_SIZE", Kind: synth.Float, Default: "80", Min: 1e-3,
		Doc: "junction-tree size limit in MB (as AIM's), reached in the last round"}
)

func cellsParam(def string) synth.Param {
	return synth.Param{Name: "CELLS", Kind: synth.Int, Default: def, Min: 0, Max: 1,
		Doc: "1: select and measure single marginal cells; 0: whole workload marginals (the marginal trick)"}
}

var (
	pepSchema    = synth.Schema{pRounds, pAlpha, pIters, pTol, cellsParam("0"), pDense, pSize}
	pmwSchema    = synth.Schema{pRounds, pAlpha, pPast, cellsParam("1"), pDense, pSize}
	pmwPubSchema = synth.Schema{pRounds, pAlpha, pPast, cellsParam("1")}
	pepPubSchema = synth.Schema{pRounds, pAlpha, pIters, pTol, cellsParam("0")}
)

func parse(name string, a algo, public bool, schema synth.Schema, cellsDef int, opts []synth.Option) (synth.Runner, error) {
	v, err := schema.Parse(name, opts)
	if err != nil {
		return nil, err
	}
	return &config{
		name: name, algo: a, public: public,
		rounds:  v.Int("ROUNDS", DefaultRounds),
		alpha:   v.Float("ALPHA", DefaultAlpha),
		iters:   v.Int("PROJECT_ITERS", DefaultProjectIters),
		tol:     v.Float("TOLERANCE", 0),
		past:    v.Int("PAST_QUERIES", 1) == 1,
		cells:   v.Int("CELLS", cellsDef) == 1,
		dense:   v.Int("DENSE", 0) == 1,
		maxSize: v.Float("MAX_MODEL_SIZE", DefaultMaxModelSize),
	}, nil
}

// PEP is Private Entropy Projection as a synth.Mechanism.
type PEP struct{}

// PMW is MWEM as [000] runs it, as a synth.Mechanism.
type PMW struct{}

// PMWPub is PMW^Pub (MWEM over a public table's support).
type PMWPub struct{}

// PEPPub is PEP^Pub (PEP over a public table's support).
type PEPPub struct{}

var (
	_ synth.Mechanism       = PEP{}
	_ synth.Mechanism       = PMW{}
	_ synth.PublicMechanism = PMWPub{}
	_ synth.PublicMechanism = PEPPub{}
)

// Name is the SQL name.
func (PEP) Name() string { return "pep" }

// Summary is the SHOW MECHANISMS line.
func (PEP) Summary() string {
	return "PEP: exponential-mechanism selection of the worst workload marginal, Gaussian measurement, max-entropy projection onto every measurement (graphical-model engine)"
}

// Output is what Run releases.
func (PEP) Output() synth.Output { return synth.SyntheticData }

// Schema declares the options.
func (PEP) Schema() synth.Schema { return pepSchema }

// New validates the options.
func (PEP) New(o []synth.Option) (synth.Runner, error) {
	return parse("pep", algoPEP, false, pepSchema, 0, o)
}

// Name is the SQL name.
func (PMW) Name() string { return "pmw" }

// Summary is the SHOW MECHANISMS line.
func (PMW) Summary() string {
	return "MWEM (multiplicative weights, exponential mechanism) with past-query replay, as in Liu et al. 2021; graphical-model engine"
}

// Output is what Run releases.
func (PMW) Output() synth.Output { return synth.SyntheticData }

// Schema declares the options.
func (PMW) Schema() synth.Schema { return pmwSchema }

// New validates the options.
func (PMW) New(o []synth.Option) (synth.Runner, error) {
	return parse("pmw", algoMWEM, false, pmwSchema, 1, o)
}

// Name is the SQL name.
func (PMWPub) Name() string { return "pmw_pub" }

// Summary is the SHOW MECHANISMS line.
func (PMWPub) Summary() string {
	return "PMW^Pub: MWEM over the support of a public table (PUBLIC = db.t), a weight per distinct public row"
}

// Output is what Run releases.
func (PMWPub) Output() synth.Output { return synth.RowsOnly }

// Schema declares the options.
func (PMWPub) Schema() synth.Schema { return pmwPubSchema }

// PublicData: the public variants need PUBLIC = db.t.
func (PMWPub) PublicData() synth.PublicUse { return synth.PublicRequired }

// New validates the options.
func (PMWPub) New(o []synth.Option) (synth.Runner, error) {
	return parse("pmw_pub", algoMWEM, true, pmwPubSchema, 1, o)
}

// Name is the SQL name.
func (PEPPub) Name() string { return "pep_pub" }

// Summary is the SHOW MECHANISMS line.
func (PEPPub) Summary() string {
	return "PEP^Pub: PEP's max-entropy projection over the support of a public table (PUBLIC = db.t)"
}

// Output is what Run releases.
func (PEPPub) Output() synth.Output { return synth.RowsOnly }

// Schema declares the options.
func (PEPPub) Schema() synth.Schema { return pepPubSchema }

// PublicData: the public variants need PUBLIC = db.t.
func (PEPPub) PublicData() synth.PublicUse { return synth.PublicRequired }

// New validates the options.
func (PEPPub) New(o []synth.Option) (synth.Runner, error) {
	return parse("pep_pub", algoPEP, true, pepPubSchema, 0, o)
}
