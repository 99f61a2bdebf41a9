package catalog

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"go.etcd.io/bbolt"
)

var (
	_ sql.DatabaseProvider        = (*Provider)(nil)
	_ sql.MutableDatabaseProvider = (*Provider)(nil)
	_ sql.Database                = (*Database)(nil)
	_ sql.TableCreator            = (*Database)(nil)
	_ sql.TableDropper            = (*Database)(nil)
	_ sql.TableRenamer            = (*Database)(nil)
	_ sql.ViewDatabase            = (*Database)(nil)
)

// Provider is the go-mysql-server database provider of a Store.
type Provider struct {
	s *Store
}

// Provider returns the store's go-mysql-server database provider.
func (s *Store) Provider() *Provider { return &Provider{s: s} }

// Database implements sql.DatabaseProvider.
func (p *Provider) Database(ctx *sql.Context, name string) (sql.Database, error) {
	var stored string
	var ok bool
	if err := p.s.db.View(func(tx *bbolt.Tx) error {
		var err error
		stored, ok, err = databaseName(tx, name)
		return err
	}); err != nil {
		return nil, fmt.Errorf("catalog: database %s: %w", name, err)
	}
	if !ok {
		return nil, sql.ErrDatabaseNotFound.New(name)
	}
	return &Database{s: p.s, name: stored}, nil
}

// HasDatabase implements sql.DatabaseProvider.
func (p *Provider) HasDatabase(ctx *sql.Context, name string) bool {
	var ok bool
	_ = p.s.db.View(func(tx *bbolt.Tx) error {
		ok = dbBucket(tx, name) != nil
		return nil
	})
	return ok
}

// AllDatabases implements sql.DatabaseProvider. Databases are sorted by name.
func (p *Provider) AllDatabases(ctx *sql.Context) []sql.Database {
	var out []sql.Database
	_ = p.s.db.View(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketDBs).ForEachBucket(func(k []byte) error {
			// A database whose name record is damaged is listed under its
			// key (the lower-cased name); using it reports the damage.
			name, ok, err := databaseName(tx, string(k))
			if err != nil || !ok {
				name = string(k)
			}
			out = append(out, &Database{s: p.s, name: name})
			return nil
		})
	})
	sort.Slice(out, func(i, j int) bool { return lower(out[i].Name()) < lower(out[j].Name()) })
	return out
}

// CreateDatabase implements sql.MutableDatabaseProvider.
func (p *Provider) CreateDatabase(ctx *sql.Context, name string) error {
	return p.s.db.Update(func(tx *bbolt.Tx) error { return createDatabaseTx(tx, name) })
}

// DropDatabase implements sql.MutableDatabaseProvider. It drops every table
// of the database in the same transaction.
func (p *Provider) DropDatabase(ctx *sql.Context, name string) error {
	return p.s.db.Update(func(tx *bbolt.Tx) error { return p.s.dropDatabaseTx(tx, name) })
}

// Database is one SQL database (schema) of a Store.
type Database struct {
	s    *Store
	name string
}

// Name implements sql.Nameable.
func (d *Database) Name() string { return d.name }

// GetTableInsensitive implements sql.Database.
func (d *Database) GetTableInsensitive(ctx *sql.Context, name string) (sql.Table, bool, error) {
	var t *Table
	err := d.s.db.View(func(tx *bbolt.Tx) error {
		m, ok, err := d.s.resolve(tx, d.name, name)
		if ok {
			t = &Table{s: d.s, db: d.name, meta: m}
		}
		return err
	})
	if err != nil {
		return nil, false, fmt.Errorf("catalog: table %s.%s: %w", d.name, name, err)
	}
	if t == nil {
		return nil, false, nil
	}
	return t, true, nil
}

// GetTableNames implements sql.Database.
func (d *Database) GetTableNames(ctx *sql.Context) ([]string, error) {
	var names []string
	err := d.s.db.View(func(tx *bbolt.Tx) error {
		var err error
		names, err = tableNamesTx(tx, d.name)
		return err
	})
	return names, err
}

