package catalog

import (
	"bytes"
	"sort"

	"github.com/dolthub/go-mysql-server/sql"
	"go.etcd.io/bbolt"
)

var (
	_ sql.RowInserter = (*editor)(nil)
	_ sql.RowUpdater  = (*editor)(nil)
	_ sql.RowDeleter  = (*editor)(nil)
	_ sql.RowReplacer = (*editor)(nil)
)

// Inserter implements sql.InsertableTable.
func (t *Table) Inserter(*sql.Context) sql.RowInserter { return t.newEditor() }

// Updater implements sql.UpdatableTable.
func (t *Table) Updater(*sql.Context) sql.RowUpdater { return t.newEditor() }

// Deleter implements sql.DeletableTable.
func (t *Table) Deleter(*sql.Context) sql.RowDeleter { return t.newEditor() }

// Replacer implements sql.ReplaceableTable.
func (t *Table) Replacer(*sql.Context) sql.RowReplacer { return t.newEditor() }

// Truncate implements sql.TruncateableTable. It removes every row and resets
// AUTO_INCREMENT to 1, in one transaction.
func (t *Table) Truncate(ctx *sql.Context) (int, error) {
	var n uint64
	m := t.meta
	if err := refuseFederated(m); err != nil {
		return 0, err
	}
	st, err := t.autoInc()
	if err != nil {
		return 0, err
	}
	err = t.s.db.Update(func(tx *bbolt.Tx) error {
		tb := tableBucket(tx, m.id)
		if tb == nil || tb.Bucket(rowsBucketName(m.layout)) == nil {
			return ErrSchemaChanged
		}
		var err error
		if n, err = getCounter(tb, keyCount, m.id); err != nil {
			return err
		}
		if err := tb.DeleteBucket(rowsBucketName(m.layout)); err != nil {
			return err
		}
		if _, err := tb.CreateBucket(rowsBucketName(m.layout)); err != nil {
			return err
		}
		for _, u := range m.uniq {
			if err := buildUniqTx(ctx, tx, m, u); err != nil {
				return err
			}
		}
		if err := putCounter(tb, keyCount, 0); err != nil {
			return err
		}
		st.mu.Lock()
		st.next = 1
		st.mu.Unlock()
		return putCounter(tb, keyAutoInc, 1)
	})
	if err != nil {
		return 0, wrapf(err, "catalog: truncate %s", m.name)
	}
	return int(n), nil
}

// editor buffers one statement's edits and applies them in a single bbolt
// write transaction when the statement completes.
type editor struct {
	t *Table
	m *tableMeta

	// Keyed tables: the statement's final state of each touched key.
	pending map[string]*pendingRow
	// Keyless tables: rows to append, and a multiset of encoded rows to
	// remove.
	inserts [][]byte
	deletes map[string]int
	// Unique secondary keys claimed by pending rows: index tag + key -> PK.
	uowner map[string]string
}

type pendingRow struct {
	val       []byte   // encoded row; nil means deleted
	mustBeNew bool     // the key was absent when inserted; recheck at commit
	ukeys     []string // entries of uowner claimed by this row
}

func (t *Table) newEditor() *editor {
	return &editor{t: t, m: t.meta, pending: make(map[string]*pendingRow), deletes: make(map[string]int),
		uowner: make(map[string]string)}
}

// StatementBegin implements sql.EditOpenerCloser.
func (e *editor) StatementBegin(*sql.Context) {}

// DiscardChanges implements sql.EditOpenerCloser: the statement's edits are
// dropped and nothing is written.
func (e *editor) DiscardChanges(*sql.Context, error) error {
	e.reset()
	return nil
}

// StatementComplete implements sql.EditOpenerCloser: the statement's edits
// are written in one fsynced transaction.
func (e *editor) StatementComplete(ctx *sql.Context) error {
	defer e.reset()
	return e.flush(ctx)
}

// Close implements sql.Closer. Edits not yet completed or discarded are
// written, which some DDL paths of the engine rely on.
func (e *editor) Close(ctx *sql.Context) error {
	defer e.reset()
	return e.flush(ctx)
}

func (e *editor) reset() {
	clear(e.pending)
	clear(e.deletes)
	clear(e.uowner)
	e.inserts = e.inserts[:0]
}

func (e *editor) encode(ctx *sql.Context, row sql.Row) (key string, val []byte, err error) {
	val, err = e.m.rows.encode(ctx, nil, row)
	if err != nil {
		return "", nil, err
	}
	if e.m.key == nil {
		return "", val, nil
	}
	k, err := e.m.key.encodeRow(ctx, nil, row)
	if err != nil {
		return "", nil, err
	}
	return string(k), val, nil
}

