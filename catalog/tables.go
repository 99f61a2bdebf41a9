package catalog

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"sort"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"go.etcd.io/bbolt"
)

// Layout of the catalog buckets:
//
//	dpsql_dbs/<lower db>/            one bucket per database
//	    name                         database name as created
//	    tables/<lower table> = id(8) ++ table name as created
//	    views/<lower view>   = JSON sql.ViewDefinition
//	dpsql_tables/<id(8)>/            one bucket per table, keyed by stable ID
//	    meta    = JSON storedTable
//	    db      = database name
//	    count   = row count (8)
//	    autoinc = next AUTO_INCREMENT value (8)
//	    created = creation time, Unix seconds (8); absent for tables
//	              created before dpsql recorded it
//	    rows<layout(8)>/<key> = encoded row
//
// The rows bucket is named after the layout, so a schema change writes a new
// bucket and a statement planned against the old layout finds none.
var (
	keyName     = []byte("name")
	keyMeta     = []byte("meta")
	keyDB       = []byte("db")
	keyCount    = []byte("count")
	keyAutoInc  = []byte("autoinc")
	keyCreated  = []byte("created")
	bucketTbls  = []byte("tables")
	bucketViews = []byte("views")
)

func u64(v uint64) []byte { return binary.BigEndian.AppendUint64(nil, v) }

func getU64(b []byte) uint64 {
	if len(b) != 8 {
		return 0
	}
	return binary.BigEndian.Uint64(b)
}

func rowsBucketName(layout uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte("rows"), layout)
}

func dbBucket(tx *bbolt.Tx, db string) *bbolt.Bucket {
	dbs := tx.Bucket(bucketDBs)
	if dbs == nil {
		return nil
	}
	return dbs.Bucket([]byte(lower(db)))
}

func tableBucket(tx *bbolt.Tx, id uint64) *bbolt.Bucket {
	tb := tx.Bucket(bucketTables)
	if tb == nil {
		return nil
	}
	return tb.Bucket(u64(id))
}

// rowsBucket returns the rows bucket of table m, or nil if the table was
// dropped or its layout changed since m was read.
func rowsBucket(tx *bbolt.Tx, m *tableMeta) *bbolt.Bucket {
	tb := tableBucket(tx, m.id)
	if tb == nil {
		return nil
	}
	return tb.Bucket(rowsBucketName(m.layout))
}

func lookupTableID(tx *bbolt.Tx, db, table string) (uint64, bool, error) {
	d := dbBucket(tx, db)
	if d == nil {
		return 0, false, nil
	}
	key := []byte(lower(table))
	v, err := getV(d.Bucket(bucketTbls), key, tableEntryWhat(db, key))
	if err != nil {
		return 0, false, err
	}
	if len(v) < 8 {
		return 0, false, nil
	}
	return binary.BigEndian.Uint64(v), true, nil
}

// tableEntryWhat names the entry of a table in its database's bucket.
func tableEntryWhat(db string, key []byte) func() string {
	return func() string { return fmt.Sprintf("the entry of table %s in database %s", key, db) }
}

func databaseName(tx *bbolt.Tx, db string) (string, bool, error) {
	d := dbBucket(tx, db)
	if d == nil {
		return "", false, nil
	}
	name, err := getV(d, keyName, func() string { return fmt.Sprintf("the name of database %s", lower(db)) })
	if err != nil {
		return "", false, err
	}
	return string(name), true, nil
}

func createDatabaseTx(tx *bbolt.Tx, name string) error {
	dbs := tx.Bucket(bucketDBs)
	if dbs.Bucket([]byte(lower(name))) != nil {
		return sql.ErrDatabaseExists.New(name)
	}
	d, err := dbs.CreateBucket([]byte(lower(name)))
	if err != nil {
		return fmt.Errorf("catalog: create database %s: %w", name, err)
	}
	if err := putV(d, keyName, []byte(name)); err != nil {
		return err
	}
	if _, err := d.CreateBucket(bucketTbls); err != nil {
		return err
	}
	_, err = d.CreateBucket(bucketViews)
	return err
}

