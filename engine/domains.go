package engine

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/dolthub/go-mysql-server/sql"

	"github.com/dpsql/dpsql/catalog"
	"github.com/dpsql/dpsql/catalog/domain"
)

// tableDomain returns the public domain of every column of t: from the
// schema (ENUM, BOOLEAN, CHECK constraints) and the owner's declarations.
// It fails, naming the columns, if some column has no finite domain: every
// column of a synthesized table must have one, since domains are public and
// never read from the data.
func (e *Engine) tableDomain(ctx *sql.Context, t tableRef) (*domain.Table, error) {
	declared, err := e.declaredDomains(ctx, t)
	if err != nil {
		return nil, err
	}
	dom, errs, err := deriveDomain(ctx, t, declared)
	if err != nil {
		return nil, err
	}
	if len(errs) > 0 {
		var missing []string
		for _, err := range errs {
			var m *domain.MissingDomainError
			if errors.As(err, &m) {
				missing = append(missing, err.Error())
				continue
			}
			return nil, ErrDomain.Wrap(err, "domain of %s", t)
		}
		return nil, ErrDomain.New("table %s has columns without a public domain: %s; declare them with ALTER TABLE %s SET DOMAIN <column> BETWEEN <lo> AND <hi> BINS <n> or SET DOMAIN <column> IN (...)",
			t, strings.Join(missing, "; "), t)
	}
	return &dom, nil
}

// Declared domains are stored in the catalog's metadata bucket
// domainsBucket, one record per column, keyed by the table's stable ID
// (8 bytes, big-endian) followed by the lower-cased column name. Keying by
// ID means a table dropped and re-created under the same name starts with
// no declarations.
//
// A declaration applies while the column keeps its name and SQL type: the
// record keeps the type the declaration was validated against, and
// deriveDomain derives t's domain from its schema, CHECK constraints and
// the owner's declarations (domain.FromSchema); errs lists the columns
// without a domain and unusable checks or declarations, err a failure to
// read the checks.
func deriveDomain(ctx *sql.Context, t tableRef, declared map[string]domain.Column) (dom domain.Table, errs []error, err error) {
	checks, err := t.Table.GetChecks(ctx)
	if err != nil {
		return domain.Table{}, nil, ErrInternal.Wrap(err, "reading the checks of %s", t)
	}
	texts := make([]string, len(checks))
	for i, c := range checks {
		texts[i] = c.CheckExpression
	}
	dom, errs = domain.FromSchema(t.Table.Schema(), texts, declared)
	return dom, errs, nil
}

// declaredDomains ignores records whose column was dropped, renamed or
// changed type (SHOW DOMAIN then reports the column as missing, and the
// owner declares it again). Stale records are never used; SET DOMAIN on
// the table removes them.
const domainsBucket = "dp_domains"

// declaration is the stored form of one SET DOMAIN.
type declaration struct {
	Column   string        `json:"column"`   // column name as declared
	Type     string        `json:"type"`     // the column's SQL type when declared
	Domain   domain.Column `json:"domain"`   // the declared domain
	User     string        `json:"user"`     // who declared it
	Declared time.Time     `json:"declared"` // when
}

// tableKey is the prefix of every metadata key of a table.
func tableKey(id uint64) []byte {
	return binary.BigEndian.AppendUint64(make([]byte, 0, 8+16), id)
}

// domainKey is the key of column's declaration on table id.
func domainKey(id uint64, column string) []byte {
	return append(tableKey(id), strings.ToLower(column)...)
}

// forEachPrefix calls fn for every key of metadata bucket bucket that
// starts with prefix, in key order.
func forEachPrefix(tx *catalog.Tx, bucket string, prefix []byte, fn func(k, v []byte) error) error {
	return tx.ForEachPrefix(bucket, prefix, fn)
}

// storedDeclarations returns every declaration recorded for table id,
// current or stale, keyed by lower-cased column name.
func (e *Engine) storedDeclarations(ctx *sql.Context, id uint64) (map[string]declaration, error) {
	decls := make(map[string]declaration)
	err := e.dp.cat.View(ctx, func(tx *catalog.Tx) error {
		return forEachPrefix(tx, domainsBucket, tableKey(id), func(k, v []byte) error {
			var d declaration
			if err := json.Unmarshal(v, &d); err != nil {
				return fmt.Errorf("declaration %q: %w", k[8:], err)
			}
			decls[string(k[8:])] = d
			return nil
		})
	})
	if err != nil {
		return nil, ErrInternal.Wrap(err, "reading the domain declarations of table %d", id)
	}
	return decls, nil
}

// declaredDomains returns the owner's domain declarations for t, keyed by
// column name, for the columns that still exist with the type they were
// declared for.
func (e *Engine) declaredDomains(ctx *sql.Context, t tableRef) (map[string]domain.Column, error) {
	if err := e.needCatalog("domain declarations"); err != nil {
		return nil, err
	}
	decls, err := e.storedDeclarations(ctx, t.ID)
	if err != nil {
		return nil, err
	}
	out := make(map[string]domain.Column, len(decls))
	for _, sc := range t.Table.Schema() {
		d, ok := decls[strings.ToLower(sc.Name)]
		if ok && d.Type == sc.Type.String() {
			out[sc.Name] = d.Domain
		}
	}
	return out, nil
}
