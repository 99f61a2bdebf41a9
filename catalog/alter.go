package catalog

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"go.etcd.io/bbolt"
)

// AddColumn implements sql.AlterableTable. Existing rows get NULL in the new
// column; the engine then fills in defaults through an Updater.
func (t *Table) AddColumn(ctx *sql.Context, column *sql.Column, order *sql.ColumnOrder) error {
	old := t.meta.schema.Schema
	if old.IndexOfColName(column.Name) >= 0 {
		return sql.ErrDuplicateColumn.New(column.Name)
	}
	col := column.Copy()
	src := make([]int, len(old))
	for i := range old {
		src[i] = i
	}
	cols := append(sql.Schema(nil), old...)
	pos, err := insertPos(cols, order, len(cols))
	if err != nil {
		return err
	}
	cols = insertAt(cols, pos, col)
	src = insertAt(src, pos, -1)
	return t.rewrite(ctx, cols, src, -1, nil)
}

// DropColumn implements sql.AlterableTable.
func (t *Table) DropColumn(ctx *sql.Context, name string) error {
	old := t.meta.schema.Schema
	i := old.IndexOfColName(name)
	if i < 0 {
		return sql.ErrTableColumnNotFound.New(t.meta.name, name)
	}
	if old[i].PrimaryKey {
		return fmt.Errorf("catalog: cannot drop primary key column %s of %s", name, t.meta.name)
	}
	cols, src := withoutColumn(old, i)
	return t.rewrite(ctx, cols, src, -1, nil)
}

// ModifyColumn implements sql.AlterableTable. Values are converted to the new
// type; if any value does not convert, nothing changes.
func (t *Table) ModifyColumn(ctx *sql.Context, name string, column *sql.Column, order *sql.ColumnOrder) error {
	old := t.meta.schema.Schema
	i := old.IndexOfColName(name)
	if i < 0 {
		return sql.ErrTableColumnNotFound.New(t.meta.name, name)
	}
	if j := old.IndexOfColName(column.Name); j >= 0 && j != i {
		return sql.ErrDuplicateColumn.New(column.Name)
	}
	col := column.Copy()
	col.PrimaryKey = old[i].PrimaryKey
	cols, src := withoutColumn(old, i)
	pos := i
	if order != nil {
		var err error
		if pos, err = insertPos(cols, order, i); err != nil {
			return err
		}
	}
	cols = insertAt(cols, pos, col)
	src = insertAt(src, pos, i)
	return t.rewrite(ctx, cols, src, pos, old[i])
}

func insertPos(cols sql.Schema, order *sql.ColumnOrder, def int) (int, error) {
	switch {
	case order == nil:
		return def, nil
	case order.First:
		return 0, nil
	case order.AfterColumn != "":
		j := cols.IndexOfColName(order.AfterColumn)
		if j < 0 {
			return 0, sql.ErrTableColumnNotFound.New("", order.AfterColumn)
		}
		return j + 1, nil
	}
	return def, nil
}

func insertAt[T any](s []T, i int, v T) []T {
	s = append(s, v)
	copy(s[i+1:], s[i:])
	s[i] = v
	return s
}