// Insert implements sql.RowInserter.
func (e *editor) Insert(ctx *sql.Context, row sql.Row) error {
	key, val, err := e.encode(ctx, row)
	if err != nil {
		return err
	}
	if e.m.key == nil {
		e.inserts = append(e.inserts, val)
		return nil
	}
	if err := e.checkAbsent(ctx, key, row); err != nil {
		return err
	}
	ukeys, err := e.checkUnique(ctx, row, key)
	if err != nil {
		return err
	}
	p, ok := e.pending[key]
	e.setPending(key, &pendingRow{val: val, mustBeNew: !ok || p.mustBeNew, ukeys: ukeys})
	return nil
}

// setPending records the statement's new state of key, moving the unique
// keys it claims.
func (e *editor) setPending(key string, p *pendingRow) {
	if old, ok := e.pending[key]; ok {
		for _, uk := range old.ukeys {
			if e.uowner[uk] == key {
				delete(e.uowner, uk)
			}
		}
	}
	if p == nil {
		delete(e.pending, key)
		return
	}
	for _, uk := range p.ukeys {
		e.uowner[uk] = key
	}
	e.pending[key] = p
}

// checkUnique returns the unique-index entries row (stored under primary
// key key) would claim, or a unique-key error if another row, stored or
// pending, holds one of them.
func (e *editor) checkUnique(ctx *sql.Context, row sql.Row, key string) ([]string, error) {
	if len(e.m.uniq) == 0 {
		return nil, nil
	}
	var claims []string
	for _, u := range e.m.uniq {
		uk, ok, err := u.encode(ctx, row)
		if err != nil {
			return nil, err
		}
		if !ok {
			continue
		}
		claim := u.tag + string(uk)
		if owner, ok := e.uowner[claim]; ok && owner != key {
			ex, err := e.m.rows.decode(ctx, e.pending[owner].val)
			if err != nil {
				return nil, err
			}
			return nil, u.dupErr(row, ex)
		}
		var existing sql.Row
		err = e.t.s.db.View(func(tx *bbolt.Tx) error {
			tb := tableBucket(tx, e.m.id)
			if tb == nil {
				return ErrSchemaChanged
			}
			b := tb.Bucket(uniqBucketName(u.def.ID))
			if b == nil {
				return ErrSchemaChanged
			}
			owner, err := getV(b, uk, uniqWhat(e.m, u))
			if err != nil {
				return err
			}
			if owner == nil || string(owner) == key {
				return nil
			}
			if _, ok := e.pending[string(owner)]; ok {
				// The owner row is deleted or rewritten by this statement; if
				// it still claims uk, uowner caught it above.
				return nil
			}
			v, err := getV(tb.Bucket(rowsBucketName(e.m.layout)), owner, rowWhat(e.m, owner))
			if err != nil || v == nil {
				return err
			}
			existing, err = e.m.rows.decode(ctx, v)
			return err
		})
		if err != nil {
			return nil, err
		}
		if existing != nil {
			return nil, u.dupErr(row, existing)
		}
		claims = append(claims, claim)
	}
	return claims, nil
}

// checkAbsent returns a duplicate-key error if key exists, taking the
// statement's own pending edits into account.
func (e *editor) checkAbsent(ctx *sql.Context, key string, row sql.Row) error {
	if p, ok := e.pending[key]; ok {
		if p.val == nil {
			return nil
		}
		existing, err := e.m.rows.decode(ctx, p.val)
		if err != nil {
			return err
		}
		return e.dupErr(row, existing)
	}
	var existing sql.Row
	err := e.t.s.db.View(func(tx *bbolt.Tx) error {
		rows := rowsBucket(tx, e.m)
		if rows == nil {
			return ErrSchemaChanged
		}
		v, err := getV(rows, []byte(key), rowWhat(e.m, []byte(key)))
		if err != nil || v == nil {
			return err
		}
		existing, err = e.m.rows.decode(ctx, v)
		return err
	})
	if err != nil {
		return err
	}
	if existing != nil {
		return e.dupErr(row, existing)
	}
	return nil
}

func (e *editor) dupErr(row, existing sql.Row) error {
	vals := make(sql.Row, len(e.m.schema.PkOrdinals))
	for i, o := range e.m.schema.PkOrdinals {
		vals[i] = row[o]
	}
	return sql.NewUniqueKeyErr(sql.FormatRow(vals), true, existing)
}

