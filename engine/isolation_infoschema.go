package engine

import (
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/information_schema"
)

// infoSchemaDB serves go-mysql-server's information_schema with one table
// value per lookup, and dpsql's readers for the tables whose GMS version is
// wrong for dpsql: processlist (each user sees their own threads,
// processlist.go) and tables (real creation times, compat.go).
//
// GMS v0.20.0 keeps one *InformationSchemaTable per table for the whole
// process, and the planbuilder calls AssignCatalog on it for every query,
// which writes its catalog field: concurrent information_schema queries
// race (found by the load test under -race). A shallow copy per lookup
// gives each query its own.
type infoSchemaDB struct {
	sql.Database
	e *Engine
}

// GetTableInsensitive implements sql.Database.
func (d infoSchemaDB) GetTableInsensitive(ctx *sql.Context, name string) (sql.Table, bool, error) {
	t, ok, err := d.Database.GetTableInsensitive(ctx, name)
	if ist, isIST := t.(*information_schema.InformationSchemaTable); isIST && ok && err == nil {
		c := *ist
		switch strings.ToLower(c.TableName) {
		case information_schema.ProcessListTableName:
			c.Reader = d.e.processListReader
		case information_schema.TablesTableName:
			c.Reader = d.e.tablesReader(ist.Reader)
			c.TableSchema = nullableCreateTime(ist.TableSchema)
		}
		return &c, true, nil
	}
	return t, ok, err
}
