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
	}
	return nil
}
