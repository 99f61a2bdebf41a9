package catalog

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/planbuilder"
	"github.com/dolthub/go-mysql-server/sql/transform"
)

// tableMeta is the decoded, immutable description of one table layout. A
// schema change builds a new tableMeta with a new layout number.
type tableMeta struct {
	id        uint64
	name      string // as created (case preserved)
	schema    sql.PrimaryKeySchema
	collation sql.CollationID
	comment   string
	checks    []sql.CheckDefinition
	indexes   []storedIndex // secondary indexes
	uniq      []*uniqIndex  // the unique ones among indexes
	layout    uint64        // bumped by every change of columns; stored in each row
	// connection is the connection string of a FEDERATED table (its rows
	// live in a remote database), with its credentials; "" for a local
	// table. Never shown: see Table.Connection.
	connection string

	rows    *rowCodec
	key     *keyCodec // nil for keyless tables
	autoCol int       // ordinal of the AUTO_INCREMENT column, or -1
}

func newTableMeta(id uint64, name string, sch sql.PrimaryKeySchema, coll sql.CollationID, comment string, checks []sql.CheckDefinition, layout uint64, connection string) *tableMeta {
	m := &tableMeta{
		id: id, name: name, schema: sch, collation: coll, comment: comment,
		checks: checks, layout: layout, autoCol: -1, connection: connection,
	}
	m.rows = newRowCodec(layout, sch.Schema)
	if len(sch.PkOrdinals) > 0 {
		m.key = newKeyCodec(sch)
	}
	for i, c := range sch.Schema {
		if c.AutoIncrement {
			m.autoCol = i
			break
		}
	}
	return m
}

// storedTable is the JSON form of a table's metadata.
type storedTable struct {
	Name       string                `json:"name"`
	Collation  string                `json:"collation"`
	Comment    string                `json:"comment,omitempty"`
	Columns    []storedColumn        `json:"columns"`
	PkOrdinals []int                 `json:"pk"`
	Checks     []sql.CheckDefinition `json:"checks,omitempty"`
	Indexes    []storedIndex         `json:"indexes,omitempty"`
	Layout     uint64                `json:"layout"`
	// Connection is set for a FEDERATED table only (older files have
	// none: every table of theirs is local).
	Connection string `json:"connection,omitempty"`
}

// storedIndex is a secondary index definition. Secondary indexes are served
// by filtered scans; a unique one also has a bucket mapping each unique key
// to the primary key of its row, used to enforce uniqueness.
type storedIndex struct {
	Name    string   `json:"name"`
	Columns []string `json:"columns"`
	Comment string   `json:"comment,omitempty"`
	Unique  bool     `json:"unique,omitempty"`
	ID      uint64   `json:"id,omitempty"` // names the bucket of a unique index
}

type storedColumn struct {
	Name          string  `json:"name"`
	Type          string  `json:"type"`
	Collation     *uint16 `json:"collation_id,omitempty"`
	Nullable      bool    `json:"nullable"`
	Default       *string `json:"default,omitempty"`
	Generated     *string `json:"generated,omitempty"`
	Virtual       bool    `json:"virtual,omitempty"`
	OnUpdate      *string `json:"on_update,omitempty"`
	AutoIncrement bool    `json:"auto_increment,omitempty"`
	PrimaryKey    bool    `json:"primary_key,omitempty"`
	Comment       string  `json:"comment,omitempty"`
	Extra         string  `json:"extra,omitempty"`
}

func (m *tableMeta) marshal() ([]byte, error) {
	st := storedTable{
		Name:       m.name,
		Collation:  m.collation.Name(),
		Comment:    m.comment,
		PkOrdinals: m.schema.PkOrdinals,
		Checks:     m.checks,
		Indexes:    m.indexes,
		Layout:     m.layout,
		Connection: m.connection,
	}
	if st.PkOrdinals == nil {
		st.PkOrdinals = []int{}
	}
	for _, c := range m.schema.Schema {
		sc := storedColumn{
			Name:          c.Name,
			Type:          c.Type.String(),
			Nullable:      c.Nullable,
			Default:       exprString(c.Default),
			Generated:     exprString(c.Generated),
			Virtual:       c.Virtual,
			OnUpdate:      exprString(c.OnUpdate),
			AutoIncrement: c.AutoIncrement,
			PrimaryKey:    c.PrimaryKey,
			Comment:       c.Comment,
			Extra:         c.Extra,
		}
		if tc, ok := c.Type.(sql.TypeWithCollation); ok {
			// Type.String omits the default collation, and parsing leaves
			// it unspecified, so keep the exact ID.
			id := uint16(tc.Collation())
			sc.Collation = &id
		}
		st.Columns = append(st.Columns, sc)
	}
	b, err := json.Marshal(&st)
	if err != nil {
		return nil, fmt.Errorf("catalog: encode schema of %s: %w", m.name, err)
	}
	return b, nil
}

