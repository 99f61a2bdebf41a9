package catalog

import (
	"bytes"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	"github.com/dolthub/go-mysql-server/sql/plan"
	"github.com/dolthub/go-mysql-server/sql/types"
	"go.etcd.io/bbolt"

	"github.com/dpsql/dpsql/internal/seal"
)

var (
	_ sql.Table                 = (*Table)(nil)
	_ sql.CommentedTable        = (*Table)(nil)
	_ sql.PrimaryKeyTable       = (*Table)(nil)
	_ sql.InsertableTable       = (*Table)(nil)
	_ sql.UpdatableTable        = (*Table)(nil)
	_ sql.DeletableTable        = (*Table)(nil)
	_ sql.ReplaceableTable      = (*Table)(nil)
	_ sql.TruncateableTable     = (*Table)(nil)
	_ sql.AutoIncrementTable    = (*Table)(nil)
	_ sql.IndexAddressableTable = (*Table)(nil)
	_ sql.IndexedTable          = (*indexedTable)(nil)
	_ sql.CheckTable            = (*Table)(nil)
	_ sql.CheckAlterableTable   = (*Table)(nil)
	_ sql.AlterableTable        = (*Table)(nil)
	_ sql.IndexAlterableTable   = (*Table)(nil)
	_ sql.StatisticsTable       = (*Table)(nil)
	_ sql.Index                 = (*pkIndex)(nil)
)

// scanChunk is the number of rows read per read transaction during a scan.
const scanChunk = 1024

// Table is a handle on one stored table, fixed to the layout it was resolved
// with.
type Table struct {
	s    *Store
	db   string
	meta *tableMeta
}

// ID returns the table's stable ID.
func (t *Table) ID() uint64 { return t.meta.id }

// Name implements sql.Nameable.
func (t *Table) Name() string { return t.meta.name }

// String implements sql.Table.
func (t *Table) String() string { return t.meta.name }

// Schema implements sql.Table.
func (t *Table) Schema() sql.Schema { return t.meta.schema.Schema }

// PrimaryKeySchema implements sql.PrimaryKeyTable.
func (t *Table) PrimaryKeySchema() sql.PrimaryKeySchema { return t.meta.schema }

// Collation implements sql.Table.
func (t *Table) Collation() sql.CollationID { return t.meta.collation }

// Comment implements sql.CommentedTable.
func (t *Table) Comment() string { return t.meta.comment }

// partition is the single partition of a full scan, or the partition of an
// index lookup: either a sorted set of point keys or a filtered scan.
type partition struct {
	keys   [][]byte       // point lookup keys; nil means scan
	filter sql.Expression // rows not matching are skipped; nil means all

	// Index lookups must return rows in index order (the engine relies on
	// it, e.g. to answer MAX(pk) with a reverse lookup and LIMIT 1).
	sortBy  []sql.Expression // index expressions; nil for unordered scans
	reverse bool             // descending index order
	inOrder bool             // storage key order is index order
}

func (p *partition) Key() []byte { return []byte("all") }

// Partitions implements sql.Table.
func (t *Table) Partitions(*sql.Context) (sql.PartitionIter, error) {
	return sql.PartitionsToPartitionIter(&partition{}), nil
}

// PartitionRows implements sql.Table.
func (t *Table) PartitionRows(ctx *sql.Context, p sql.Partition) (sql.RowIter, error) {
	part, ok := p.(*partition)
	if !ok {
		return nil, fmt.Errorf("catalog: unexpected partition %T", p)
	}
	it := &rowIter{t: t, part: part}
	if part.sortBy == nil || part.inOrder {
		return it, nil
	}
	// Storage order is not index order: materialise the matching rows and
	// sort them, as go-mysql-server's memory backend does.
	rows, err := sql.RowIterToRows(ctx, it)
	if err != nil {
		return nil, err
	}
	sf := make(sql.SortFields, len(part.sortBy))
	for i, e := range part.sortBy {
		sf[i] = sql.SortField{Column: e}
		if part.reverse {
			sf[i].Order = sql.Descending
		}
	}
	sorter := &expression.Sorter{SortFields: sf, Rows: rows, Ctx: ctx}
	sort.Stable(sorter)
	if sorter.LastError != nil {
		return nil, sorter.LastError
	}
	return sql.RowsToRowIter(rows...), nil
}

// rowIter streams rows in chunks, each read in its own short read
// transaction, so a slow consumer never holds a transaction open.
type rowIter struct {
	t    *Table
	part *partition
	buf  []sql.Row
	pos  int
	last []byte // last key read; the next chunk starts after it
	done bool
}

