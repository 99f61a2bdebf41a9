package engine

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"

	"github.com/dpsql/dpsql/catalog"
	"github.com/dpsql/dpsql/engine/dpparse"
	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/registry"
)

// SHOW SYNTHETIC TABLES, SHOW MECHANISMS, the CALL twins of the synthesis
// statements, and the hooks that keep synthetic-table records in step with
// DROP TABLE and RENAME TABLE.

var (
	_ sql.ExecSourceRel = (*ShowSyntheticTables)(nil)
	_ sql.ExecSourceRel = (*ShowMechanisms)(nil)
)

// syntheticTablesSchema is the result of SHOW SYNTHETIC TABLES.
var syntheticTablesSchema = sql.Schema{
	{Name: "Database", Type: types.LongText},
	{Name: "Name", Type: types.LongText},
	{Name: "Source", Type: types.LongText},
	{Name: "Mechanism", Type: types.LongText},
	{Name: "Output", Type: types.LongText},
	{Name: "Epsilon", Type: types.Float64},
	{Name: "Delta", Type: types.Float64},
	{Name: "Rho", Type: types.Float64},
	{Name: "Rows", Type: types.Int64},
	{Name: "Rounds", Type: types.Int64},
	{Name: "Model_size_MB", Type: types.Float64},
	{Name: "Created_at", Type: types.LongText},
	{Name: "User", Type: types.LongText},
}

// ShowSyntheticTables is the plan node of SHOW SYNTHETIC TABLES [FROM db]:
// the synthetic tables of db (the current database; every database when
// there is none) that the user may read.
type ShowSyntheticTables struct {
	e  *Engine
	db string
}

// Resolved implements sql.Node.
func (n *ShowSyntheticTables) Resolved() bool { return true }

// String implements sql.Node.
func (n *ShowSyntheticTables) String() string {
	return (&dpparse.ShowSyntheticTables{DB: n.db}).String()
}

// Schema implements sql.Node.
func (n *ShowSyntheticTables) Schema() sql.Schema { return syntheticTablesSchema }

// Children implements sql.Node.
func (n *ShowSyntheticTables) Children() []sql.Node { return nil }

// WithChildren implements sql.Node.
func (n *ShowSyntheticTables) WithChildren(children ...sql.Node) (sql.Node, error) {
	if len(children) != 0 {
		return nil, sql.ErrInvalidChildrenNumber.New(n, len(children), 0)
	}
	return n, nil
}

// IsReadOnly implements sql.Node.
func (n *ShowSyntheticTables) IsReadOnly() bool { return true }

// WithResolvedChildren implements the parser's Injectable.
func (n *ShowSyntheticTables) WithResolvedChildren(children []any) (any, error) {
	if len(children) != 0 {
		return nil, sql.ErrInvalidChildrenNumber.New(n, len(children), 0)
	}
	return n, nil
}

// RowIter implements sql.ExecSourceRel.
func (n *ShowSyntheticTables) RowIter(ctx *sql.Context, _ sql.Row) (sql.RowIter, error) {
	rows, err := n.e.syntheticTableRows(ctx, n.db)
	if err != nil {
		return nil, SQLError(err)
	}
	return sql.RowsToRowIter(rows...), nil
}

// syntheticTableRows lists the synthetic tables of db ("" for the current
// database, or all if none is selected) the session may read.
func (e *Engine) syntheticTableRows(ctx *sql.Context, db string) ([]sql.Row, error) {
	if err := e.needCatalog("SHOW SYNTHETIC TABLES"); err != nil {
		return nil, err
	}
	if db == "" {
		db = ctx.GetCurrentDatabase()
	} else if !e.sqle.Analyzer.Catalog.HasDatabase(ctx, db) {
		return nil, sql.ErrDatabaseNotFound.New(db)
	}
	mdb := e.sqle.Analyzer.Catalog.MySQLDb
	var rows []sql.Row
	err := e.dp.cat.View(ctx, func(tx *catalog.Tx) error {
		pairs := hierPairs(tx)
		return tx.ForEachSynthetic(func(r *catalog.Synthetic) error {
			if db != "" && !strings.EqualFold(r.DB, db) || !tx.SyntheticLive(r) {
				return nil
			}
			op := sql.NewPrivilegedOperation(sql.PrivilegeCheckSubject{Database: r.DB, Table: r.Name}, sql.PrivilegeType_Select)
			if !mdb.UserHasPrivileges(ctx, op) {
				return nil
			}
			output := r.Output
			if r.Output == hierOutput {
				output = hierOutputText(r, pairs)
			}
			rows = append(rows, sql.Row{
				r.DB, r.Name, r.SourceDB + "." + r.SourceName, r.Mechanism, output,
				r.Epsilon, r.Delta, r.Rho, r.Rows, int64(r.Rounds), r.ModelSize,
				r.CreatedAt.UTC().Format(time.RFC3339), r.User,
			})
			return nil
		})
	})
	if err != nil {
		return nil, ErrInternal.Wrap(err, "listing synthetic tables")
	}
	return rows, nil
}

