package engine

import (
	"github.com/dpsql/dpsql/engine/dpparse"
	"github.com/dpsql/dpsql/planner"
	"github.com/dpsql/dpsql/synth/hpd"
)

// compileHierWorkload compiles WORKLOAD (SELECT …, …) of CREATE SYNTHETIC
// TABLES into hpd query sets (planner.CompileHierarchical): Q_G, Q_I, and
// with typed households (RELATIONSHIP = col) Q_R.
func compileHierWorkload(r *hierRequest, qs []dpparse.WorkloadQuery) ([]hpd.QuerySet, error) {
	unit := planner.HierTable{Name: r.unit.Name, Dom: r.unitDom, Keys: []string{r.link.rec.UnitCol}, Link: r.link.rec.UnitCol}
	child := planner.HierTable{Name: r.child.Name, Dom: r.childDom, Link: r.link.rec.ChildCol}
	if r.domain.Typed {
		child.Rel = r.domain.IndivNames[r.domain.Rel]
	}
	for _, k := range r.childKeys {
		child.Keys = append(child.Keys, r.child.Table.Schema()[k].Name)
	}
	var out []hpd.QuerySet
	for _, q := range qs {
		hq, perr := planner.CompileHierarchical(q.Text, q.Select, unit, child)
		if perr != nil {
			return nil, ErrWorkload.Wrap(perr, "")
		}
		s := hierQuerySet(hq)
		if err := s.Validate(r.domain); err != nil {
			return nil, ErrWorkload.Wrap(err, "%s", q.Text)
		}
		out = append(out, s)
	}
	return out, nil
}

// hierQuerySet maps a compiled query to synth/hpd's query set.
func hierQuerySet(hq planner.HierQuery) hpd.QuerySet {
	s := hpd.QuerySet{Kind: hpd.GroupLevel, G: hq.G, I: hq.I, I2: hq.I2}
	switch {
	case hq.Relation != planner.NoRelation:
		s.Kind = hpd.RelationLevel
		s.Rel = map[planner.HierRelation]hpd.Relation{planner.RelMarriedTo: hpd.MarriedTo,
			planner.RelHasChild: hpd.HasChild, planner.RelHasParent: hpd.HasParent}[hq.Relation]
	case hq.Persons:
		s.Kind = hpd.IndivLevel
	}
	for _, w := range hq.Where {
		s.Where = append(s.Where, hpd.Cond{Group: w.Group, Relative: w.Relative, Attr: w.Attr, Value: w.Code})
	}
	return s
}
