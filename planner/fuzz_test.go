package planner

import (
	"slices"
	"testing"
)

var fuzzSeeds = []string{
	"SELECT COUNT(*) FROM t WHERE age > 3",
	"SELECT sex, race, COUNT(*) FROM t GROUP BY sex, race",
	"SELECT x.age, COUNT(*) FROM t AS x WHERE x.sex = 'F' GROUP BY x.age",
	"SELECT g, COUNT(*) FROM t WHERE (inc < 50 OR race IS NULL) AND flag = 1 GROUP BY g",
	"SELECT COUNT(*) FROM t WHERE race NOT IN ('a', NULL) AND NOT (age BETWEEN 2 AND 5)",
	"SELECT hrs, COUNT(*) FROM t WHERE hrs BETWEEN 5 AND 14 GROUP BY hrs",
	"SELECT COUNT(*) FROM t WHERE g BETWEEN NULL AND 15 OR one IN (1, 2)",
	"SELECT COUNT(*) FROM t JOIN u ON t.a = u.a",
	"SELECT SUM(age) FROM t",
	"SELECT COUNT(*) FROM t WHERE sex IN (SELECT sex FROM t)",
	"SELECT COUNT(*) FROM t WHERE inc < 30",
}

// FuzzCompile checks that the compiler never panics on SELECT texts and
// that whatever it accepts is well-formed and answerable.
func FuzzCompile(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	dom := testDomain()
	f.Fuzz(func(t *testing.T, text string) {
		w, err := Compile([]WorkloadQuery{{Text: text, Weight: 1}}, src, dom)
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("error %v is a %T, want *Error", err, err)
			}
			return
		}
		q := w.Queries[0]
		if len(q.Attrs) == 0 || !slices.IsSorted(q.Attrs) || len(slices.Compact(slices.Clone(q.Attrs))) != len(q.Attrs) {
			t.Fatalf("bad attrs %v", q.Attrs)
		}
		for _, a := range q.GroupBy {
			if !slices.Contains(q.Attrs, a) {
				t.Fatalf("group-by %d not in attrs %v", a, q.Attrs)
			}
		}
		var check func(p *Pred)
		check = func(p *Pred) {
			if p.Op == OpAtom {
				if !slices.Contains(q.Attrs, p.Attr) || len(p.Truth) != dom.Columns[p.Attr].Size() {
					t.Fatalf("atom on %d with %d truths", p.Attr, len(p.Truth))
				}
				return
			}
			for _, a := range p.Args {
				check(a)
			}
		}
		if q.Where != nil {
			check(q.Where)
		}
		cells := 1
		for _, s := range q.sizes {
			cells *= s
		}
		ones := make([]float64, cells)
		for i := range ones {
			ones[i] = 1
		}
		ans, err := q.Answer(ones)
		if err != nil {
			t.Fatal(err)
		}
		sum := 0.0
		for _, x := range ans {
			sum += x
		}
		if sum > float64(cells) {
			t.Fatalf("answer sums to %v > %d cells", sum, cells)
		}
	})
}