func (it *rowIter) Next(ctx *sql.Context) (sql.Row, error) {
	for {
		if it.pos < len(it.buf) {
			r := it.buf[it.pos]
			it.buf[it.pos] = nil
			it.pos++
			if it.part.filter != nil {
				ok, err := sql.EvaluateCondition(ctx, it.part.filter, r)
				if err != nil {
					return nil, err
				}
				if !sql.IsTrue(ok) {
					continue
				}
			}
			return r, nil
		}
		if it.done {
			return nil, io.EOF
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if err := it.fill(ctx); err != nil {
			return nil, err
		}
	}
}

func (it *rowIter) fill(ctx *sql.Context) error {
	it.buf, it.pos = it.buf[:0], 0
	m := it.t.meta
	return it.t.s.db.View(func(tx *bbolt.Tx) error {
		rows := rowsBucket(tx, m)
		if rows == nil {
			return ErrSchemaChanged
		}
		if it.part.keys != nil {
			keys := it.part.keys
			if it.part.reverse {
				keys = slices.Clone(keys)
				slices.Reverse(keys)
			}
			for _, k := range keys {
				v, err := getV(rows, k, rowWhat(m, k))
				if err != nil {
					return err
				}
				if v != nil {
					r, err := m.rows.decode(ctx, v)
					if err != nil {
						return err
					}
					it.buf = append(it.buf, r)
				}
			}
			it.done = true
			return nil
		}
		c := rows.Cursor()
		var k, v []byte
		next := c.Next
		switch {
		case it.part.reverse && it.part.inOrder:
			next = c.Prev
			if it.last == nil {
				k, v = c.Last()
			} else {
				// Seek finds the first key >= last; step back past it.
				k, v = c.Seek(it.last)
				if k == nil {
					k, v = c.Last()
				}
				for k != nil && bytes.Compare(k, it.last) >= 0 {
					k, v = c.Prev()
				}
			}
		case it.last == nil:
			k, v = c.First()
		default:
			k, v = c.Seek(it.last)
			if k != nil && bytes.Equal(k, it.last) {
				k, v = c.Next()
			}
		}
		for ; k != nil && len(it.buf) < scanChunk; k, v = next() {
			p, ok := seal.Open(k, v)
			if !ok {
				return corrupt(rowWhat(m, k)())
			}
			r, err := m.rows.decode(ctx, p)
			if err != nil {
				return err
			}
			it.buf = append(it.buf, r)
			it.last = append(it.last[:0], k...)
		}
		if k == nil {
			it.done = true
		}
		return nil
	})
}

func (it *rowIter) Close(*sql.Context) error { return nil }

// RowCount implements sql.StatisticsTable. The count is exact.
func (t *Table) RowCount(ctx *sql.Context) (uint64, bool, error) {
	var n uint64
	err := t.s.db.View(func(tx *bbolt.Tx) error {
		tb := tableBucket(tx, t.meta.id)
		if tb == nil {
			return ErrSchemaChanged
		}
		var err error
		n, err = getCounter(tb, keyCount, t.meta.id)
		return err
	})
	return n, true, err
}

// CreateTime returns when the table was created (to the second, in UTC),
// or false for a table created before dpsql recorded it.
func (t *Table) CreateTime() (time.Time, bool, error) {
	var sec uint64
	err := t.s.db.View(func(tx *bbolt.Tx) error {
		tb := tableBucket(tx, t.meta.id)
		if tb == nil {
			return ErrSchemaChanged
		}
		v, err := getV(tb, keyCreated, tableRecordWhat(t.meta.id, "creation time"))
		sec = getU64(v)
		return err
	})
	if err != nil || sec == 0 {
		return time.Time{}, false, err
	}
	return time.Unix(int64(sec), 0).UTC(), true, nil
}

// DataLength implements sql.StatisticsTable. It is an estimate.
func (t *Table) DataLength(ctx *sql.Context) (uint64, error) {
	n, _, err := t.RowCount(ctx)
	return n * uint64(8*len(t.meta.schema.Schema)), err
}

// GetChecks implements sql.CheckTable.
func (t *Table) GetChecks(*sql.Context) ([]sql.CheckDefinition, error) {
	return append([]sql.CheckDefinition(nil), t.meta.checks...), nil
}

// CreateCheck implements sql.CheckAlterableTable.
func (t *Table) CreateCheck(ctx *sql.Context, check *sql.CheckDefinition) error {
	return t.alterMeta(func(tx *bbolt.Tx, m *tableMeta) (*tableMeta, error) {
		def := *check
		if def.Name == "" {
			def.Name = m.checkName()
		}
		for _, c := range m.checks {
			if strings.EqualFold(c.Name, def.Name) {
				return nil, fmt.Errorf("catalog: check constraint %q already exists on %s", def.Name, m.name)
			}
		}
		checks := append(append([]sql.CheckDefinition(nil), m.checks...), def)
		nm := newTableMeta(m.id, m.name, m.schema, m.collation, m.comment, checks, m.layout, m.connection)
		nm.setIndexes(m.indexes)
		return nm, nil
	})
}

// DropCheck implements sql.CheckAlterableTable.
func (t *Table) DropCheck(ctx *sql.Context, name string) error {
	return t.alterMeta(func(tx *bbolt.Tx, m *tableMeta) (*tableMeta, error) {
		var checks []sql.CheckDefinition
		for _, c := range m.checks {
			if !strings.EqualFold(c.Name, name) {
				checks = append(checks, c)
			}
		}
		if len(checks) == len(m.checks) {
			return nil, sql.ErrUnknownConstraint.New(name)
		}
		nm := newTableMeta(m.id, m.name, m.schema, m.collation, m.comment, checks, m.layout, m.connection)
		nm.setIndexes(m.indexes)
		return nm, nil
	})
}

// checkName returns the first free name of the form <table>_chk_<n>, as
// MySQL generates for unnamed CHECK constraints.
func (m *tableMeta) checkName() string {
	for i := 1; ; i++ {
		name := fmt.Sprintf("%s_chk_%d", m.name, i)
		free := true
		for _, c := range m.checks {
			if strings.EqualFold(c.Name, name) {
				free = false
				break
			}
		}
		if free {
			return name
		}
	}
}

// alterMeta replaces the table's metadata (not its rows) in one transaction.
func (t *Table) alterMeta(fn func(*bbolt.Tx, *tableMeta) (*tableMeta, error)) error {
	var nm *tableMeta
	err := t.s.db.Update(func(tx *bbolt.Tx) error {
		cur, err := t.s.meta(tx, t.meta.id)
		if err != nil {
			return err
		}
		if cur.layout != t.meta.layout {
			return ErrSchemaChanged
		}
		if nm, err = fn(tx, cur); err != nil {
			return err
		}
		return t.s.putMetaTx(tx, nm)
	})
	if err != nil {
		return err
	}
	t.meta = nm
	return nil
}

// pkIndex is an index of a table: its primary key, or a secondary index
// served by filtered scans.
type pkIndex struct {
	db      string
	m       *tableMeta
	name    string
	comment string
	unique  bool
	exprs   []sql.Expression
}

func newPKIndex(db string, m *tableMeta) *pkIndex {
	idx := &pkIndex{db: db, m: m, name: "PRIMARY", unique: true}
	for _, o := range m.schema.PkOrdinals {
		c := m.schema.Schema[o]
		idx.exprs = append(idx.exprs, expression.NewGetFieldWithTable(o, 0, c.Type, db, m.name, c.Name, c.Nullable))
	}
	return idx
}

func newSecondaryIndex(db string, m *tableMeta, si storedIndex) *pkIndex {
	idx := &pkIndex{db: db, m: m, name: si.Name, comment: si.Comment, unique: si.Unique}
	for _, n := range si.Columns {
		o := m.schema.Schema.IndexOfColName(n)
		if o < 0 {
			continue
		}
		c := m.schema.Schema[o]
		idx.exprs = append(idx.exprs, expression.NewGetFieldWithTable(o, 0, c.Type, db, m.name, c.Name, c.Nullable))
	}
	return idx
}

func (i *pkIndex) primary() bool { return i.name == "PRIMARY" }

func (i *pkIndex) ID() string        { return i.name }
func (i *pkIndex) Database() string  { return i.db }
func (i *pkIndex) Table() string     { return i.m.name }
func (i *pkIndex) IsUnique() bool    { return i.unique }
func (i *pkIndex) IsSpatial() bool   { return false }
func (i *pkIndex) IsFullText() bool  { return false }
func (i *pkIndex) IsVector() bool    { return false }
func (i *pkIndex) Comment() string   { return i.comment }
func (i *pkIndex) IndexType() string { return "BTREE" }
func (i *pkIndex) IsGenerated() bool { return false }

func (i *pkIndex) Expressions() []string {
	out := make([]string, len(i.exprs))
	for j, e := range i.exprs {
		out[j] = e.String()
	}
	return out
}

func (i *pkIndex) ColumnExpressionTypes() []sql.ColumnExpressionType {
	out := make([]sql.ColumnExpressionType, len(i.exprs))
	for j, e := range i.exprs {
		out[j] = sql.ColumnExpressionType{Expression: e.String(), Type: e.Type()}
	}
	return out
}

func (i *pkIndex) CanSupport(*sql.Context, ...sql.Range) bool { return true }
func (i *pkIndex) CanSupportOrderBy(sql.Expression) bool      { return false }
func (i *pkIndex) PrefixLengths() []uint16                    { return nil }

// GetIndexes implements sql.IndexAddressable: the primary key (for keyed
// tables) and the secondary indexes.
func (t *Table) GetIndexes(*sql.Context) ([]sql.Index, error) {
	var out []sql.Index
	if t.meta.key != nil {
		out = append(out, newPKIndex(t.db, t.meta))
	}
	for _, si := range t.meta.indexes {
		out = append(out, newSecondaryIndex(t.db, t.meta, si))
	}
	return out, nil
}

// CreateIndex implements sql.IndexAlterableTable. Plain indexes are
// recorded and answered by filtered scans; UNIQUE indexes (on tables with a
// primary key, without prefix lengths) are also enforced.
func (t *Table) CreateIndex(ctx *sql.Context, def sql.IndexDef) error {
	unique := def.Constraint == sql.IndexConstraint_Unique
	if def.Constraint != sql.IndexConstraint_None && !unique {
		return plan.ErrNotIndexable.New()
	}
	if unique {
		if t.meta.key == nil {
			return plan.ErrNotIndexable.New()
		}
		for _, c := range def.Columns {
			if c.Length > 0 {
				return plan.ErrNotIndexable.New()
			}
		}
	}
	var nm *tableMeta
	err := t.s.db.Update(func(tx *bbolt.Tx) error {
		m, err := t.s.meta(tx, t.meta.id)
		if err != nil {
			return err
		}
		if m.layout != t.meta.layout {
			return ErrSchemaChanged
		}
		name := def.Name
		if name == "" {
			name = def.Columns[0].Name
		}
		for _, si := range m.indexes {
			if strings.EqualFold(si.Name, name) {
				return sql.ErrDuplicateKey.New(name)
			}
		}
		si := storedIndex{Name: name, Comment: def.Comment, Unique: unique}
		for _, c := range def.Columns {
			if m.schema.Schema.IndexOfColName(c.Name) < 0 {
				return sql.ErrTableColumnNotFound.New(m.name, c.Name)
			}
			si.Columns = append(si.Columns, c.Name)
		}
		if unique {
			if si.ID, err = tableBucket(tx, m.id).NextSequence(); err != nil {
				return err
			}
		}
		nm = newTableMeta(m.id, m.name, m.schema, m.collation, m.comment, m.checks, m.layout, m.connection)
		nm.setIndexes(append(append([]storedIndex(nil), m.indexes...), si))
		for _, u := range nm.uniq {
			if u.def.ID == si.ID {
				if err := buildUniqTx(ctx, tx, nm, u); err != nil {
					return err
				}
			}
		}
		return t.s.putMetaTx(tx, nm)
	})
	if err != nil {
		return wrapf(err, "catalog: create index on %s", t.meta.name)
	}
	t.meta = nm
	return nil
}

// DropIndex implements sql.IndexAlterableTable.
func (t *Table) DropIndex(ctx *sql.Context, name string) error {
	return t.alterMeta(func(tx *bbolt.Tx, m *tableMeta) (*tableMeta, error) {
		var keep []storedIndex
		for _, si := range m.indexes {
			if !strings.EqualFold(si.Name, name) {
				keep = append(keep, si)
			}
		}
		if len(keep) == len(m.indexes) {
			return nil, sql.ErrIndexNotFound.New(name)
		}
		for _, u := range m.uniq {
			if strings.EqualFold(u.def.Name, name) {
				if err := dropBucketIfExists(tx, m.id, uniqBucketName(u.def.ID)); err != nil {
					return nil, err
				}
			}
		}
		nm := newTableMeta(m.id, m.name, m.schema, m.collation, m.comment, m.checks, m.layout, m.connection)
		nm.setIndexes(keep)
		return nm, nil
	})
}

// RenameIndex implements sql.IndexAlterableTable.
func (t *Table) RenameIndex(ctx *sql.Context, from, to string) error {
	return t.alterMeta(func(tx *bbolt.Tx, m *tableMeta) (*tableMeta, error) {
		idxs := append([]storedIndex(nil), m.indexes...)
		found := false
		for i := range idxs {
			if strings.EqualFold(idxs[i].Name, to) {
				return nil, sql.ErrDuplicateKey.New(to)
			}
			if strings.EqualFold(idxs[i].Name, from) {
				idxs[i].Name, found = to, true
			}
		}
		if !found {
			return nil, sql.ErrIndexNotFound.New(from)
		}
		nm := newTableMeta(m.id, m.name, m.schema, m.collation, m.comment, m.checks, m.layout, m.connection)
		nm.setIndexes(idxs)
		return nm, nil
	})
}

// PreciseMatch implements sql.IndexAddressable: lookups return exactly the
// matching rows.
func (t *Table) PreciseMatch() bool { return true }

// IndexedAccess implements sql.IndexAddressable.
func (t *Table) IndexedAccess(ctx *sql.Context, lookup sql.IndexLookup) sql.IndexedTable {
	return &indexedTable{Table: t}
}

type indexedTable struct {
	*Table
}

// LookupPartitions implements sql.IndexedTable. Ranges that are all exact
// matches on every key column become point reads; anything else is a scan
// filtered by the ranges.
func (it *indexedTable) LookupPartitions(ctx *sql.Context, lookup sql.IndexLookup) (sql.PartitionIter, error) {
	idx, ok := lookup.Index.(*pkIndex)
	if !ok {
		return nil, fmt.Errorf("catalog: unexpected index %T", lookup.Index)
	}
	ranges, ok := lookup.Ranges.(sql.MySQLRangeCollection)
	if !ok {
		return nil, fmt.Errorf("catalog: unexpected range collection %T", lookup.Ranges)
	}
	filter, err := expression.NewRangeFilterExpr(idx.exprs, ranges)
	if err != nil {
		return nil, err
	}
	part := &partition{filter: filter, sortBy: idx.exprs, reverse: lookup.IsReverse}
	if !idx.primary() {
		return sql.PartitionsToPartitionIter(part), nil
	}
	part.inOrder = it.meta.key.ordered()
	if keys, ok := it.pointKeys(ctx, ranges); ok {
		part.keys = keys
	}
	return sql.PartitionsToPartitionIter(part), nil
}

// pointKeys returns the sorted, distinct keys of ranges if every range is an
// exact match on every key column.
func (it *indexedTable) pointKeys(ctx *sql.Context, ranges sql.MySQLRangeCollection) ([][]byte, bool) {
	kc := it.meta.key
	if kc == nil {
		return nil, false
	}
	var keys [][]byte
	for _, r := range ranges {
		if len(r) != len(kc.ords) {
			return nil, false
		}
		var key []byte
		for j, ce := range r {
			lo, ok1 := ce.LowerBound.(sql.Below)
			hi, ok2 := ce.UpperBound.(sql.Above)
			if !ok1 || !ok2 || lo.Key == nil || hi.Key == nil {
				return nil, false
			}
			if cmp, err := ce.Typ.Compare(ctx, lo.Key, hi.Key); err != nil || cmp != 0 {
				return nil, false
			}
			v, inRange, err := kc.types[j].Convert(ctx, lo.Key)
			if err != nil || inRange != sql.InRange || v == nil {
				return nil, false
			}
			// A converted value must compare equal to the original, or the
			// conversion changed it (e.g. truncated 1.5 to 2).
			if cmp, err := ce.Typ.Compare(ctx, v, lo.Key); err != nil || cmp != 0 {
				return nil, false
			}
			if key, err = kc.encodeValue(ctx, key, j, v); err != nil {
				return nil, false
			}
		}
		keys = append(keys, key)
	}
	sort.Slice(keys, func(a, b int) bool { return bytes.Compare(keys[a], keys[b]) < 0 })
	out := keys[:0]
	for i, k := range keys {
		if i == 0 || !bytes.Equal(k, keys[i-1]) {
			out = append(out, k)
		}
	}
	return out, true
}

// autoIncState is the in-memory AUTO_INCREMENT counter of one table, shared
// by every handle on it.
type autoIncState struct {
	mu     sync.Mutex
	loaded bool
	next   uint64
}

// autoIncState returns the shared counter state of table id.
func (s *Store) autoIncState(id uint64) *autoIncState {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.mu.autoinc[id]
	if !ok {
		st = &autoIncState{}
		s.mu.autoinc[id] = st
	}
	return st
}

// autoInc returns the table's loaded AUTO_INCREMENT state.
//
// Lock order: a bbolt transaction may be open when st.mu is taken (the
// editors' commit path), so st.mu is never held while opening one.
func (t *Table) autoInc() (*autoIncState, error) {
	st := t.s.autoIncState(t.meta.id)
	st.mu.Lock()
	loaded := st.loaded
	st.mu.Unlock()
	if loaded {
		return st, nil
	}
	var next uint64
	err := t.s.db.View(func(tx *bbolt.Tx) error {
		tb := tableBucket(tx, t.meta.id)
		if tb == nil {
			return ErrSchemaChanged
		}
		stored, err := getCounter(tb, keyAutoInc, t.meta.id)
		next = max(stored, 1)
		return err
	})
	if err != nil {
		return nil, err
	}
	st.mu.Lock()
	if !st.loaded {
		st.next, st.loaded = next, true
	}
	st.mu.Unlock()
	return st, nil
}

// autoIncTx is autoInc for callers already inside a transaction.
func (t *Table) autoIncTx(tx *bbolt.Tx) (*autoIncState, error) {
	st := t.s.autoIncState(t.meta.id)
	st.mu.Lock()
	defer st.mu.Unlock()
	if !st.loaded {
		tb := tableBucket(tx, t.meta.id)
		if tb == nil {
			return nil, ErrSchemaChanged
		}
		stored, err := getCounter(tb, keyAutoInc, t.meta.id)
		if err != nil {
			return nil, err
		}
		st.next, st.loaded = max(stored, 1), true
	}
	return st, nil
}

// PeekNextAutoIncrementValue implements sql.AutoIncrementGetter.
func (t *Table) PeekNextAutoIncrementValue(*sql.Context) (uint64, error) {
	st, err := t.autoInc()
	if err != nil {
		return 0, err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.next, nil
}

// GetNextAutoIncrementValue implements sql.AutoIncrementTable. With a nil
// insertVal it reserves and returns the next value; with an explicit value it
// moves the counter past it. Reservation is atomic, so concurrent inserts
// never receive the same value.
func (t *Table) GetNextAutoIncrementValue(ctx *sql.Context, insertVal any) (uint64, error) {
	st, err := t.autoInc()
	if err != nil {
		return 0, err
	}
	st.mu.Lock()
	defer st.mu.Unlock()
	if insertVal == nil {
		v := st.next
		st.next++
		return v, nil
	}
	cv, _, err := types.Uint64.Convert(ctx, insertVal)
	if err != nil {
		return 0, fmt.Errorf("catalog: auto-increment value %v: %w", insertVal, err)
	}
	v := cv.(uint64)
	if v >= st.next {
		st.next = v + 1
	}
	return v, nil
}

// AutoIncrementSetter implements sql.AutoIncrementTable.
func (t *Table) AutoIncrementSetter(*sql.Context) sql.AutoIncrementSetter {
	return autoIncSetter{t}
}

type autoIncSetter struct{ t *Table }

// SetAutoIncrementValue sets the next AUTO_INCREMENT value and stores it.
func (a autoIncSetter) SetAutoIncrementValue(ctx *sql.Context, v uint64) error {
	st, err := a.t.autoInc()
	if err != nil {
		return err
	}
	err = a.t.s.db.Update(func(tx *bbolt.Tx) error {
		tb := tableBucket(tx, a.t.meta.id)
		if tb == nil {
			return ErrSchemaChanged
		}
		st.mu.Lock()
		st.next = v
		st.mu.Unlock()
		return putCounter(tb, keyAutoInc, v)
	})
	if err != nil {
		return fmt.Errorf("catalog: set auto-increment of %s: %w", a.t.meta.name, err)
	}
	return nil
}

// AcquireAutoIncrementLock implements sql.AutoIncrementSetter. Values are
// reserved atomically, so no statement-wide lock is needed.
func (a autoIncSetter) AcquireAutoIncrementLock(*sql.Context) (func(), error) {
	return func() {}, nil
}

func (a autoIncSetter) Close(*sql.Context) error { return nil }

func dropBucketIfExists(tx *bbolt.Tx, id uint64, name []byte) error {
	tb := tableBucket(tx, id)
	if tb == nil || tb.Bucket(name) == nil {
		return nil
	}
	return tb.DeleteBucket(name)
}
