package catalog

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/mysql_db"
	"go.etcd.io/bbolt"

	"github.com/dpsql/dpsql/internal/seal"
)

var _ mysql_db.MySQLDbPersistence = GrantsPersister{}

// GrantsPersister stores go-mysql-server's mysql database (users, roles,
// grants) in the Store. Pass it to MySQLDb.SetPersister and restore at start
// with MySQLDb.LoadData(ctx, Store.LoadGrants()).
type GrantsPersister struct {
	S *Store
}

// Persist implements mysql_db.MySQLDbPersistence: the blob is replaced
// atomically and durably.
func (g GrantsPersister) Persist(ctx *sql.Context, data []byte) error {
	return g.S.StoreGrants(ctx, data)
}

// metaPrefix starts the name of every metadata bucket.
const metaPrefix = "meta_"

// Tx is a bbolt transaction on a Store, giving typed access to metadata
// buckets and to table creation and row insertion, so that a table, its rows
// and related metadata can be written atomically.
//
// Byte slices returned by Get and passed to ForEach's callback are copies and
// remain valid after the transaction ends.
type Tx struct {
	s   *Store
	ctx *sql.Context
	tx  *bbolt.Tx
	// err is a corrupt record met by a method that cannot return an error
	// (TableID); it fails the transaction.
	err error
}

// run calls fn on tx and fails if a corrupt record was met on the way.
func (tx *Tx) run(fn func(*Tx) error) error {
	if err := fn(tx); err != nil {
		return err
	}
	return tx.err
}