// CreateTable implements sql.TableCreator.
func (d *Database) CreateTable(ctx *sql.Context, name string, schema sql.PrimaryKeySchema, collation sql.CollationID, comment string) error {
	return d.s.db.Update(func(tx *bbolt.Tx) error {
		_, err := d.s.createTableTx(tx, d.name, name, schema, collation, comment, "")
		return err
	})
}

// DropTable implements sql.TableDropper.
func (d *Database) DropTable(ctx *sql.Context, name string) error {
	return d.s.db.Update(func(tx *bbolt.Tx) error { return d.s.dropTableTx(tx, d.name, name) })
}

// RenameTable implements sql.TableRenamer.
func (d *Database) RenameTable(ctx *sql.Context, oldName, newName string) error {
	return d.s.db.Update(func(tx *bbolt.Tx) error { return d.s.renameTableTx(tx, d.name, oldName, newName) })
}

// CreateView implements sql.ViewDatabase.
func (d *Database) CreateView(ctx *sql.Context, name string, selectStatement, createViewStmt string) error {
	return d.s.db.Update(func(tx *bbolt.Tx) error {
		db := dbBucket(tx, d.name)
		if db == nil {
			return sql.ErrDatabaseNotFound.New(d.name)
		}
		views := db.Bucket(bucketViews)
		key := []byte(lower(name))
		if views.Get(key) != nil {
			return sql.ErrExistingView.New(d.name, name)
		}
		if db.Bucket(bucketTbls).Get(key) != nil {
			return sql.ErrTableAlreadyExists.New(name)
		}
		enc, err := json.Marshal(sql.ViewDefinition{
			Name:                name,
			TextDefinition:      selectStatement,
			CreateViewStatement: createViewStmt,
			SqlMode:             sql.LoadSqlMode(ctx).String(),
		})
		if err != nil {
			return fmt.Errorf("catalog: encode view %s: %w", name, err)
		}
		return putV(views, key, enc)
	})
}

// DropView implements sql.ViewDatabase.
func (d *Database) DropView(ctx *sql.Context, name string) error {
	return d.s.db.Update(func(tx *bbolt.Tx) error {
		db := dbBucket(tx, d.name)
		if db == nil {
			return sql.ErrDatabaseNotFound.New(d.name)
		}
		views := db.Bucket(bucketViews)
		if views.Get([]byte(lower(name))) == nil {
			return sql.ErrViewDoesNotExist.New(d.name, name)
		}
		return views.Delete([]byte(lower(name)))
	})
}

// GetViewDefinition implements sql.ViewDatabase.
func (d *Database) GetViewDefinition(ctx *sql.Context, name string) (sql.ViewDefinition, bool, error) {
	var def sql.ViewDefinition
	var ok bool
	err := d.s.db.View(func(tx *bbolt.Tx) error {
		db := dbBucket(tx, d.name)
		if db == nil {
			return nil
		}
		key := []byte(lower(name))
		v, err := getV(db.Bucket(bucketViews), key, viewWhat(d.name, key))
		if err != nil || v == nil {
			return err
		}
		ok = true
		return json.Unmarshal(v, &def)
	})
	if err != nil {
		return sql.ViewDefinition{}, false, fmt.Errorf("catalog: view %s.%s: %w", d.name, name, err)
	}
	return def, ok, nil
}

// AllViews implements sql.ViewDatabase.
func (d *Database) AllViews(ctx *sql.Context) ([]sql.ViewDefinition, error) {
	var defs []sql.ViewDefinition
	err := d.s.db.View(func(tx *bbolt.Tx) error {
		db := dbBucket(tx, d.name)
		if db == nil {
			return nil
		}
		return db.Bucket(bucketViews).ForEach(func(k, v []byte) error {
			p, err := openV(k, v, viewWhat(d.name, k))
			if err != nil {
				return err
			}
			var def sql.ViewDefinition
			if err := json.Unmarshal(p, &def); err != nil {
				return err
			}
			defs = append(defs, def)
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("catalog: views of %s: %w", d.name, err)
	}
	sort.Slice(defs, func(i, j int) bool { return strings.ToLower(defs[i].Name) < strings.ToLower(defs[j].Name) })
	return defs, nil
}