func (s *Store) dropDatabaseTx(tx *bbolt.Tx, name string) error {
	d := dbBucket(tx, name)
	if d == nil {
		return sql.ErrDatabaseNotFound.New(name)
	}
	var ids []uint64
	err := d.Bucket(bucketTbls).ForEach(func(k, v []byte) error {
		p, err := openV(k, v, tableEntryWhat(name, k))
		if err != nil {
			return err
		}
		if len(p) < 8 {
			return corrupt(tableEntryWhat(name, k)())
		}
		ids = append(ids, getU64(p[:8]))
		return nil
	})
	if err != nil {
		return err
	}
	all := tx.Bucket(bucketTables)
	for _, id := range ids {
		if err := all.DeleteBucket(u64(id)); err != nil {
			return fmt.Errorf("catalog: drop database %s: table %d: %w", name, id, err)
		}
	}
	if err := tx.Bucket(bucketDBs).DeleteBucket([]byte(lower(name))); err != nil {
		return fmt.Errorf("catalog: drop database %s: %w", name, err)
	}
	tx.OnCommit(func() { s.forget(ids...) })
	return nil
}

// createTableTx creates table name in db and returns its new stable ID.
// connection is "" for a local table, the source of a FEDERATED one.
func (s *Store) createTableTx(tx *bbolt.Tx, db, name string, sch sql.PrimaryKeySchema, coll sql.CollationID, comment, connection string) (uint64, error) {
	d := dbBucket(tx, db)
	if d == nil {
		return 0, sql.ErrDatabaseNotFound.New(db)
	}
	tbls := d.Bucket(bucketTbls)
	if tbls.Get([]byte(lower(name))) != nil {
		return 0, sql.ErrTableAlreadyExists.New(name)
	}
	if d.Bucket(bucketViews).Get([]byte(lower(name))) != nil {
		return 0, sql.ErrTableAlreadyExists.New(name)
	}
	all := tx.Bucket(bucketTables)
	id, err := all.NextSequence()
	if err != nil {
		return 0, fmt.Errorf("catalog: allocate table id: %w", err)
	}
	if coll == sql.Collation_Unspecified {
		coll = sql.Collation_Default
	}
	m := newTableMeta(id, name, copySchema(sch, name), coll, comment, nil, 1, connection)
	enc, err := m.marshal()
	if err != nil {
		return 0, err
	}
	tb, err := all.CreateBucket(u64(id))
	if err != nil {
		return 0, fmt.Errorf("catalog: create table %s: %w", name, err)
	}
	for _, kv := range [][2][]byte{
		{keyMeta, enc}, {keyDB, []byte(db)}, {keyCount, u64(0)}, {keyAutoInc, u64(1)},
		{keyCreated, u64(uint64(time.Now().Unix()))},
	} {
		if err := putV(tb, kv[0], kv[1]); err != nil {
			return 0, fmt.Errorf("catalog: create table %s: %w", name, err)
		}
	}
	if _, err := tb.CreateBucket(rowsBucketName(m.layout)); err != nil {
		return 0, fmt.Errorf("catalog: create table %s: %w", name, err)
	}
	if err := putV(tbls, []byte(lower(name)), append(u64(id), name...)); err != nil {
		return 0, fmt.Errorf("catalog: create table %s: %w", name, err)
	}
	tx.OnCommit(func() { s.invalidate(id) })
	return id, nil
}

func (s *Store) dropTableTx(tx *bbolt.Tx, db, name string) error {
	d := dbBucket(tx, db)
	if d == nil {
		return sql.ErrDatabaseNotFound.New(db)
	}
	id, ok, err := lookupTableID(tx, db, name)
	if err != nil {
		return err
	}
	if !ok {
		return sql.ErrTableNotFound.New(name)
	}
	if err := d.Bucket(bucketTbls).Delete([]byte(lower(name))); err != nil {
		return fmt.Errorf("catalog: drop table %s: %w", name, err)
	}
	if err := tx.Bucket(bucketTables).DeleteBucket(u64(id)); err != nil {
		return fmt.Errorf("catalog: drop table %s: %w", name, err)
	}
	tx.OnCommit(func() { s.forget(id) })
	return nil
}

