package engine

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"

	"github.com/dpsql/dpsql/catalog/domain"
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

// explainHier is EXPLAIN CREATE SYNTHETIC TABLES: phase 1 of the statement
// (validateHier: nothing read, reserved or charged) and what it would do,
// as rows (section, item, value) like EXPLAIN CREATE SYNTHETIC TABLE:
// statement, cost, budget (the unit's), rounds, and one workload row per
// compiled query set with its class, attributes (fixed values quoted), its
// number of queries and the L1/L2 sensitivity it is measured with.
func (e *Engine) explainHier(ctx *sql.Context, s *dpparse.CreateSyntheticTables) ([]sql.Row, error) {
	if err := e.needCatalog("EXPLAIN CREATE SYNTHETIC TABLES"); err != nil {
		return nil, err
	}
	r, err := e.validateHier(ctx, s)
	if err != nil {
		return nil, err
	}
	var rows []sql.Row
	add := func(section, item, value string) { rows = append(rows, sql.Row{section, item, value}) }
	g := func(x float64) string { return strconv.FormatFloat(x, 'g', 6, 64) }
	add("statement", "sources", r.unit.DB+"."+r.unit.Name+", "+r.child.DB+"."+r.child.Name)
	add("statement", "targets", r.unitT.String()+", "+r.childT.String())
	add("statement", "mechanism", r.method.Name())
	add("statement", "privacy_unit", fmt.Sprintf("%s.%s, K = %d", r.unit.DB, r.unit.Name, r.domain.K))
	if r.domain.Typed {
		add("statement", "relationship", r.domain.IndivNames[r.domain.Rel])
	}
	add("cost", "epsilon", g(r.epsilon))
	add("cost", "delta", g(r.delta))
	add("cost", "rho", g(r.rho))
	info, err := e.dp.ledger.Budget(r.unit.LedgerKey())
	if err != nil {
		return nil, e.ledgerError(err)
	}
	after := info.RhoRemaining - r.rho
	add("budget", "rho_remaining", g(info.RhoRemaining))
	if after < 0 {
		add("budget", "fits", "no: the statement would fail with the budget exhausted, charging nothing")
	} else {
		add("budget", "rho_remaining_after", g(after))
		add("budget", "fits", "yes")
	}
	add("model", "rounds", strconv.Itoa(r.runner.Rounds(r.rho)))
	add("model", "output", hierOutput)
	queries := 0
	for i := range r.workload {
		q := &r.workload[i]
		n := q.Queries(r.domain)
		queries += n
		l1, l2 := q.Sensitivity(r.domain)
		add("workload", hierSetText(r, q), fmt.Sprintf("queries=%d l1=%s l2=%s", n, g(l1), g(l2)))
	}
	add("workload", "total", fmt.Sprintf("%d sets, %d queries", len(r.workload), queries))
	return rows, nil
}

// hierSetText describes a query set: its class, then the household's,
// the person's and the relative's attributes, fixed ones with their value.
func hierSetText(r *hierRequest, q *hpd.QuerySet) string {
	part := func(attrs []int, dom *domain.Table, group, relative bool) string {
		var out []string
		for _, a := range attrs {
			s := dom.Columns[a].Name()
			for _, w := range q.Where {
				if w.Attr == a && w.Group == group && w.Relative == relative {
					s += "='" + dom.Columns[a].Label(w.Value) + "'"
				}
			}
			out = append(out, s)
		}
		return strings.Join(out, ", ")
	}
	var b strings.Builder
	switch q.Kind {
	case hpd.GroupLevel:
		b.WriteString("Q_G households")
	case hpd.IndivLevel:
		b.WriteString("Q_I persons")
	default:
		b.WriteString("Q_R " + q.Rel.String())
	}
	if len(q.G) > 0 {
		fmt.Fprintf(&b, " household(%s)", part(q.G, r.unitDom, true, false))
	}
	if len(q.I) > 0 {
		fmt.Fprintf(&b, " person(%s)", part(q.I, r.childDom, false, false))
	}
	if len(q.I2) > 0 {
		fmt.Fprintf(&b, " relative(%s)", part(q.I2, r.childDom, false, true))
	}
	return b.String()
}
