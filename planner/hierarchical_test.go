package planner

import (
	"reflect"
	"strings"
	"testing"

	"github.com/dolthub/vitess/go/vt/sqlparser"

	"github.com/dpsql/dpsql/catalog/domain"
	"github.com/dpsql/dpsql/internal/vtparse"
)

func TestCompileHierarchical(t *testing.T) {
	unit := HierTable{Name: "households", Keys: []string{"hh_id"}, Link: "hh_id", Dom: &domain.Table{Columns: []domain.Column{
		must(domain.NewCategorical("urban", domain.String, strVals("urban", "rural"), false, false)),
		must(domain.NewCategorical("tenure", domain.String, strVals("own", "rent"), false, false)),
	}}}
	child := HierTable{Name: "persons", Keys: []string{"hh_id", "person_id"}, Link: "hh_id", Dom: &domain.Table{Columns: []domain.Column{
		must(domain.NewCategorical("sex", domain.String, strVals("M", "F"), false, false)),
		must(domain.NewIntRange("age", 0, 4, false)),
	}}}
	ok := []struct {
		sql  string
		want HierQuery
	}{
		{"SELECT h.urban, COUNT(*) FROM households h WHERE EXISTS (SELECT 1 FROM persons p WHERE p.hh_id = h.hh_id AND p.sex = 'F') GROUP BY h.urban",
			HierQuery{G: []int{0}, I: []int{0}, Where: []HierCond{{Attr: 0, Code: 1}}}},
		{"SELECT p.sex, h.urban, COUNT(*) FROM persons p JOIN households h ON p.hh_id = h.hh_id GROUP BY p.sex, h.urban",
			HierQuery{Persons: true, G: []int{0}, I: []int{0}}},
		{"SELECT urban, COUNT(*) FROM households WHERE tenure = 'rent' AND EXISTS (SELECT 1 FROM persons WHERE persons.hh_id = households.hh_id AND age = 3 AND sex = 'M') GROUP BY urban",
			HierQuery{G: []int{0, 1}, I: []int{0, 1}, Where: []HierCond{{Group: true, Attr: 1, Code: 1}, {Attr: 1, Code: 3}, {Attr: 0, Code: 0}}}},
		{"SELECT age, COUNT(*) FROM persons GROUP BY age", HierQuery{Persons: true, I: []int{1}}},
		{"SELECT p.age, COUNT(*) FROM households h JOIN persons p ON h.hh_id = p.hh_id WHERE h.urban = 'rural' GROUP BY p.age",
			HierQuery{Persons: true, G: []int{0}, I: []int{1}, Where: []HierCond{{Group: true, Attr: 0, Code: 1}}}},
	}
	for _, c := range ok {
		sel, err := vtparse.Parse(c.sql)
		if err != nil {
			t.Fatal(err)
		}
		got, perr := CompileHierarchical(c.sql, sel.(*sqlparser.Select), unit, child)
		if perr != nil {
			t.Fatalf("%s: %v", c.sql, perr)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", c.sql, got, c.want)
		}
	}
	for _, bad := range []string{
		"SELECT p.sex, COUNT(*) FROM households h GROUP BY p.sex",                                                              // unknown alias
		"SELECT sex, COUNT(*) FROM households h WHERE EXISTS (SELECT 1 FROM persons p WHERE p.hh_id = h.hh_id) GROUP BY sex",   // person column in a household count
		"SELECT urban, COUNT(*) FROM households WHERE sex = 'F' GROUP BY urban",                                                // person condition outside EXISTS
		"SELECT urban, COUNT(*) FROM households WHERE urban <> 'urban' GROUP BY urban",                                         // not an equality
		"SELECT urban, COUNT(*) FROM households, persons GROUP BY urban",                                                       // comma join
		"SELECT p.sex, COUNT(*) FROM persons p JOIN households h ON p.sex = h.urban GROUP BY p.sex",                            // not the link
		"SELECT urban, SUM(1) FROM households GROUP BY urban",                                                                  // not COUNT(*)
		"SELECT urban, COUNT(*) FROM other GROUP BY urban",                                                                     // other table
		"SELECT hh_id, COUNT(*) FROM households GROUP BY hh_id",                                                                // a key
		"SELECT urban, COUNT(*) FROM households WHERE urban = 'suburb' GROUP BY urban",                                         // outside the domain
		"SELECT p.sex, COUNT(*) FROM persons p JOIN households h ON p.person_id = h.hh_id GROUP BY p.sex",                      // a key that is not the link
		"SELECT p.sex, COUNT(*) FROM persons p LEFT JOIN households h ON p.hh_id = h.hh_id GROUP BY p.sex",                     // an outer join
		"SELECT p.sex, COUNT(*) FROM persons p JOIN persons q ON p.hh_id = q.hh_id GROUP BY p.sex",                             // a self-join without typed households
		"SELECT h.urban, COUNT(*) FROM households h WHERE EXISTS (SELECT 1 FROM persons p WHERE p.sex = 'F') GROUP BY h.urban", // EXISTS not linked
	} {
		sel, err := vtparse.Parse(bad)
		if err != nil {
			t.Fatal(err)
		}
		if q, perr := CompileHierarchical(bad, sel.(*sqlparser.Select), unit, child); perr == nil {
			t.Errorf("%s: compiled to %+v", bad, q)
		}
	}
}

