package engine

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/dolthub/go-mysql-server/sql"

	"github.com/dpsql/dpsql/catalog"
	"github.com/dpsql/dpsql/catalog/domain"
	"github.com/dpsql/dpsql/engine/dpparse"
	"github.com/dpsql/dpsql/synth/pgm"
)

// Privacy units:
//
//	ALTER TABLE census.persons SET PRIVACY UNIT census.households
//	    ON persons.hh_id = households.hh_id MAX 8
//	CALL dpsql_set_privacy_unit('census.persons', 'census.households', 'hh_id', 'hh_id', 8)
//
// The owner of both tables links each row of a child table (persons) to one
// row of its unit (households) through a link column and the unit's
// primary key. Neighbouring databases then add or remove one household
// with all its persons. Households with more than MAX = K persons are
// truncated to their first K persons in primary-key order of the child
// table (a public rule, as Census PHSafe does) before any synthesis reads
// them; persons whose link matches no household are not read.
//
// Accounting: the unit has one budget and one ledger, the household
// table's. A hierarchical synthesis (CREATE SYNTHETIC TABLES … FROM
// households, persons) is charged to it once. A single-table synthesis of
// the child alone is also charged to the unit's ledger, and runs its
// mechanism at ρ/K²: one household moves up to K rows, so a mechanism
// calibrated for one-row neighbours at ρ/K² is ρ-zCDP for households
// (group privacy for zCDP: Gaussian sensitivity K). Its link and key
// columns are keys, not attributes: they are not read, and the synthetic
// table numbers them 1, 2, …
//
// The link lives in the catalog's metadata bucket unitBucket keyed by the
// child's stable table ID.

const unitBucket = "dp_privacy_unit"

// maxUnitSize bounds MAX K.
const maxUnitSize = 64

// unitRecord is a child table's link to its privacy unit.
type unitRecord struct {
	UnitID   uint64    `json:"unit_id"`
	ChildCol string    `json:"child_col"` // link column of the child
	UnitCol  string    `json:"unit_col"`  // the unit's primary key
	K        int       `json:"max"`
	User     string    `json:"user"`
	Declared time.Time `json:"declared"`
}

// unitLink is a resolved link.
type unitLink struct {
	rec  unitRecord
	unit tableRef
}

// setPrivacyUnitNode returns the node of ALTER TABLE … SET PRIVACY UNIT.
func (e *Engine) setPrivacyUnitNode(s *dpparse.SetPrivacyUnit) *dpNode {
	return okNode(s, func(ctx *sql.Context) error { return e.setPrivacyUnit(ctx, s) })
}

