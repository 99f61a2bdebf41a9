package planner

import (
	"reflect"
	"testing"

	"github.com/dolthub/vitess/go/vt/sqlparser"

	"github.com/dpsql/dpsql/catalog/domain"
	"github.com/dpsql/dpsql/internal/vtparse"
)

func TestCompileHierarchical(t *testing.T) {
	unit := HierTable{Name: "households", Keys: []string{"hh_id"}, Dom: &domain.Table{Columns: []domain.Column{
		must(domain.NewCategorical("urban", domain.String, strVals("urban", "rural"), false, false)),
		must(domain.NewCategorical("tenure", domain.String, strVals("own", "rent"), false, false)),
	}}}
	child := HierTable{Name: "persons", Keys: []string{"hh_id", "person_id"}, Dom: &domain.Table{Columns: []domain.Column{
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
		"SELECT p.sex, COUNT(*) FROM households h GROUP BY p.sex",                                                            // unknown alias
		"SELECT sex, COUNT(*) FROM households h WHERE EXISTS (SELECT 1 FROM persons p WHERE p.hh_id = h.hh_id) GROUP BY sex", // person column in a household count
		"SELECT urban, COUNT(*) FROM households WHERE sex = 'F' GROUP BY urban",                                              // person condition outside EXISTS
		"SELECT urban, COUNT(*) FROM households WHERE urban <> 'urban' GROUP BY urban",                                       // not an equality
		"SELECT urban, COUNT(*) FROM households, persons GROUP BY urban",                                                     // comma join
		"SELECT p.sex, COUNT(*) FROM persons p JOIN households h ON p.sex = h.urban GROUP BY p.sex",                          // not the link
		"SELECT urban, SUM(1) FROM households GROUP BY urban",                                                                // not COUNT(*)
		"SELECT urban, COUNT(*) FROM other GROUP BY urban",                                                                   // other table
		"SELECT hh_id, COUNT(*) FROM households GROUP BY hh_id",                                                              // a key
		"SELECT urban, COUNT(*) FROM households WHERE urban = 'suburb' GROUP BY urban",                                       // outside the domain
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