// Relationship queries (Q_R) of typed households: the accepted forms, and
// what each compiles to; every other shape is refused.
func TestCompileHierarchicalRelations(t *testing.T) {
	unit := HierTable{Name: "households", Keys: []string{"hh_id"}, Link: "hh_id", Dom: &domain.Table{Columns: []domain.Column{
		must(domain.NewCategorical("urban", domain.String, strVals("urban", "rural"), false, false)),
	}}}
	child := HierTable{Name: "persons", Keys: []string{"hh_id", "person_id"}, Link: "hh_id", Rel: "rel", Dom: &domain.Table{Columns: []domain.Column{
		must(domain.NewCategorical("rel", domain.String, strVals("child", "head", "spouse"), false, false)), // codes child 0, head 1, spouse 2
		must(domain.NewCategorical("sex", domain.String, strVals("M", "F"), false, false)),
		must(domain.NewCategorical("employed", domain.String, strVals("no", "yes"), false, false)),
	}}}
	const rel, sex, emp = 0, 1, 2
	const child_, head, spouse = 0, 1, 2
	pin := func(relative bool, code int) HierCond { return HierCond{Relative: relative, Attr: rel, Code: code} }
	ok := []struct {
		sql  string
		want HierQuery
	}{
		// The two forms: spouses by sex whose head is employed.
		{"SELECT p.sex, COUNT(*) FROM persons p JOIN persons q ON p.hh_id = q.hh_id WHERE p.rel = 'spouse' AND q.rel = 'head' AND q.employed = 'yes' GROUP BY p.sex",
			HierQuery{Persons: true, Relation: RelMarriedTo, I: []int{rel, sex}, I2: []int{rel, emp},
				Where: []HierCond{pin(false, spouse), pin(true, head), {Relative: true, Attr: emp, Code: 1}}}},
		{"SELECT p.sex, COUNT(*) FROM persons p WHERE p.rel = 'spouse' AND EXISTS (SELECT 1 FROM persons q WHERE q.hh_id = p.hh_id AND q.rel = 'head' AND q.employed = 'yes') GROUP BY p.sex",
			HierQuery{Persons: true, Relation: RelMarriedTo, I: []int{rel, sex}, I2: []int{rel, emp},
				Where: []HierCond{pin(false, spouse), pin(true, head), {Relative: true, Attr: emp, Code: 1}}}},
		// The join's conditions may sit in ON; the relative's columns may be grouped.
		{"SELECT p.sex, q.employed, COUNT(*) FROM persons p JOIN persons q ON p.hh_id = q.hh_id AND q.rel = 'spouse' WHERE p.rel = 'head' GROUP BY p.sex, q.employed",
			HierQuery{Persons: true, Relation: RelMarriedTo, I: []int{rel, sex}, I2: []int{rel, emp}, Where: []HierCond{pin(false, head), pin(true, spouse)}}},
		// A child whose head is employed: the unique side (the head) is the
		// relative whichever side it is written on; households joined too.
		{"SELECT q.sex, h.urban, COUNT(*) FROM persons p JOIN persons q ON p.hh_id = q.hh_id JOIN households h ON h.hh_id = q.hh_id WHERE p.rel = 'head' AND p.employed = 'yes' AND q.rel = 'child' GROUP BY q.sex, h.urban",
			HierQuery{Persons: true, Relation: RelHasParent, G: []int{0}, I: []int{rel, sex}, I2: []int{rel, emp},
				Where: []HierCond{pin(false, child_), pin(true, head), {Relative: true, Attr: emp, Code: 1}}}},
		// has-child over heads and spouses (IN: the relation itself, no pin).
		{"SELECT p.sex, COUNT(*) FROM persons p WHERE p.rel IN ('head', 'spouse') AND EXISTS (SELECT 1 FROM persons q WHERE q.hh_id = p.hh_id AND q.rel = 'child' AND q.employed = 'yes') GROUP BY p.sex",
			HierQuery{Persons: true, Relation: RelHasChild, I: []int{sex}, I2: []int{rel, emp}, Where: []HierCond{pin(true, child_), {Relative: true, Attr: emp, Code: 1}}}},
		// has-parent with either parent, household condition, unqualified
		// column inside EXISTS (the EXISTS table first).
		{"SELECT p.sex, COUNT(*) FROM persons p JOIN households h ON p.hh_id = h.hh_id WHERE h.urban = 'rural' AND p.rel = 'child' AND EXISTS (SELECT 1 FROM persons q WHERE q.hh_id = h.hh_id AND rel IN ('spouse', 'head') AND employed = 'no') GROUP BY p.sex",
			HierQuery{Persons: true, Relation: RelHasParent, G: []int{0}, I: []int{rel, sex}, I2: []int{emp},
				Where: []HierCond{{Group: true, Attr: 0, Code: 1}, pin(false, child_), {Relative: true, Attr: emp, Code: 0}}}},
		// Typed domains keep Q_G and Q_I; conditions on rel are ordinary there.
		{"SELECT p.sex, COUNT(*) FROM persons p WHERE p.rel = 'head' GROUP BY p.sex",
			HierQuery{Persons: true, I: []int{rel, sex}, Where: []HierCond{{Attr: rel, Code: head}}}},
	}
	for _, c := range ok {
		sel, err := vtparse.Parse(c.sql)
		if err != nil {
			t.Fatal(err)
		}
		got, perr := CompileHierarchical(c.sql, sel.(*sqlparser.Select), unit, child)
		if perr != nil {
			t.Fatalf("%s: %v", c.sql, perr)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s:\n got %+v\nwant %+v", c.sql, got, c.want)
		}
	}
	for _, c := range []struct{ sql, msg string }{
		{"SELECT p.sex, COUNT(*) FROM persons p JOIN persons q ON p.hh_id = q.hh_id WHERE q.rel = 'head' GROUP BY p.sex", "fixes the relationship of both"},
		{"SELECT p.sex, COUNT(*) FROM persons p JOIN persons q ON p.hh_id = q.hh_id WHERE p.rel = 'child' AND q.rel = 'child' GROUP BY p.sex", "not a relation"},
		{"SELECT p.sex, COUNT(*) FROM persons p JOIN persons q ON p.hh_id = q.hh_id WHERE p.rel = 'head' AND q.rel = 'head' GROUP BY p.sex", "not a relation"},
		{"SELECT p.sex, COUNT(*) FROM persons p JOIN persons q ON p.hh_id = q.hh_id WHERE p.rel IN ('head', 'spouse') AND q.rel = 'child' GROUP BY p.sex", "counts pairs"},
		{"SELECT p.sex, COUNT(*) FROM persons p JOIN persons q ON p.hh_id = q.hh_id WHERE p.rel = 'child' AND q.rel IN ('head', 'spouse') GROUP BY p.sex", "counts pairs"},
		{"SELECT p.sex, COUNT(*) FROM persons p WHERE p.rel = 'head' AND EXISTS (SELECT 1 FROM persons q WHERE q.hh_id = p.hh_id AND q.rel IN ('spouse', 'child')) GROUP BY p.sex", "mix two relations"},
		{"SELECT p.sex, COUNT(*) FROM persons p WHERE p.rel = 'head' AND p.rel = 'spouse' AND EXISTS (SELECT 1 FROM persons q WHERE q.hh_id = p.hh_id AND q.rel = 'child') GROUP BY p.sex", "contradictory"},
		{"SELECT p.sex, COUNT(*) FROM persons p JOIN persons q ON p.sex = q.sex WHERE p.rel = 'spouse' AND q.rel = 'head' GROUP BY p.sex", "linked on the household"},
		{"SELECT p.sex, COUNT(*) FROM persons p JOIN persons q ON p.hh_id = q.person_id WHERE p.rel = 'spouse' AND q.rel = 'head' GROUP BY p.sex", "linked on the household"},
		{"SELECT p.sex, COUNT(*) FROM persons p WHERE p.rel = 'spouse' AND EXISTS (SELECT 1 FROM persons q WHERE q.rel = 'head') GROUP BY p.sex", "link every table"},
		{"SELECT sex, COUNT(*) FROM persons p JOIN persons q ON p.hh_id = q.hh_id WHERE p.rel = 'spouse' AND q.rel = 'head' GROUP BY sex", "ambiguous"},
		{"SELECT p.sex, COUNT(*) FROM persons p WHERE p.rel = 'spouse' AND EXISTS (SELECT 1 FROM persons q WHERE q.hh_id = p.hh_id AND q.rel = 'head' AND p.sex = 'F') GROUP BY p.sex", "inside EXISTS"},
		{"SELECT p.sex, COUNT(*) FROM persons p WHERE p.rel = 'spouse' AND q.employed = 'yes' AND EXISTS (SELECT 1 FROM persons q WHERE q.hh_id = p.hh_id AND q.rel = 'head') GROUP BY p.sex", "unknown table"},
		{"SELECT p.sex, COUNT(*) FROM persons p WHERE p.sex IN ('M', 'F') GROUP BY p.sex", "relationship column only"},
		{"SELECT p.sex, COUNT(*) FROM persons p WHERE p.rel IN ('head', 'spouse') GROUP BY p.sex", "relationship queries only"},
		{"SELECT p.sex, COUNT(*) FROM persons p JOIN persons q ON p.hh_id = q.hh_id JOIN persons r ON r.hh_id = p.hh_id WHERE p.rel = 'spouse' AND q.rel = 'head' GROUP BY p.sex", "relationship query"},
		{"SELECT p.sex, COUNT(*) FROM persons p JOIN persons q ON p.hh_id = q.hh_id WHERE p.rel = 'spouse' AND q.rel = 'head' AND EXISTS (SELECT 1 FROM persons r WHERE r.hh_id = p.hh_id AND r.rel = 'child') GROUP BY p.sex", "takes no EXISTS"},
		{"SELECT p.sex, COUNT(*) FROM persons p WHERE p.rel = 'spouse' AND (q.rel = 'head' OR q.rel = 'spouse') GROUP BY p.sex", "unsupported condition"},
	} {
		sel, err := vtparse.Parse(c.sql)
		if err != nil {
			t.Fatal(err)
		}
		q, perr := CompileHierarchical(c.sql, sel.(*sqlparser.Select), unit, child)
		if perr == nil {
			t.Errorf("%s: compiled to %+v", c.sql, q)
		} else if !strings.Contains(perr.Error(), c.msg) {
			t.Errorf("%s: error %q, want it to say %q", c.sql, perr.Error(), c.msg)
		}
	}
	// Untyped persons refuse both forms.
	child.Rel = ""
	for _, s := range []string{ok[0].sql, ok[1].sql} {
		sel, _ := vtparse.Parse(s)
		if _, perr := CompileHierarchical(s, sel.(*sqlparser.Select), unit, child); perr == nil || !strings.Contains(perr.Error(), "typed households") {
			t.Errorf("%s untyped: %v", s, perr)
		}
	}
}
