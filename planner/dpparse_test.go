package planner

import (
	"slices"
	"testing"

	"github.com/dpsql/dpsql/engine/dpparse"
)

// TestFromStatement compiles the workload of a parsed CREATE SYNTHETIC
// TABLE; dpparse.WorkloadQuery converts to WorkloadQuery directly.
func TestFromStatement(t *testing.T) {
	stmt, _, ok, err := dpparse.Parse("CREATE SYNTHETIC TABLE s FROM raw.t USING aim WITH epsilon = 1 " +
		"WORKLOAD (SELECT sex, COUNT(*) FROM t WHERE age < 5 GROUP BY sex WEIGHT 3; SELECT race, COUNT(*) FROM raw.t GROUP BY race)")
	if !ok || err != nil {
		t.Fatal(ok, err)
	}
	cs := stmt.(*dpparse.CreateSynthetic)
	wl := make([]WorkloadQuery, len(cs.Workload.Queries))
	for i, q := range cs.Workload.Queries {
		wl[i] = WorkloadQuery(q)
	}
	w, err := Compile(wl, TableRef{DB: cs.Source.DB, Name: cs.Source.Name}, testDomain())
	if err != nil {
		t.Fatal(err)
	}
	ms := w.Marginals()
	if len(ms) != 2 || !slices.Equal(ms[0].Attrs, []int{0, 2}) || ms[0].Weight != 3 || !slices.Equal(ms[1].Attrs, []int{1}) {
		t.Errorf("Marginals() = %v", ms)
	}
}