// mechanismsSchema is the result of SHOW MECHANISMS: one row per option of
// each mechanism (one row with NULL option fields for a mechanism without
// options).
var mechanismsSchema = sql.Schema{
	{Name: "Mechanism", Type: types.LongText},
	{Name: "Summary", Type: types.LongText},
	{Name: "Output", Type: types.LongText},
	{Name: "Option", Type: types.LongText, Nullable: true},
	{Name: "Kind", Type: types.LongText, Nullable: true},
	{Name: "Default", Type: types.LongText, Nullable: true},
	{Name: "Range", Type: types.LongText, Nullable: true},
	{Name: "Doc", Type: types.LongText, Nullable: true},
}

// ShowMechanisms is the plan node of SHOW MECHANISMS.
type ShowMechanisms struct{}

// Resolved implements sql.Node.
func (n *ShowMechanisms) Resolved() bool { return true }

// String implements sql.Node.
func (n *ShowMechanisms) String() string { return "SHOW MECHANISMS" }

// Schema implements sql.Node.
func (n *ShowMechanisms) Schema() sql.Schema { return mechanismsSchema }

// Children implements sql.Node.
func (n *ShowMechanisms) Children() []sql.Node { return nil }

// WithChildren implements sql.Node.
func (n *ShowMechanisms) WithChildren(children ...sql.Node) (sql.Node, error) {
	if len(children) != 0 {
		return nil, sql.ErrInvalidChildrenNumber.New(n, len(children), 0)
	}
	return n, nil
}

// IsReadOnly implements sql.Node.
func (n *ShowMechanisms) IsReadOnly() bool { return true }

// WithResolvedChildren implements the parser's Injectable.
func (n *ShowMechanisms) WithResolvedChildren(children []any) (any, error) {
	if len(children) != 0 {
		return nil, sql.ErrInvalidChildrenNumber.New(n, len(children), 0)
	}
	return n, nil
}

// RowIter implements sql.ExecSourceRel.
func (n *ShowMechanisms) RowIter(*sql.Context, sql.Row) (sql.RowIter, error) {
	return sql.RowsToRowIter(mechanismRows()...), nil
}

// mechanismRows are the rows of SHOW MECHANISMS. The generic options of
// CREATE SYNTHETIC TABLE (EPSILON, DELTA, ROWS, SEED) apply to every
// mechanism and are not listed.
func mechanismRows() []sql.Row {
	var rows []sql.Row
	for _, m := range registry.All() {
		schema := m.Schema()
		if len(schema) == 0 {
			rows = append(rows, sql.Row{m.Name(), m.Summary(), m.Output().String(), nil, nil, nil, nil, nil})
			continue
		}
		for _, p := range schema {
			rows = append(rows, sql.Row{m.Name(), m.Summary(), m.Output().String(),
				p.Name, p.Kind.String(), p.Default, paramRange(p), p.Doc})
		}
	}
	return rows
}

// paramRange renders an option's bounds: "[min, max]", or "≥ min" when it
// has no upper bound.
func paramRange(p synth.Param) string {
	f := func(x float64) string { return strconv.FormatFloat(x, 'g', -1, 64) }
	if p.Max == 0 {
		return "≥ " + f(p.Min)
	}
	return fmt.Sprintf("[%s, %s]", f(p.Min), f(p.Max))
}

