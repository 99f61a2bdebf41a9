package catalog

import (
	"context"
	"errors"
	"fmt"

	"github.com/dolthub/go-mysql-server/sql"
)

// FEDERATED tables.
//
// A federated table is declared like any table (columns, CHECK
// constraints, comment) but its rows live in a remote database, named by
// its connection string. The catalog stores the declaration and the
// connection string (with its credentials, sealed like every record) and
// refuses to store rows for it: inserts, updates, deletes, TRUNCATE and
// column changes fail with ErrFederated. Reading the remote rows is the
// engine's business (the federated package); the catalog never connects
// anywhere.

// ErrFederated is returned by a write to a federated table.
var ErrFederated = errors.New("catalog: table is FEDERATED: its rows live in its source database and dpsql does not write them")

// federatedError names the table in ErrFederated.
func federatedError(name string) error {
	return fmt.Errorf("%w (table %s)", ErrFederated, name)
}

// Federated reports whether t is a FEDERATED table.
func (t *Table) Federated() bool { return t.meta.connection != "" }

// Connection is the connection string of a FEDERATED table, credentials
// included ("" for a local table). Callers must never show it: display the
// federated package's masked form instead.
func (t *Table) Connection() string { return t.meta.connection }

// CreateFederatedTable creates the FEDERATED table db.name, whose rows
// live at connection, with its declared schema, collation, comment and
// CHECK constraints, in one transaction. It returns the table's stable ID.
func (s *Store) CreateFederatedTable(ctx context.Context, db, name string, schema sql.PrimaryKeySchema, coll sql.CollationID, comment string, checks []sql.CheckDefinition, connection string) (uint64, error) {
	if connection == "" {
		return 0, fmt.Errorf("catalog: create %s.%s: a FEDERATED table needs a connection", db, name)
	}
	var id uint64
	err := s.Update(ctx, func(tx *Tx) error {
		var err error
		id, err = s.createTableTx(tx.tx, db, name, schema, coll, comment, connection)
		if err != nil || len(checks) == 0 {
			return err
		}
		m, err := loadMetaTx(tx.tx, id)
		if err != nil {
			return err
		}
		defs := make([]sql.CheckDefinition, 0, len(checks))
		for _, c := range checks {
			if c.Name == "" {
				c.Name = m.checkName()
			}
			defs = append(defs, c)
			m.checks = defs // checkName sees the names taken so far
		}
		nm := newTableMeta(m.id, m.name, m.schema, m.collation, m.comment, defs, m.layout, m.connection)
		nm.setIndexes(m.indexes)
		return s.putMetaTx(tx.tx, nm)
	})
	if err != nil {
		return 0, wrapf(err, "catalog: create %s.%s", db, name)
	}
	return id, nil
}

// refuseFederated fails a change of rows or columns of a federated table.
func refuseFederated(m *tableMeta) error {
	if m.connection != "" {
		return federatedError(m.name)
	}
	return nil
}

// Database is the name of the database that holds t.
func (t *Table) Database() string { return t.db }
