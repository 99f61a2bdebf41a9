package synth

import (
	"runtime/metrics"
	"testing"
)

// TestReleaseAfter: a run of a large model ends with a forced collection
// (FreeOSMemory forces one), a small one does not.
func TestReleaseAfter(t *testing.T) {
	forced := func() uint64 {
		s := []metrics.Sample{{Name: "/gc/cycles/forced:gc-cycles"}}
		metrics.Read(s)
		return s[0].Value.Uint64()
	}
	for _, tc := range []struct {
		mb   float64
		want bool
	}{{0, false}, {ReleaseMB - 0.5, false}, {ReleaseMB, true}, {70, true}} {
		before := forced()
		ReleaseAfter(tc.mb)
		if got := forced() > before; got != tc.want {
			t.Errorf("ReleaseAfter(%v MB) forced a collection: %v, want %v", tc.mb, got, tc.want)
		}
	}
}
