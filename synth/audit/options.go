package audit

import (
	"strings"

	"github.com/dpsql/dpsql/synth"
)

// Run counts per dataset: DefaultRuns for the full audit (dpsql audit),
// ShortRuns for CI (dpsql audit --short, TestAuditShort).
const (
	DefaultRuns = 10000
	ShortRuns   = 500
)

// Options returns the options the audit runs the named mechanism with:
// its defaults, except fewer iterations of Private-PGM estimation. They are
// post-processing of the noisy measurements, so they change neither the
// privacy analysis nor the noise; they only change how fast a run is (and,
// for the adaptive mechanisms, which model the next selection scores).
func Options(name string) []synth.Option {
	switch strings.ToLower(name) {
	case "aim", "mwem":
		return []synth.Option{{Name: "PGM_ITERS", Value: 20}, {Name: "FINAL_ITERS", Value: 100}}
	case "mst", "independent":
		return []synth.Option{{Name: "PGM_ITERS", Value: 100}}
	// The optimisation inside these mechanisms' rounds (training a
	// generator, a relaxed table, a projection, an estimation) is
	// post-processing of released values too: fewer steps leave the
	// accounting the audit checks unchanged.
	case "gem":
		return []synth.Option{{Name: "HIDDEN", Value: 16}, {Name: "LATENT", Value: 8}, {Name: "BATCH", Value: 50}, {Name: "MAX_ITERS", Value: 10}}
	case "gem_pub":
		return []synth.Option{{Name: "HIDDEN", Value: 16}, {Name: "LATENT", Value: 8}, {Name: "BATCH", Value: 50}, {Name: "MAX_ITERS", Value: 10}, {Name: "PRETRAIN_ITERS", Value: 10}}
	case "rap", "rap_softmax":
		return []synth.Option{{Name: "MAX_ITERS", Value: 20}}
	case "pep", "pep_pub":
		return []synth.Option{{Name: "PROJECT_ITERS", Value: 5}}
	case "dualquery_pgm":
		return []synth.Option{{Name: "PGM_ITERS", Value: 10}}
	case "privbayes_pgm", "hdmm_pgm":
		return []synth.Option{{Name: "ITERS", Value: 20}}
	}
	return nil
}
