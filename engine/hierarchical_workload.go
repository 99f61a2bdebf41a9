package engine

import (
	"github.com/dpsql/dpsql/engine/dpparse"
	"github.com/dpsql/dpsql/planner"
	"github.com/dpsql/dpsql/synth/hpd"
)

// compileHierWorkload compiles WORKLOAD (SELECT …, …) of CREATE SYNTHETIC
// TABLES into hpd query sets (planner.CompileHierarchical).
func compileHierWorkload(r *hierRequest, qs []dpparse.WorkloadQuery) ([]hpd.QuerySet, error) {
	unit := planner.HierTable{Name: r.unit.Name, Dom: r.unitDom, Keys: []string{r.link.rec.UnitCol}}
	child := planner.HierTable{Name: r.child.Name, Dom: r.childDom}
	for _, k := range r.childKeys {
		child.Keys = append(child.Keys, r.child.Table.Schema()[k].Name)
	}
	var out []hpd.QuerySet
	for _, q := range qs {
		hq, perr := planner.CompileHierarchical(q.Text, q.Select, unit, child)
		if perr != nil {
			return nil, ErrWorkload.Wrap(perr, "")
		}
		s := hpd.QuerySet{Kind: hpd.GroupLevel, G: hq.G, I: hq.I}
		if hq.Persons {
			s.Kind = hpd.IndivLevel
		}
		for _, w := range hq.Where {
			s.Where = append(s.Where, hpd.Cond{Group: w.Group, Attr: w.Attr, Value: w.Code})
		}
		if err := s.Validate(r.domain); err != nil {
			return nil, ErrWorkload.Wrap(err, "%s", q.Text)
		}
		out = append(out, s)
	}
	return out, nil
}