// Delete implements sql.RowDeleter.
func (e *editor) Delete(ctx *sql.Context, row sql.Row) error {
	key, val, err := e.encode(ctx, row)
	if err != nil {
		return err
	}
	if e.m.key == nil {
		e.deletes[string(val)]++
		return nil
	}
	if p, ok := e.pending[key]; ok && p.mustBeNew {
		e.setPending(key, nil) // inserted by this statement: never existed
		return nil
	}
	e.setPending(key, &pendingRow{})
	return nil
}

// Update implements sql.RowUpdater.
func (e *editor) Update(ctx *sql.Context, old, new sql.Row) error {
	oldKey, oldVal, err := e.encode(ctx, old)
	if err != nil {
		return err
	}
	newKey, newVal, err := e.encode(ctx, new)
	if err != nil {
		return err
	}
	if e.m.key == nil {
		e.deletes[string(oldVal)]++
		e.inserts = append(e.inserts, newVal)
		return nil
	}
	if oldKey == newKey {
		ukeys, err := e.checkUnique(ctx, new, newKey)
		if err != nil {
			return err
		}
		p, ok := e.pending[newKey]
		e.setPending(newKey, &pendingRow{val: newVal, mustBeNew: ok && p.mustBeNew, ukeys: ukeys})
		return nil
	}
	if err := e.checkAbsent(ctx, newKey, new); err != nil {
		return err
	}
	// Release the old row's keys before checking the new row's, and put
	// them back if the check fails (UPDATE IGNORE carries on).
	prev, hadPrev := e.pending[oldKey]
	if err := e.Delete(ctx, old); err != nil {
		return err
	}
	ukeys, err := e.checkUnique(ctx, new, newKey)
	if err != nil {
		e.setPending(oldKey, nil)
		if hadPrev {
			e.setPending(oldKey, prev)
		}
		return err
	}
	p, ok := e.pending[newKey]
	e.setPending(newKey, &pendingRow{val: newVal, mustBeNew: !ok || p.mustBeNew, ukeys: ukeys})
	return nil
}

func (e *editor) empty() bool {
	return len(e.pending) == 0 && len(e.inserts) == 0 && len(e.deletes) == 0
}

// flush applies the buffered edits in one write transaction.
func (e *editor) flush(ctx *sql.Context) error {
	if e.empty() {
		return nil
	}
	if err := refuseFederated(e.m); err != nil {
		return err
	}
	var st *autoIncState
	if e.m.autoCol >= 0 {
		var err error
		if st, err = e.t.autoInc(); err != nil {
			return err
		}
	}
	err := e.t.s.db.Update(func(tx *bbolt.Tx) error {
		return e.applyTx(ctx, tx, st)
	})
	return wrapf(err, "catalog: write %s", e.m.name)
}

func (e *editor) applyTx(ctx *sql.Context, tx *bbolt.Tx, st *autoIncState) error {
	tb, rows, count, err := openRows(tx, e.m)
	if err != nil {
		return err
	}
	if e.m.key != nil {
		keys := make([]string, 0, len(e.pending))
		for k := range e.pending {
			keys = append(keys, k)
		}
		sort.Strings(keys) // sequential puts are cheaper for the B+tree
		if err := e.unindexTx(ctx, tb, rows, keys); err != nil {
			return err
		}
		for _, k := range keys {
			p := e.pending[k]
			existing, err := getV(rows, []byte(k), rowWhat(e.m, []byte(k)))
			if err != nil {
				return err
			}
			if p.val == nil {
				if existing != nil {
					if err := rows.Delete([]byte(k)); err != nil {
						return err
					}
					count--
				}
				continue
			}
			if existing != nil && p.mustBeNew {
				// A concurrent statement inserted the key after our check.
				ex, err := e.m.rows.decode(ctx, existing)
				if err != nil {
					return err
				}
				row, err := e.m.rows.decode(ctx, p.val)
				if err != nil {
					return err
				}
				return e.dupErr(row, ex)
			}
			if existing == nil {
				count++
			}
			if err := putV(rows, []byte(k), p.val); err != nil {
				return err
			}
		}
		if err := e.indexTx(ctx, tb, rows, keys); err != nil {
			return err
		}
	} else {
		if len(e.deletes) > 0 {
			var doomed [][]byte
			c := rows.Cursor()
			for k, v := c.First(); k != nil; k, v = c.Next() {
				p, err := openV(k, v, rowWhat(e.m, k))
				if err != nil {
					return err
				}
				if n := e.deletes[string(p)]; n > 0 {
					e.deletes[string(p)] = n - 1
					doomed = append(doomed, bytes.Clone(k))
				}
			}
			for _, k := range doomed {
				if err := rows.Delete(k); err != nil {
					return err
				}
				count--
			}
		}
		for _, v := range e.inserts {
			seq, err := rows.NextSequence()
			if err != nil {
				return err
			}
			if err := putV(rows, u64(seq), v); err != nil {
				return err
			}
			count++
		}
	}
	if err := putCounter(tb, keyCount, count); err != nil {
		return err
	}
	return storeAutoInc(tb, e.m.id, st)
}

