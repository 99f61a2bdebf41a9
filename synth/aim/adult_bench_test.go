package aim_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/dpsql/dpsql/synth/bench"
)

// BenchmarkAdult runs AIM on ../shared/data/adult.csv (relative to the
// repository root) with ε = 1 on all 3-way marginals, seed 0, as `dpsql
// bench aim` does; it skips without the shared data. Profile it with
// -cpuprofile to see where a run spends its time.
func BenchmarkAdult(b *testing.B) {
	dir := filepath.Join("..", "..", "..", "shared", "data")
	csv := filepath.Join(dir, "adult.csv")
	if _, err := os.Stat(csv); err != nil {
		b.Skipf("shared data not available: %v", err)
	}
	cfg := bench.Config{CSV: csv, Domain: filepath.Join(dir, "adult-domain.json"), Mechanism: "aim", Epsilon: 1}
	for b.Loop() {
		reps, err := bench.Execute(context.Background(), cfg, io.Discard)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(reps[0].Error, "error")
	}
}