func unmarshalMeta(id uint64, b []byte) (*tableMeta, error) {
	var st storedTable
	if err := json.Unmarshal(b, &st); err != nil {
		return nil, fmt.Errorf("catalog: decode schema of table %d: %w", id, err)
	}
	coll, err := sql.ParseCollation("", st.Collation, false)
	if err != nil {
		return nil, fmt.Errorf("catalog: table %s: collation %q: %w", st.Name, st.Collation, err)
	}
	sch := make(sql.Schema, len(st.Columns))
	for i, sc := range st.Columns {
		typ, err := planbuilder.ParseColumnTypeString(sc.Type)
		if err != nil {
			return nil, fmt.Errorf("catalog: table %s column %s: type %q: %w", st.Name, sc.Name, sc.Type, err)
		}
		if tc, ok := typ.(sql.TypeWithCollation); ok && sc.Collation != nil && uint16(tc.Collation()) != *sc.Collation {
			if typ, err = tc.WithNewCollation(sql.CollationID(*sc.Collation)); err != nil {
				return nil, fmt.Errorf("catalog: table %s column %s: collation: %w", st.Name, sc.Name, err)
			}
		}
		sch[i] = &sql.Column{
			Name:          sc.Name,
			Type:          typ,
			Nullable:      sc.Nullable,
			Default:       unresolvedExpr(sc.Default),
			Generated:     unresolvedExpr(sc.Generated),
			Virtual:       sc.Virtual,
			OnUpdate:      unresolvedExpr(sc.OnUpdate),
			AutoIncrement: sc.AutoIncrement,
			PrimaryKey:    sc.PrimaryKey,
			Comment:       sc.Comment,
			Extra:         sc.Extra,
			Source:        st.Name,
		}
	}
	pk := sql.NewPrimaryKeySchema(sch, st.PkOrdinals...)
	if len(st.PkOrdinals) == 0 {
		pk.PkOrdinals = []int{}
	}
	m := newTableMeta(id, st.Name, pk, coll, st.Comment, st.Checks, st.Layout, st.Connection)
	m.setIndexes(st.Indexes)
	return m, nil
}

// exprString serialises a column default, generated or ON UPDATE expression
// without table qualifiers, the form the planner re-resolves.
func exprString(d *sql.ColumnDefaultValue) *string {
	if d == nil {
		return nil
	}
	if u, ok := d.Expr.(sql.UnresolvedColumnDefault); ok {
		// Loaded from disk and not yet resolved: keep the text as stored,
		// or every metadata rewrite would wrap it in more parentheses.
		s := u.ExprString
		return &s
	}
	e, _, err := transform.Expr(d, func(e sql.Expression) (sql.Expression, transform.TreeIdentity, error) {
		if gf, ok := e.(*expression.GetField); ok {
			ne := expression.NewGetField(gf.Index(), gf.Type(), gf.Name(), gf.IsNullable())
			ne = ne.WithQuotedNames(sql.GlobalSchemaFormatter, gf.IsQuotedIdentifier())
			return ne, transform.NewTree, nil
		}
		return e, transform.SameTree, nil
	})
	if err != nil {
		e = d
	}
	s := e.String()
	return &s
}

func unresolvedExpr(s *string) *sql.ColumnDefaultValue {
	if s == nil {
		return nil
	}
	return sql.NewUnresolvedColumnDefaultValue(*s)
}

// copySchema returns a deep copy of the columns of sch, with Source set to
// table, so that callers may edit it without touching a shared tableMeta.
func copySchema(sch sql.PrimaryKeySchema, table string) sql.PrimaryKeySchema {
	cols := make(sql.Schema, len(sch.Schema))
	for i, c := range sch.Schema {
		cc := c.Copy()
		cc.Source = table
		cc.DatabaseSource = ""
		cols[i] = cc
	}
	ords := append([]int{}, sch.PkOrdinals...)
	return sql.PrimaryKeySchema{Schema: cols, PkOrdinals: ords}
}

func lower(s string) string { return strings.ToLower(s) }
