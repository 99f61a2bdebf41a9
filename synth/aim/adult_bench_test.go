package aim_test

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/bench"
)

// BenchmarkAdult runs AIM on ../shared/data/adult.csv (relative to the
// repository root) with ε = 1 on all 3-way marginals, seed 0, as `dpsql
// bench aim` does; it skips without the shared data. Profile it with
// -cpuprofile to see where a run spends its time. The environment can
// change the case: AIM_BENCH_EPSILON (default 1), AIM_BENCH_CSV and
// AIM_BENCH_DOMAIN (another table, e.g. one written by internal/widegen/cmd)
// and AIM_BENCH_OPTIONS (NAME=VALUE,…).
func BenchmarkAdult(b *testing.B) {
	dir := filepath.Join("..", "..", "..", "shared", "data")
	csv := filepath.Join(dir, "adult.csv")
	domain := filepath.Join(dir, "adult-domain.json")
	if s := os.Getenv("AIM_BENCH_CSV"); s != "" {
		csv, domain = s, os.Getenv("AIM_BENCH_DOMAIN")
	}
	if _, err := os.Stat(csv); err != nil {
		b.Skipf("shared data not available: %v", err)
	}
	cfg := bench.Config{CSV: csv, Domain: domain, Mechanism: "aim", Epsilon: 1}
	if s := os.Getenv("AIM_BENCH_EPSILON"); s != "" {
		eps, err := strconv.ParseFloat(s, 64)
		if err != nil {
			b.Fatalf("AIM_BENCH_EPSILON: %v", err)
		}
		cfg.Epsilon = eps
	}
	if s := os.Getenv("AIM_BENCH_OPTIONS"); s != "" {
		for _, kv := range strings.Split(s, ",") {
			k, v, _ := strings.Cut(kv, "=")
			cfg.Options = append(cfg.Options, synth.Option{Name: k, Value: v})
		}
	}
	for b.Loop() {
		reps, err := bench.Execute(context.Background(), cfg, io.Discard)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(reps[0].Error, "error")
		b.ReportMetric(reps[0].CPU.Seconds(), "cpu-s")
	}
}
