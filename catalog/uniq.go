package catalog

import (
	"encoding/binary"

	"github.com/dolthub/go-mysql-server/sql"
	"go.etcd.io/bbolt"
)

// uniqIndex enforces one UNIQUE secondary index of a keyed table. Its bucket
// (uidx<id> in the table bucket) maps the encoded index columns of each row
// to that row's primary key. Rows with a NULL in an index column are not
// indexed: as in MySQL, NULLs never collide.
type uniqIndex struct {
	def  storedIndex
	ords []int
	key  *keyCodec
	tag  string // prefix of this index's entries in an editor's owner map
}

func uniqBucketName(id uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte("uidx"), id)
}

// setIndexes sets m's secondary indexes and prepares their enforcement.
func (m *tableMeta) setIndexes(idxs []storedIndex) {
	m.indexes, m.uniq = idxs, nil
	for _, si := range idxs {
		if !si.Unique {
			continue
		}
		u := &uniqIndex{def: si, tag: string(binary.BigEndian.AppendUint64(nil, si.ID))}
		for _, c := range si.Columns {
			u.ords = append(u.ords, m.schema.Schema.IndexOfColName(c))
		}
		u.key = newKeyCodec(sql.PrimaryKeySchema{Schema: m.schema.Schema, PkOrdinals: u.ords})
		m.uniq = append(m.uniq, u)
	}
}

// encode returns the unique key of row, or ok=false if an index column is
// NULL.
func (u *uniqIndex) encode(ctx *sql.Context, row sql.Row) (key []byte, ok bool, err error) {
	for _, o := range u.ords {
		if row[o] == nil {
			return nil, false, nil
		}
	}
	key, err = u.key.encodeRow(ctx, nil, row)
	return key, err == nil, err
}

func (u *uniqIndex) dupErr(row, existing sql.Row) error {
	vals := make(sql.Row, len(u.ords))
	for i, o := range u.ords {
		vals[i] = row[o]
	}
	return sql.NewUniqueKeyErr(sql.FormatRow(vals), false, existing)
}

// buildUniqTx (re)builds the bucket of u from the rows of m, failing on the
// first duplicate.
func buildUniqTx(ctx *sql.Context, tx *bbolt.Tx, m *tableMeta, u *uniqIndex) error {
	tb := tableBucket(tx, m.id)
	if tb == nil {
		return ErrSchemaChanged
	}
	name := uniqBucketName(u.def.ID)
	if tb.Bucket(name) != nil {
		if err := tb.DeleteBucket(name); err != nil {
			return err
		}
	}
	b, err := tb.CreateBucket(name)
	if err != nil {
		return err
	}
	rows := tb.Bucket(rowsBucketName(m.layout))
	if rows == nil {
		return ErrSchemaChanged
	}
	return rows.ForEach(func(k, v []byte) error {
		p, err := openV(k, v, rowWhat(m, k))
		if err != nil {
			return err
		}
		row, err := m.rows.decode(ctx, p)
		if err != nil {
			return err
		}
		uk, ok, err := u.encode(ctx, row)
		if err != nil || !ok {
			return err
		}
		owner, err := getV(b, uk, uniqWhat(m, u))
		if err != nil {
			return err
		}
		if owner != nil {
			enc, err := getV(rows, owner, rowWhat(m, owner))
			if err != nil {
				return err
			}
			ex, err := m.rows.decode(ctx, enc)
			if err != nil {
				return err
			}
			return u.dupErr(row, ex)
		}
		return putV(b, uk, k)
	})
}