// createSyntheticProcedure is CALL dpsql_create_synthetic_table('CREATE
// SYNTHETIC TABLE ...'), the preparable twin of the statement: it takes the
// statement's text and returns one row with the new table and its number of
// rows.
func (e *Engine) createSyntheticProcedure() sql.ExternalStoredProcedureDetails {
	return sql.ExternalStoredProcedureDetails{
		Name: "dpsql_create_synthetic_table",
		Schema: sql.Schema{
			{Name: "Table", Type: types.LongText},
			{Name: "Rows", Type: types.Int64},
		},
		Function: func(ctx *sql.Context, statement string) (sql.RowIter, error) {
			parsed, n, ok, err := dpparse.Parse(statement)
			stmt, isCreate := parsed.(*dpparse.CreateSynthetic)
			switch {
			case !ok || (err == nil && !isCreate):
				return nil, SQLError(ErrBadParameter.New("dpsql_create_synthetic_table expects a CREATE SYNTHETIC TABLE statement"))
			case err != nil:
				return nil, SQLError(ErrSyntax.Wrap(err, ""))
			case !isBlank(statement[n:], ';'):
				return nil, SQLError(ErrSyntax.New("unexpected text after %s: %s", stmt, abbrev(statement[n:])))
			}
			rec, err := e.createSynthetic(ctx, stmt)
			if err != nil {
				return nil, SQLError(err)
			}
			return sql.RowsToRowIter(sql.Row{rec.DB + "." + rec.Name, rec.Rows}), nil
		},
	}
}

// showSyntheticTablesProcedures are CALL dpsql_show_synthetic_tables() and
// CALL dpsql_show_synthetic_tables('db').
func (e *Engine) showSyntheticTablesProcedures() []sql.ExternalStoredProcedureDetails {
	const name = "dpsql_show_synthetic_tables"
	return []sql.ExternalStoredProcedureDetails{
		{
			Name: name, Schema: syntheticTablesSchema, ReadOnly: true,
			Function: func(ctx *sql.Context) (sql.RowIter, error) {
				rows, err := e.syntheticTableRows(ctx, "")
				if err != nil {
					return nil, SQLError(err)
				}
				return sql.RowsToRowIter(rows...), nil
			},
		},
		{
			Name: name, Schema: syntheticTablesSchema, ReadOnly: true,
			Function: func(ctx *sql.Context, db string) (sql.RowIter, error) {
				rows, err := e.syntheticTableRows(ctx, db)
				if err != nil {
					return nil, SQLError(err)
				}
				return sql.RowsToRowIter(rows...), nil
			},
		},
	}
}

// showMechanismsProcedure is CALL dpsql_show_mechanisms().
func showMechanismsProcedure() sql.ExternalStoredProcedureDetails {
	return sql.ExternalStoredProcedureDetails{
		Name: "dpsql_show_mechanisms", Schema: mechanismsSchema, ReadOnly: true,
		Function: func(*sql.Context) (sql.RowIter, error) {
			return sql.RowsToRowIter(mechanismRows()...), nil
		},
	}
}

// synthesisProcedures are the CALL twins of the synthesis statements.
func (e *Engine) synthesisProcedures() []sql.ExternalStoredProcedureDetails {
	return append([]sql.ExternalStoredProcedureDetails{e.createSyntheticProcedure(), showMechanismsProcedure()},
		e.showSyntheticTablesProcedures()...)
}

var (
	_ sql.TableDropper = catalogDB{}
	_ sql.TableRenamer = catalogDB{}
)

// DropTable implements sql.TableDropper. Dropping a synthetic table drops
// its record, model and release in the same transaction. No privacy budget
// is ever refunded: the source's ledger is not touched.
func (d catalogDB) DropTable(ctx *sql.Context, name string) error {
	return d.Database.Store().Update(ctx, func(tx *catalog.Tx) error {
		id, ok := tx.TableID(d.Name(), name)
		if !ok {
			return sql.ErrTableNotFound.New(name)
		}
		if err := tx.DropTable(d.Name(), name); err != nil {
			return err
		}
		return tx.DeleteSynthetic(id)
	})
}

// RenameTable implements sql.TableRenamer. A synthetic table's record
// follows it in the same transaction.
func (d catalogDB) RenameTable(ctx *sql.Context, oldName, newName string) error {
	return d.Database.Store().Update(ctx, func(tx *catalog.Tx) error {
		id, ok := tx.TableID(d.Name(), oldName)
		if !ok {
			return sql.ErrTableNotFound.New(oldName)
		}
		if err := tx.RenameTable(d.Name(), oldName, newName); err != nil {
			return err
		}
		return tx.RenameSynthetic(id, d.Name(), newName)
	})
}