func (e *Engine) setPrivacyUnit(ctx *sql.Context, s *dpparse.SetPrivacyUnit) error {
	const what = "ALTER TABLE … SET PRIVACY UNIT"
	child, err := e.openTable(ctx, what, s.Table, roleOwner)
	if err != nil {
		return err
	}
	unit, err := e.openTable(ctx, what, s.Unit, roleOwner)
	if err != nil {
		return err
	}
	if child.ID == unit.ID {
		return ErrBadParameter.New("a table cannot be its own privacy unit")
	}
	if child.Table.Federated() || unit.Table.Federated() {
		return ErrUnsupported.New("privacy units link local tables only")
	}
	if s.Max < 1 || s.Max > maxUnitSize {
		return ErrBadParameter.New("MAX %d: the largest number of rows per unit must be in 1..%d", s.Max, maxUnitSize)
	}
	// Each side of ON names its table by its qualifier; unqualified, the
	// left side is the child's and the right the unit's.
	childCol, unitCol := s.LeftCol, s.RightCol
	switch {
	case s.LeftQual != "" && strings.EqualFold(s.LeftQual, unit.Name) && !strings.EqualFold(s.LeftQual, child.Name),
		s.RightQual != "" && strings.EqualFold(s.RightQual, child.Name) && !strings.EqualFold(s.RightQual, unit.Name):
		childCol, unitCol = s.RightCol, s.LeftCol
	}
	for _, q := range []string{s.LeftQual, s.RightQual} {
		if q != "" && !strings.EqualFold(q, child.Name) && !strings.EqualFold(q, unit.Name) {
			return ErrBadParameter.New("ON names %s, which is neither %s nor %s", quoteIdent(q), child, unit)
		}
	}
	cc := columnCI(child.Table.Schema(), childCol)
	if cc < 0 {
		return ErrBadParameter.New("%s has no column %s", child, quoteIdent(childCol))
	}
	uc := columnCI(unit.Table.Schema(), unitCol)
	if uc < 0 {
		return ErrBadParameter.New("%s has no column %s", unit, quoteIdent(unitCol))
	}
	npk := 0
	for _, c := range unit.Table.Schema() {
		if c.PrimaryKey {
			npk++
		}
	}
	if !unit.Table.Schema()[uc].PrimaryKey || npk != 1 {
		return ErrBadParameter.New("%s.%s must be the whole primary key of the unit %s, so that each row of %s belongs to one unit", unit.Name, quoteIdent(unitCol), unit, child)
	}
	if l, err := e.privacyUnitOf(ctx, unit); err != nil {
		return err
	} else if l != nil {
		return ErrUnsupported.New("%s is itself linked to the privacy unit %s: units do not nest", unit, l.unit)
	}
	rec := unitRecord{UnitID: unit.ID, ChildCol: child.Table.Schema()[cc].Name, UnitCol: unit.Table.Schema()[uc].Name,
		K: s.Max, User: e.ledgerUser(ctx), Declared: time.Now().UTC()}
	v, err := json.Marshal(rec)
	if err != nil {
		return ErrInternal.Wrap(err, "encoding the privacy unit of %s", child)
	}
	if err := e.dp.cat.Update(ctx, func(tx *catalog.Tx) error {
		return tx.Put(unitBucket, publicKey(child.ID), v)
	}); err != nil {
		return ErrInternal.Wrap(err, "recording the privacy unit of %s", child)
	}
	return nil
}

// columnCI returns the index of column name in sch (case-insensitive), or
// -1.
func columnCI(sch sql.Schema, name string) int {
	for i, c := range sch {
		if strings.EqualFold(c.Name, name) {
			return i
		}
	}
	return -1
}

// privacyUnitOf returns child's link to its unit, or nil if it has none
// (or its unit was dropped).
func (e *Engine) privacyUnitOf(ctx *sql.Context, child tableRef) (*unitLink, error) {
	var rec *unitRecord
	var db, name string
	err := e.dp.cat.View(ctx, func(tx *catalog.Tx) error {
		v, err := tx.Get(unitBucket, publicKey(child.ID))
		if err != nil || v == nil {
			return err
		}
		rec = new(unitRecord)
		if err := json.Unmarshal(v, rec); err != nil {
			return err
		}
		var ok bool
		db, name, ok, err = tx.TableByID(rec.UnitID)
		if !ok {
			rec = nil
		}
		return err
	})
	if err != nil {
		return nil, ErrInternal.Wrap(err, "reading the privacy unit of %s", child)
	}
	if rec == nil {
		return nil, nil
	}
	t, ok, err := e.dp.cat.Table(ctx, db, name)
	if err != nil || !ok || t.ID() != rec.UnitID {
		return nil, err
	}
	return &unitLink{rec: *rec, unit: tableRef{DB: db, Name: t.Name(), ID: t.ID(), Table: t}}, nil
}

// setPrivacyUnitProcedure is CALL dpsql_set_privacy_unit('child', 'unit',
// 'child_col', 'unit_col', k).
func (e *Engine) setPrivacyUnitProcedure() sql.ExternalStoredProcedureDetails {
	return sql.ExternalStoredProcedureDetails{
		Name:   "dpsql_set_privacy_unit",
		Schema: okSchema,
		Function: func(ctx *sql.Context, child, unit, childCol, unitCol string, k int64) (sql.RowIter, error) {
			c, err := parseTableArg(child)
			if err != nil {
				return procResult(nil, err)
			}
			u, err := parseTableArg(unit)
			if err != nil {
				return procResult(nil, err)
			}
			if k < 1 || k > maxUnitSize {
				return procResult(nil, ErrBadParameter.New("MAX %d: the largest number of rows per unit must be in 1..%d", k, maxUnitSize))
			}
			s := &dpparse.SetPrivacyUnit{Table: c, Unit: u, LeftCol: childCol, RightCol: unitCol, Max: int(k)}
			return procResult(e.setPrivacyUnitNode(s).run(ctx))
		},
	}
}

