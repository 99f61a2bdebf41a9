package pgmbench

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
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
	// targets.md: 364 sets, 20.9 M cells; model 1.2 MB with 9 cliques.
	for _, want := range []string{"sets_3way=364 ", "jt_cliques=9 "} {
		if !bytes.Contains(out.Bytes(), []byte(want)) {
			t.Errorf("output %q lacks %q", line, want)
		}
	}
	t.Log(line)
}