// Update runs fn in a write transaction, committed (and fsynced) only if fn
// returns nil.
func (s *Store) Update(ctx context.Context, fn func(*Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	sctx := asSQLContext(ctx)
	return s.db.Update(func(btx *bbolt.Tx) error { return (&Tx{s: s, ctx: sctx, tx: btx}).run(fn) })
}

// View runs fn in a read-only transaction.
func (s *Store) View(ctx context.Context, fn func(*Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	sctx := asSQLContext(ctx)
	return s.db.View(func(btx *bbolt.Tx) error { return (&Tx{s: s, ctx: sctx, tx: btx}).run(fn) })
}

func asSQLContext(ctx context.Context) *sql.Context {
	if sctx, ok := ctx.(*sql.Context); ok {
		return sctx
	}
	return sql.NewContext(ctx)
}

// Bolt returns the underlying bbolt transaction. Values in the catalog's
// buckets are sealed (sealed.go): read and write them through Tx's methods.
func (tx *Tx) Bolt() *bbolt.Tx { return tx.tx }

func metaBucketName(bucket string) ([]byte, error) {
	if bucket == "" || strings.ContainsRune(bucket, 0) {
		return nil, fmt.Errorf("%w: %q", ErrReservedBucket, bucket)
	}
	return []byte(metaPrefix + bucket), nil
}

// metaBucket returns metadata bucket bucket, or nil if it does not exist
// yet.
func (tx *Tx) metaBucket(bucket string) (*bbolt.Bucket, error) {
	name, err := metaBucketName(bucket)
	if err != nil {
		return nil, err
	}
	return tx.tx.Bucket(name), nil
}

// Put stores val under key in metadata bucket "meta_"+bucket, creating the
// bucket if needed.
func (tx *Tx) Put(bucket string, key, val []byte) error {
	return tx.put(bucket, key, func(key []byte) []byte { return seal.Seal(key, val) })
}

// PutOwned is Put for a value the caller gives up: it is sealed in place
// (without a copy when it has seal.Size bytes of spare capacity), so a
// large value is not held twice until the commit.
func (tx *Tx) PutOwned(bucket string, key, val []byte) error {
	return tx.put(bucket, key, func(key []byte) []byte { return seal.InPlace(key, val) })
}

// put stores sealed(key) under a copy of key in metadata bucket bucket.
func (tx *Tx) put(bucket string, key []byte, sealed func(key []byte) []byte) error {
	name, err := metaBucketName(bucket)
	if err != nil {
		return err
	}
	b, err := tx.tx.CreateBucketIfNotExists(name)
	if err != nil {
		return fmt.Errorf("catalog: metadata bucket %s: %w", bucket, err)
	}
	key = bytes.Clone(key)
	if err := b.Put(key, sealed(key)); err != nil {
		return fmt.Errorf("catalog: put %s/%q: %w", bucket, key, err)
	}
	return nil
}

// Get returns a copy of the value under key in metadata bucket bucket, or
// nil if there is none.
func (tx *Tx) Get(bucket string, key []byte) ([]byte, error) {
	b, err := tx.metaBucket(bucket)
	if b == nil {
		return nil, err
	}
	v, err := getV(b, key, metaWhat(bucket, key))
	return bytes.Clone(v), err
}

// Delete removes key from metadata bucket bucket. Deleting a missing key is
// not an error.
func (tx *Tx) Delete(bucket string, key []byte) error {
	b, err := tx.metaBucket(bucket)
	if b == nil {
		return err
	}
	if err := b.Delete(key); err != nil {
		return fmt.Errorf("catalog: delete %s/%q: %w", bucket, key, err)
	}
	return nil
}

// ForEach calls fn for every key/value pair of metadata bucket bucket, in key
// order. It stops at the first error fn returns.
func (tx *Tx) ForEach(bucket string, fn func(k, v []byte) error) error {
	b, err := tx.metaBucket(bucket)
	if b == nil {
		return err
	}
	return b.ForEach(func(k, v []byte) error {
		p, err := openV(k, v, metaWhat(bucket, k))
		if err != nil {
			return err
		}
		return fn(bytes.Clone(k), bytes.Clone(p))
	})
}

// ForEachPrefix is ForEach restricted to the keys that start with prefix.
func (tx *Tx) ForEachPrefix(bucket string, prefix []byte, fn func(k, v []byte) error) error {
	b, err := tx.metaBucket(bucket)
	if b == nil {
		return err
	}
	c := b.Cursor()
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
		p, err := openV(k, v, metaWhat(bucket, k))
		if err != nil {
			return err
		}
		if err := fn(bytes.Clone(k), bytes.Clone(p)); err != nil {
			return err
		}
	}
	return nil
}

// TableID returns the stable ID of table in database db. If the table's
// record is corrupt, it reports no table and the transaction fails with
// the corruption error.
func (tx *Tx) TableID(db, table string) (uint64, bool) {
	id, ok, err := lookupTableID(tx.tx, db, table)
	if err != nil && tx.err == nil {
		tx.err = err
	}
	return id, ok
}

// TableByID returns the database and name of the table with stable ID id,
// or false if there is none (it was dropped).
func (tx *Tx) TableByID(id uint64) (db, name string, ok bool, err error) {
	tb := tableBucket(tx.tx, id)
	if tb == nil {
		return "", "", false, nil
	}
	d, err := getV(tb, keyDB, tableRecordWhat(id, "database name"))
	if err != nil {
		return "", "", false, err
	}
	m, err := tx.s.meta(tx.tx, id)
	if err != nil {
		return "", "", false, err
	}
	return string(d), m.name, true, nil
}

// CreateDatabase creates database name.
func (tx *Tx) CreateDatabase(name string) error { return createDatabaseTx(tx.tx, name) }

// CreateTable creates table name in database db and returns its stable ID.
func (tx *Tx) CreateTable(db, name string, schema sql.PrimaryKeySchema, collation sql.CollationID, comment string) (uint64, error) {
	return tx.s.createTableTx(tx.tx, db, name, schema, collation, comment, "")
}

// DropTable drops table name from database db.
func (tx *Tx) DropTable(db, name string) error { return tx.s.dropTableTx(tx.tx, db, name) }

// RowSource yields rows one at a time, then io.EOF. The row it returns need
// only stay valid until the next call: the catalog encodes it first.
type RowSource func() (sql.Row, error)

// SliceRows is the RowSource of rows.
func SliceRows(rows []sql.Row) RowSource {
	i := 0
	return func() (sql.Row, error) {
		if i == len(rows) {
			return nil, io.EOF
		}
		i++
		return rows[i-1], nil
	}
}

// InsertRows inserts rows into table db.name. A duplicate primary key fails
// the call (and, if returned from fn, the whole transaction).
func (tx *Tx) InsertRows(db, name string, rows []sql.Row) error {
	_, err := tx.InsertFrom(db, name, SliceRows(rows))
	return err
}

// InsertFrom inserts every row of src into table db.name and returns how
// many it inserted. A duplicate primary key fails the call (and, if
// returned from fn, the whole transaction). Rows of a table without a
// primary key go into the transaction as they come, sealed into shared
// chunks: a large insert (a synthetic table's rows) then holds each row
// once, encoded, instead of also as a decoded row and a staged copy.
func (tx *Tx) InsertFrom(db, name string, src RowSource) (int64, error) {
	m, ok, err := tx.s.resolve(tx.tx, db, name)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, sql.ErrTableNotFound.New(name)
	}
	t := &Table{s: tx.s, db: db, meta: m}
	var st *autoIncState
	if m.autoCol >= 0 {
		if st, err = t.autoIncTx(tx.tx); err != nil {
			return 0, err
		}
	}
	var n int64
	var maxAuto uint64 // 1 + the largest AUTO_INCREMENT value inserted
	next := func() (sql.Row, error) {
		r, err := src()
		if err != nil {
			return nil, err
		}
		n++
		if m.autoCol >= 0 {
			if v, ok := asUint64OrInt(r[m.autoCol]); ok && v >= maxAuto {
				maxAuto = v + 1
			}
		}
		return r, nil
	}
	// Move the counter past inserted values so later SQL inserts do not
	// collide with them.
	bumpAuto := func() {
		if st == nil {
			return
		}
		st.mu.Lock()
		st.next = max(st.next, maxAuto)
		st.mu.Unlock()
	}
	if m.key == nil {
		tb, err := tx.appendRows(t, next)
		if err == nil {
			bumpAuto()
			err = storeAutoInc(tb, m.id, st)
		}
		return n, wrapf(err, "catalog: insert into %s.%s", db, name)
	}
	e := t.newEditor()
	for {
		r, err := next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, err
		}
		key, val, err := e.encode(tx.ctx, r)
		if err != nil {
			return 0, err
		}
		if p, ok := e.pending[key]; ok && p.val != nil {
			ex, _ := m.rows.decode(tx.ctx, p.val)
			return 0, e.dupErr(r, ex)
		}
		e.pending[key] = &pendingRow{val: val, mustBeNew: true}
	}
	bumpAuto()
	return n, wrapf(e.applyTx(tx.ctx, tx.tx, st), "catalog: insert into %s.%s", db, name)
}