// ledgerKey is the ledger a synthesis of r's source is charged to: the
// privacy unit's when the source is a unit's child, else its own.
func (r *synthRequest) ledgerKey() string {
	if r.unit != nil {
		return r.unit.unit.LedgerKey()
	}
	return r.src.LedgerKey()
}

// mechRho is the ρ a single-table mechanism runs at for a charge of rho:
// rho/K² for a unit's child (one unit moves up to K rows; zCDP group
// privacy), rho otherwise.
func (r *synthRequest) mechRho(rho float64) float64 {
	if r.unit != nil {
		k := float64(r.unit.rec.K)
		return rho / (k * k)
	}
	return rho
}

// unitNote is the ledger note's addition for a unit's child.
func (r *synthRequest) unitNote() string {
	if r.unit == nil {
		return ""
	}
	return fmt.Sprintf("; privacy unit %s, K = %d: the mechanism ran at ρ/K² = %.6g", r.unit.unit, r.unit.rec.K, r.mechRho(r.rho))
}

// unitChildDomain sets the domain of a unit's child for a single-table
// synthesis: every column but its keys (link and primary key), which the
// synthetic table numbers 1, 2, … like a surrogate key.
func (e *Engine) unitChildDomain(ctx *sql.Context, r *synthRequest) error {
	link, keys := childKeys(r.src, r.unit)
	if link < 0 {
		return ErrDomain.New("%s lost its link column %s", r.src, quoteIdent(r.unit.rec.ChildCol))
	}
	dom, pos, err := e.keyDomain(ctx, r.src, keys)
	if err != nil {
		return err
	}
	if len(dom.Columns) == 0 {
		return ErrDomain.New("%s has no attribute besides its keys", r.src)
	}
	r.dom, r.pos, r.serial = dom, pos, keys
	return nil
}

// encodeUnitChild reads a unit's child for a single-table synthesis: its
// rows in key order, at most K per unit (the truncation rule), rows that
// link to no unit left out.
func (e *Engine) encodeUnitChild(ctx context.Context, r *synthRequest) (*pgm.Dataset, error) {
	pd, err := pgmDomain(r.dom)
	if err != nil {
		return nil, err
	}
	unit := r.unit.unit
	uk := columnCI(unit.Table.Schema(), r.unit.rec.UnitCol)
	link := columnCI(r.src.Table.Schema(), r.unit.rec.ChildCol)
	if uk < 0 || link < 0 {
		return nil, fmt.Errorf("the link of %s to %s changed", r.src, unit)
	}
	keyOf := func(v any) string { return fmt.Sprintf("%T:%v", v, v) }
	count := map[string]int{}
	if err := e.dp.cat.ScanTable(ctx, unit.DB, unit.Name, func(row sql.Row) error {
		if len(row) <= uk {
			return catalog.ErrSchemaChanged
		}
		count[keyOf(row[uk])] = 0
		return nil
	}); err != nil {
		return nil, fmt.Errorf("reading %s: %w", unit, err)
	}
	ukType := unit.Table.Schema()[uk].Type
	sctx := sql.NewContext(ctx)
	cols := make([][]uint16, len(r.dom.Columns))
	width := len(r.src.Table.Schema())
	if err := e.dp.cat.ScanTable(ctx, r.src.DB, r.src.Name, func(row sql.Row) error {
		if len(row) != width {
			return catalog.ErrSchemaChanged
		}
		if row[link] == nil {
			return nil
		}
		kv, _, err := ukType.Convert(sctx, row[link])
		if err != nil {
			return nil
		}
		k := keyOf(kv)
		n, ok := count[k]
		if !ok || n >= r.unit.rec.K {
			return nil
		}
		count[k] = n + 1
		for i := range r.dom.Columns {
			c := &r.dom.Columns[i]
			code, st := c.Encode(row[r.pos[i]])
			if st == domain.Invalid {
				code = max(c.NullCode(), 0)
			}
			cols[i] = append(cols[i], uint16(code))
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("reading %s: %w", r.src, err)
	}
	return pgm.NewDataset(pd, cols)
}