func (s *Store) renameTableTx(tx *bbolt.Tx, db, oldName, newName string) error {
	d := dbBucket(tx, db)
	if d == nil {
		return sql.ErrDatabaseNotFound.New(db)
	}
	id, ok, err := lookupTableID(tx, db, oldName)
	if err != nil {
		return err
	}
	if !ok {
		return sql.ErrTableNotFound.New(oldName)
	}
	tbls := d.Bucket(bucketTbls)
	if lower(oldName) != lower(newName) && tbls.Get([]byte(lower(newName))) != nil {
		return sql.ErrTableAlreadyExists.New(newName)
	}
	m, err := loadMetaTx(tx, id)
	if err != nil {
		return err
	}
	nm := newTableMeta(id, newName, copySchema(m.schema, newName), m.collation, m.comment, m.checks, m.layout, m.connection)
	nm.setIndexes(m.indexes)
	if err := s.putMetaTx(tx, nm); err != nil {
		return err
	}
	if err := tbls.Delete([]byte(lower(oldName))); err != nil {
		return err
	}
	return putV(tbls, []byte(lower(newName)), append(u64(id), newName...))
}

// putMetaTx stores m as the metadata of its table.
func (s *Store) putMetaTx(tx *bbolt.Tx, m *tableMeta) error {
	tb := tableBucket(tx, m.id)
	if tb == nil {
		return ErrSchemaChanged
	}
	enc, err := m.marshal()
	if err != nil {
		return err
	}
	if err := putV(tb, keyMeta, enc); err != nil {
		return fmt.Errorf("catalog: store schema of %s: %w", m.name, err)
	}
	id := m.id
	tx.OnCommit(func() { s.invalidate(id) })
	return nil
}

func loadMetaTx(tx *bbolt.Tx, id uint64) (*tableMeta, error) {
	tb := tableBucket(tx, id)
	if tb == nil {
		return nil, ErrSchemaChanged
	}
	raw, err := getV(tb, keyMeta, tableRecordWhat(id, "schema"))
	if err != nil {
		return nil, err
	}
	return unmarshalMeta(id, raw)
}

func tableNamesTx(tx *bbolt.Tx, db string) ([]string, error) {
	d := dbBucket(tx, db)
	if d == nil {
		return nil, sql.ErrDatabaseNotFound.New(db)
	}
	var names []string
	err := d.Bucket(bucketTbls).ForEach(func(k, v []byte) error {
		p, err := openV(k, v, tableEntryWhat(db, k))
		if err != nil {
			return err
		}
		if len(p) < 8 {
			return corrupt(tableEntryWhat(db, k)())
		}
		names = append(names, string(p[8:]))
		return nil
	})
	sort.Strings(names)
	return names, err
}

// invalidate drops cached metadata of the given tables.
func (s *Store) invalidate(ids ...uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		delete(s.mu.metas, id)
	}
}

// forget drops all in-memory state of dropped tables.
func (s *Store) forget(ids ...uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, id := range ids {
		delete(s.mu.metas, id)
		delete(s.mu.autoinc, id)
	}
}

// meta returns the metadata of table id as seen by tx. Decoded schemas are
// cached, keyed by the exact stored bytes, so a cache entry can never be
// stale with respect to tx.
func (s *Store) meta(tx *bbolt.Tx, id uint64) (*tableMeta, error) {
	tb := tableBucket(tx, id)
	if tb == nil {
		return nil, ErrSchemaChanged
	}
	// The cache is keyed by the sealed bytes: equal bytes passed the
	// checksum when they were cached.
	raw := tb.Get(keyMeta)
	s.mu.Lock()
	c, ok := s.mu.metas[id]
	s.mu.Unlock()
	if ok && bytes.Equal(c.raw, raw) {
		return c.meta, nil
	}
	payload, err := openV(keyMeta, raw, tableRecordWhat(id, "schema"))
	if err != nil {
		return nil, err
	}
	m, err := unmarshalMeta(id, payload)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.mu.metas[id] = cachedMeta{raw: bytes.Clone(raw), meta: m}
	s.mu.Unlock()
	return m, nil
}

// resolve finds table name in database db.
func (s *Store) resolve(tx *bbolt.Tx, db, name string) (*tableMeta, bool, error) {
	id, ok, err := lookupTableID(tx, db, name)
	if err != nil || !ok {
		return nil, false, err
	}
	m, err := s.meta(tx, id)
	if err != nil {
		return nil, false, err
	}
	return m, true, nil
}