// appendChunk is the size of the chunks appendRows seals rows into.
const appendChunk = 256 << 10

// appendRows appends the rows of next to keyless table t, each under the
// bucket's next sequence number, updates its row count and returns its
// bucket. The sealed values are carved from shared chunks (bbolt keeps each
// value it is given until the commit, so a chunk is never reused) rather
// than allocated row by row.
func (tx *Tx) appendRows(t *Table, next RowSource) (*bbolt.Bucket, error) {
	tb, rows, count, err := openRows(tx.tx, t.meta)
	if err != nil {
		return nil, err
	}
	var payload, chunk []byte
	key := make([]byte, 8)
	for {
		r, err := next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if payload, err = t.meta.rows.encode(tx.ctx, payload[:0], r); err != nil {
			return nil, err
		}
		seq, err := rows.NextSequence()
		if err != nil {
			return nil, err
		}
		binary.BigEndian.PutUint64(key, seq)
		if need := len(payload) + seal.Size; cap(chunk)-len(chunk) < need {
			chunk = make([]byte, 0, max(appendChunk, need))
		}
		start := len(chunk)
		chunk = seal.Append(chunk, key, payload)
		if err := rows.Put(key, chunk[start:len(chunk):len(chunk)]); err != nil {
			return nil, err
		}
		count++
	}
	return tb, putCounter(tb, keyCount, count)
}

func asUint64OrInt(v any) (uint64, bool) {
	if u, ok := asUint64(v); ok {
		return u, true
	}
	if n, ok := asInt64(v); ok && n >= 0 {
		return uint64(n), true
	}
	return 0, false
}

// CreateTableWithRows creates table db.name with the given schema and rows
// and runs extra (if non-nil) in the same write transaction, so the table,
// its rows and any metadata extra writes become visible together or not at
// all. It returns the new table's stable ID.
func (s *Store) CreateTableWithRows(ctx context.Context, db, name string, schema sql.PrimaryKeySchema, rows []sql.Row, extra func(*Tx) error) (uint64, error) {
	return s.CreateTableFrom(ctx, db, name, schema, "", SliceRows(rows), extra)
}

// CreateTableFrom is CreateTableWithRows for a table with a comment (its
// TABLE_COMMENT, shown by SHOW CREATE TABLE) whose rows come from src.
func (s *Store) CreateTableFrom(ctx context.Context, db, name string, schema sql.PrimaryKeySchema, comment string, src RowSource, extra func(*Tx) error) (uint64, error) {
	var id uint64
	err := s.Update(ctx, func(tx *Tx) error {
		var err error
		if id, err = tx.CreateTable(db, name, schema, sql.Collation_Default, comment); err != nil {
			return err
		}
		if _, err := tx.InsertFrom(db, name, src); err != nil {
			return err
		}
		if extra != nil {
			return extra(tx)
		}
		return nil
	})
	if err != nil {
		return 0, wrapf(err, "catalog: create %s.%s", db, name)
	}
	return id, nil
}

// ScanTable calls fn for every row of table db.table, in key order, without
// going through SQL. Rows are read in chunks, each in its own read
// transaction, so fn may be slow; a scan racing with writers sees each chunk
// at its own commit point. Rows passed to fn are not reused.
func (s *Store) ScanTable(ctx context.Context, db, table string, fn func(sql.Row) error) error {
	sctx := asSQLContext(ctx)
	var t *Table
	err := s.db.View(func(tx *bbolt.Tx) error {
		m, ok, err := s.resolve(tx, db, table)
		if err != nil {
			return err
		}
		if !ok {
			return sql.ErrTableNotFound.New(table)
		}
		t = &Table{s: s, db: db, meta: m}
		return nil
	})
	if err != nil {
		return wrapf(err, "catalog: scan %s.%s", db, table)
	}
	it := &rowIter{t: t, part: &partition{}}
	for {
		r, err := it.Next(sctx)
		if err != nil {
			if err == io.EOF {
				return nil
			}
			return wrapf(err, "catalog: scan %s.%s", db, table)
		}
		if err := fn(r); err != nil {
			return err
		}
	}
}

// Table returns a handle on table db.name, for callers that need its schema
// or ID without SQL.
func (s *Store) Table(ctx context.Context, db, name string) (*Table, bool, error) {
	var t *Table
	err := s.db.View(func(tx *bbolt.Tx) error {
		m, ok, err := s.resolve(tx, db, name)
		if ok {
			t = &Table{s: s, db: db, meta: m}
		}
		return err
	})
	if err != nil {
		return nil, false, wrapf(err, "catalog: table %s.%s", db, name)
	}
	return t, t != nil, nil
}
