package engine

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"

	"github.com/dpsql/dpsql/catalog"
	"github.com/dpsql/dpsql/catalog/domain"
	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/pgm"
)

// Encoding a source table for synthesis, and decoding what a mechanism
// releases back into SQL rows.
//
// The encoded table is column-major: one []uint16 of codes per attribute,
// filled in a single scan, so memory is two bytes per value whatever the
// column types. Attribute i is dom.Columns[i]. Values outside the public
// domain are mapped by domain.Column.Encode's rules (clipped, or mapped to
// NULL or to the first value); they never widen the domain.

// pgmDomain converts a public domain to the synthesis engine's.
func pgmDomain(dom *domain.Table) (*pgm.Domain, error) {
	d, err := pgm.NewDomain(dom.Names(), dom.Sizes())
	if err != nil {
		return nil, fmt.Errorf("synthesis domain: %w", err)
	}
	return d, nil
}

// columnMap gives, for every attribute of dom, the position of its column
// in sch.
func columnMap(sch sql.Schema, dom *domain.Table) ([]int, error) {
	pos := make([]int, len(dom.Columns))
	for i := range dom.Columns {
		name := dom.Columns[i].Name()
		p := sch.IndexOfColName(name)
		if p < 0 {
			return nil, fmt.Errorf("domain column %s is not in the table", quoteIdent(name))
		}
		pos[i] = p
	}
	return pos, nil
}