// rewrite replaces the table's columns with cols, where column i of the new
// layout takes its values from column src[i] of the old one (-1: NULL).
// Column conv, if non-negative, is converted from oldCol's type to its new
// type. All rows are rewritten into a new rows bucket in one transaction.
func (t *Table) rewrite(ctx *sql.Context, cols sql.Schema, src []int, conv int, oldCol *sql.Column) error {
	// Primary key ordinals follow the columns they name.
	var pkNames []string
	for _, o := range t.meta.schema.PkOrdinals {
		n := t.meta.schema.Schema[o].Name
		if oldCol != nil && strings.EqualFold(n, oldCol.Name) {
			n = cols[conv].Name
		}
		pkNames = append(pkNames, n)
	}
	ords := []int{}
	for _, n := range pkNames {
		ords = append(ords, cols.IndexOfColName(n))
	}
	var nm *tableMeta
	err := t.s.db.Update(func(tx *bbolt.Tx) error {
		cur, err := t.s.meta(tx, t.meta.id)
		if err != nil {
			return err
		}
		if err := refuseFederated(cur); err != nil {
			return err
		}
		if cur.layout != t.meta.layout {
			return ErrSchemaChanged
		}
		sch := copySchema(sql.PrimaryKeySchema{Schema: cols, PkOrdinals: ords}, cur.name)
		nm = newTableMeta(cur.id, cur.name, sch, cur.collation, cur.comment, cur.checks, cur.layout+1, cur.connection)
		nm.setIndexes(remapIndexes(cur.indexes, cols, oldCol, conv))
		tb := tableBucket(tx, cur.id)
		oldRows := tb.Bucket(rowsBucketName(cur.layout))
		if oldRows == nil {
			return ErrSchemaChanged
		}
		newRows, err := tb.CreateBucket(rowsBucketName(nm.layout))
		if err != nil {
			return err
		}
		row := make(sql.Row, len(cols))
		var kbuf []byte
		err = oldRows.ForEach(func(k, v []byte) error {
			p, err := openV(k, v, rowWhat(cur, k))
			if err != nil {
				return err
			}
			old, err := cur.rows.decode(ctx, p)
			if err != nil {
				return err
			}
			for i, s := range src {
				row[i] = nil
				if s >= 0 {
					row[i] = old[s]
				}
			}
			if conv >= 0 && row[conv] != nil {
				cv, _, err := cols[conv].Type.Convert(ctx, row[conv])
				if err != nil {
					return fmt.Errorf("catalog: convert column %s: %w", cols[conv].Name, err)
				}
				row[conv] = cv
			}
			enc, err := nm.rows.encode(ctx, nil, row)
			if err != nil {
				return err
			}
			key := bytes.Clone(k)
			if nm.key != nil {
				if kbuf, err = nm.key.encodeRow(ctx, kbuf[:0], row); err != nil {
					return err
				}
				key = bytes.Clone(kbuf)
				if newRows.Get(key) != nil {
					return sql.NewUniqueKeyErr(sql.FormatRow(row), true, nil)
				}
			}
			return putV(newRows, key, enc)
		})
		if err != nil {
			return err
		}
		if err := newRows.SetSequence(oldRows.Sequence()); err != nil {
			return err
		}
		if err := tb.DeleteBucket(rowsBucketName(cur.layout)); err != nil {
			return err
		}
		// Rebuild unique indexes from the new rows (keys or values may have
		// changed); drop the buckets of indexes that lost all columns.
		for _, u := range cur.uniq {
			if err := dropBucketIfExists(tx, cur.id, uniqBucketName(u.def.ID)); err != nil {
				return err
			}
		}
		for _, u := range nm.uniq {
			if err := buildUniqTx(ctx, tx, nm, u); err != nil {
				return err
			}
		}
		return t.s.putMetaTx(tx, nm)
	})
	if err != nil {
		return wrapf(err, "catalog: alter %s", t.meta.name)
	}
	t.meta = nm
	return nil
}

// remapIndexes follows a renamed column and drops dropped columns from
// secondary indexes, dropping indexes left without columns.
func remapIndexes(idxs []storedIndex, cols sql.Schema, oldCol *sql.Column, conv int) []storedIndex {
	var out []storedIndex
	for _, si := range idxs {
		var keep []string
		for _, c := range si.Columns {
			if oldCol != nil && strings.EqualFold(c, oldCol.Name) {
				c = cols[conv].Name
			}
			if cols.IndexOfColName(c) >= 0 {
				keep = append(keep, c)
			}
		}
		if len(keep) > 0 {
			si.Columns = keep
			out = append(out, si)
		}
	}
	return out
}

// withoutColumn returns the columns of sch other than column i, and for
// each the position it had in sch.
func withoutColumn(sch sql.Schema, i int) (cols sql.Schema, src []int) {
	for j, c := range sch {
		if j != i {
			cols = append(cols, c)
			src = append(src, j)
		}
	}
	return cols, src
}
