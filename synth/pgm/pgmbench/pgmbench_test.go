package pgmbench

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
)

// sharedData locates ../shared/data from the repository root, or skips.
func sharedData(t testing.TB) (csvPath, domPath string) {
	dir := filepath.Join("..", "..", "..", "..", "shared", "data")
	csvPath, domPath = filepath.Join(dir, "adult.csv"), filepath.Join(dir, "adult-domain.json")
	if _, err := os.Stat(csvPath); err != nil {
		t.Skipf("shared data not available: %v", err)
	}
	return csvPath, domPath
}

func TestThreeWay(t *testing.T) {
	// C(14, 3) = 364, the workload size in targets.md.
	if got := len(ThreeWay(14)); got != 364 {
		t.Errorf("ThreeWay(14) has %d sets, want 364", got)
	}
}

func TestRunAdult(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode")
	}
	csvPath, domPath := sharedData(t)
	var out bytes.Buffer
	if err := Run(context.Background(), csvPath, domPath, &out); err != nil {
		t.Fatal(err)
	}
	line := out.String()
	if !regexp.MustCompile(`^marginals_3way_seconds=[0-9.]+ estimate_iter_ms=[0-9.]+ `).MatchString(line) {
		t.Errorf("output %q lacks the required keys", line)
	}
	// targets.md: 364 sets, 20.9 M cells; model 1.2 MB with 9 cliques,
	// greedy elimination's tree. The fit's searched tree is no larger.
	for _, want := range []string{"sets_3way=364 ", "greedy_model_mb=1.216 "} {
		if !bytes.Contains(out.Bytes(), []byte(want)) {
			t.Errorf("output %q lacks %q", line, want)
		}
	}
	size := func(key string) float64 {
		m := regexp.MustCompile(` ` + key + `=([0-9.]+) `).FindStringSubmatch(line)
		if m == nil {
			t.Fatalf("output %q lacks %s", line, key)
		}
		v, err := strconv.ParseFloat(m[1], 64)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if fitted, greedy := size("model_mb"), size("greedy_model_mb"); fitted > greedy {
		t.Errorf("fitted model %.3f MB, larger than greedy elimination's %.3f MB", fitted, greedy)
	}
	t.Log(line)
}