// encodeTable reads every row of src once and encodes it over dom. A value
// that cannot be read in its column's type at all (domain.Invalid) is
// encoded like NULL: as NULL when the column is nullable, else as code 0,
// the rule domain.Column.Encode applies to NULL in a NOT NULL column. It
// must not fail the statement: whether a synthesis succeeds would then
// depend on one row's value, outside the privacy accounting.
func encodeTable(ctx context.Context, cat *catalog.Store, src tableRef, dom *domain.Table) (*pgm.Dataset, error) {
	pd, err := pgmDomain(dom)
	if err != nil {
		return nil, err
	}
	pos, err := columnMap(src.Table.Schema(), dom)
	if err != nil {
		return nil, err
	}
	hint := 0
	if n, ok, err := src.Table.RowCount(sql.NewContext(ctx)); err == nil && ok && n < 1<<31 {
		hint = int(n)
	}
	cols := make([][]uint16, len(dom.Columns))
	for i := range cols {
		cols[i] = make([]uint16, 0, hint)
	}
	width := len(src.Table.Schema())
	err = scanSource(ctx, cat, src, func(row sql.Row) error {
		if len(row) != width {
			return catalog.ErrSchemaChanged
		}
		for i := range dom.Columns {
			c := &dom.Columns[i]
			code, st := c.Encode(row[pos[i]])
			if st == domain.Invalid {
				code = max(c.NullCode(), 0)
			}
			cols[i] = append(cols[i], uint16(code))
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", src, err)
	}
	ds, err := pgm.NewDataset(pd, cols)
	if err != nil {
		return nil, fmt.Errorf("encoding %s: %w", src, err)
	}
	return ds, nil
}

// syntheticSchema is the schema of a synthetic table made from a source of
// schema src over its public domain dom (attribute j is column pos[j]; the
// columns in serial are row numbers): the source's column names in its
// order, each typed by its public domain alone (publicType), the row-number
// columns BIGINT NOT NULL; no keys, AUTO_INCREMENT, defaults, comments or
// generated values. Nothing of the source's SQL types is kept.
func syntheticSchema(src sql.Schema, dom *domain.Table, pos, serial []int) (sql.Schema, error) {
	out := make(sql.Schema, len(src))
	for j := range dom.Columns {
		c := &dom.Columns[j]
		t, err := publicType(c)
		if err != nil {
			return nil, ErrDomain.Wrap(err, "type of synthetic column")
		}
		out[pos[j]] = &sql.Column{Name: src[pos[j]].Name, Type: t, Nullable: c.Nullable()}
	}
	for _, p := range serial {
		out[p] = &sql.Column{Name: src[p].Name, Type: serialType}
	}
	for i, c := range out {
		if c == nil {
			return nil, ErrInternal.New("column %s of the source is neither an attribute nor a row number", quoteIdent(src[i].Name))
		}
	}
	return out, nil
}

// decodeRows turns column-major codes into rows of sch, the synthetic
// table's schema: attribute j of dom goes to column pos[j], and the
// row-number columns (see synthesisDomain) get 1, 2, ... Binned attributes
// draw their value inside the bin with rng, which is post-processing
// randomness.
func decodeRows(ctx context.Context, codes [][]uint16, dom *domain.Table, pos, serial []int, sch sql.Schema, rng *rand.Rand) ([]sql.Row, error) {
	d, err := newRowDecoder(ctx, codes, dom, pos, serial, sch, rng)
	if err != nil {
		return nil, err
	}
	width := len(sch)
	rows := make([]sql.Row, d.n)
	vals := make([]any, d.n*width) // one backing array for every row
	for r := range rows {
		row, err := d.next()
		if err != nil {
			return nil, err
		}
		rows[r] = vals[r*width : (r+1)*width : (r+1)*width]
		copy(rows[r], row)
	}
	return rows, nil
}

// rowDecoder decodes column-major codes into rows one at a time, as
// decodeRows does, so that a synthetic table's rows can be written without
// holding them all decoded (a decoded row costs about ten times its codes).
type rowDecoder struct {
	ctx    context.Context
	codes  [][]uint16
	dom    *domain.Table
	pos    []int
	serial []int
	sch    sql.Schema
	rng    *rand.Rand
	n, r   int     // rows in all, rows decoded
	row    sql.Row // reused by every call of next
}

// newRowDecoder checks codes against dom — one column of n codes per
// attribute, each inside its column's domain — so that decoding cannot fail
// on them later (it runs after the charge is committed).
func newRowDecoder(ctx context.Context, codes [][]uint16, dom *domain.Table, pos, serial []int, sch sql.Schema, rng *rand.Rand) (*rowDecoder, error) {
	if len(codes) != len(dom.Columns) {
		return nil, fmt.Errorf("decoding: %d columns of codes for %d attributes", len(codes), len(dom.Columns))
	}
	n := 0
	if len(codes) > 0 {
		n = len(codes[0])
	}
	for j, col := range codes {
		if len(col) != n {
			return nil, fmt.Errorf("decoding: column %d has %d codes, want %d", j, len(col), n)
		}
		size := dom.Columns[j].Size()
		for _, code := range col {
			if int(code) >= size {
				return nil, fmt.Errorf("decoding: code %d of column %d outside its domain of %d values", code, j, size)
			}
		}
	}
	return &rowDecoder{ctx: ctx, codes: codes, dom: dom, pos: pos, serial: serial, sch: sch, rng: rng, n: n,
		row: make(sql.Row, len(sch))}, nil
}

// next returns the next row, or io.EOF after the last; the row is reused
// by the following call.
func (d *rowDecoder) next() (sql.Row, error) {
	if d.r == d.n {
		return nil, io.EOF
	}
	r := d.r
	d.r++
	for j := range d.dom.Columns {
		p := d.pos[j]
		v, err := convertValue(d.ctx, d.sch[p], d.dom.Columns[j].Decode(int(d.codes[j][r]), d.rng))
		if err != nil {
			return nil, err
		}
		d.row[p] = v
	}
	for _, p := range d.serial {
		v, err := convertValue(d.ctx, d.sch[p], int64(r+1))
		if err != nil {
			return nil, err
		}
		d.row[p] = v
	}
	return d.row, nil
}

// convertValue converts a decoded domain value to col's SQL type.
func convertValue(ctx context.Context, col *sql.Column, v any) (any, error) {
	if v == nil {
		return nil, nil
	}
	out, _, err := col.Type.Convert(ctx, v)
	if err != nil {
		return nil, fmt.Errorf("decoding column %s: value %v does not fit %s: %w", quoteIdent(col.Name), v, col.Type, err)
	}
	return out, nil
}

// Answers tables.
//
// An answers-only mechanism (gaussian) releases noisy marginals, not rows.
// Its "synthetic table" has one row per cell of every answered marginal:
//
//	dp_marginal     INT      1-based number of the marginal, in workload order
//	dp_columns      TEXT     the marginal's columns, comma-separated
//	<attribute>     ...      one per attribute of the domain (row-number
//	                         columns are left out), same name, typed by its
//	                         public domain (publicType), nullable: the
//	                         cell's value for the marginal's columns, NULL
//	                         for the others (dp_columns tells a NULL cell
//	                         value apart); a binned column shows its bin's
//	                         lower bound
//	dp_noisy_count  DOUBLE   the noisy count of the cell (may be negative)
//
// so that, for instance, SELECT sex, dp_noisy_count FROM t WHERE
// dp_columns = 'sex' reads one noisy marginal.
const (
	answersMarginal = "dp_marginal"
	answersColumns  = "dp_columns"
	answersCount    = "dp_noisy_count"
)

// answersSchema is the schema of an answers table over the attributes of
// dom.
func answersSchema(dom *domain.Table) (sql.Schema, error) {
	out := sql.Schema{
		{Name: answersMarginal, Type: types.Int32},
		{Name: answersColumns, Type: types.Text},
	}
	for j := range dom.Columns {
		c := &dom.Columns[j]
		for _, reserved := range []string{answersMarginal, answersColumns, answersCount} {
			if strings.EqualFold(c.Name(), reserved) {
				return nil, ErrBadParameter.New("the source has a column named %s, which an answers-only table uses for itself", quoteIdent(c.Name()))
			}
		}
		t, err := publicType(c)
		if err != nil {
			return nil, ErrDomain.Wrap(err, "type of answers column")
		}
		out = append(out, &sql.Column{Name: c.Name(), Type: t, Nullable: true})
	}
	out = append(out, &sql.Column{Name: answersCount, Type: types.Float64})
	return out, nil
}

// answerRows lays out identity measurements (noisy marginals) as rows of
// an answers table of schema sch.
func answerRows(ctx context.Context, meas []synth.Measurement, dom *domain.Table, sch sql.Schema) ([]sql.Row, error) {
	const lead = 2 // dp_marginal, dp_columns
	var rows []sql.Row
	cell := []int{}
	for k, m := range meas {
		if m.Query != nil || m.Coarse != nil {
			return nil, fmt.Errorf("answer %d is not a plain marginal", k+1)
		}
		names := make([]string, len(m.Attrs))
		cells := 1
		for i, a := range m.Attrs {
			names[i] = dom.Columns[a].Name()
			cells *= dom.Columns[a].Size()
		}
		if len(m.Y) != cells {
			return nil, fmt.Errorf("answer %d has %d cells, want %d", k+1, len(m.Y), cells)
		}
		label := strings.Join(names, ",")
		cell = cell[:0]
		for range m.Attrs {
			cell = append(cell, 0)
		}
		for _, y := range m.Y {
			row := make(sql.Row, len(sch))
			row[0], row[1], row[len(row)-1] = int32(k+1), label, y
			for i, a := range m.Attrs {
				v, err := convertValue(ctx, sch[lead+a], cellValue(&dom.Columns[a], cell[i]))
				if err != nil {
					return nil, err
				}
				row[lead+a] = v
			}
			rows = append(rows, row)
			// Next cell, the last attribute varying fastest.
			for i := len(cell) - 1; i >= 0; i-- {
				cell[i]++
				if cell[i] < dom.Columns[m.Attrs[i]].Size() {
					break
				}
				cell[i] = 0
			}
		}
	}
	return rows, nil
}

// cellValue is the value an answers table shows for code of c: the value,
// nil for NULL, and a bin's lower bound.
func cellValue(c *domain.Column, code int) any {
	if code == c.NullCode() {
		return nil
	}
	if c.Kind() == domain.Binned {
		lo, _, _ := c.Bin(code)
		if c.Type() == domain.Int {
			return int64(lo)
		}
		return lo
	}
	v, _ := c.Value(code)
	return v.Any()
}