// openRows returns table m's bucket, its rows bucket and its row count.
func openRows(tx *bbolt.Tx, m *tableMeta) (tb, rows *bbolt.Bucket, count uint64, err error) {
	if tb = tableBucket(tx, m.id); tb == nil {
		return nil, nil, 0, ErrSchemaChanged
	}
	if rows = tb.Bucket(rowsBucketName(m.layout)); rows == nil {
		return nil, nil, 0, ErrSchemaChanged
	}
	count, err = getCounter(tb, keyCount, m.id)
	return tb, rows, count, err
}

// storeAutoInc moves table id's stored AUTO_INCREMENT counter (in its
// bucket tb) up to st's, if st is not nil.
func storeAutoInc(tb *bbolt.Bucket, id uint64, st *autoIncState) error {
	if st == nil {
		return nil
	}
	st.mu.Lock()
	next := st.next
	st.mu.Unlock()
	stored, err := getCounter(tb, keyAutoInc, id)
	if err != nil || next <= stored {
		return err
	}
	return putCounter(tb, keyAutoInc, next)
}

// unindexTx removes the unique-index entries of the stored rows that keys
// replace or delete. It runs before any row changes, so entries can move
// between rows within one statement.
func (e *editor) unindexTx(ctx *sql.Context, tb, rows *bbolt.Bucket, keys []string) error {
	if len(e.m.uniq) == 0 {
		return nil
	}
	for _, k := range keys {
		stored, err := getV(rows, []byte(k), rowWhat(e.m, []byte(k)))
		if err != nil {
			return err
		}
		err = e.uniqueEntries(ctx, tb, stored, func(b *bbolt.Bucket, u *uniqIndex, _ sql.Row, uk []byte) error {
			owner, err := getV(b, uk, uniqWhat(e.m, u))
			if err != nil {
				return err
			}
			if string(owner) == k {
				return b.Delete(uk)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// indexTx adds the unique-index entries of the rows written under keys,
// failing if another row holds one (including one committed concurrently).
func (e *editor) indexTx(ctx *sql.Context, tb, rows *bbolt.Bucket, keys []string) error {
	if len(e.m.uniq) == 0 {
		return nil
	}
	for _, k := range keys {
		err := e.uniqueEntries(ctx, tb, e.pending[k].val, func(b *bbolt.Bucket, u *uniqIndex, row sql.Row, uk []byte) error {
			owner, err := getV(b, uk, uniqWhat(e.m, u))
			if err != nil {
				return err
			}
			if owner != nil && string(owner) != k {
				enc, err := getV(rows, owner, rowWhat(e.m, owner))
				if err != nil {
					return err
				}
				ex, err := e.m.rows.decode(ctx, enc)
				if err != nil {
					return err
				}
				return u.dupErr(row, ex)
			}
			return putV(b, uk, []byte(k))
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// uniqueEntries decodes the stored row enc (nothing to do if nil) and
// calls fn with the bucket, index and key of each of its unique-index
// entries; an index in which the row has no entry (a NULL in the key) is
// skipped. A missing index bucket means the schema changed meanwhile.
func (e *editor) uniqueEntries(ctx *sql.Context, tb *bbolt.Bucket, enc []byte, fn func(b *bbolt.Bucket, u *uniqIndex, row sql.Row, uk []byte) error) error {
	if enc == nil {
		return nil
	}
	row, err := e.m.rows.decode(ctx, enc)
	if err != nil {
		return err
	}
	for _, u := range e.m.uniq {
		uk, ok, err := u.encode(ctx, row)
		if err != nil {
			return err
		}
		b := tb.Bucket(uniqBucketName(u.def.ID))
		if b == nil {
			return ErrSchemaChanged
		}
		if !ok {
			continue
		}
		if err := fn(b, u, row, uk); err != nil {
			return err
		}
	}
	return nil
}
