package csvload

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"
)

// Defaults of Options.
const (
	DefaultBatchRows  = 1000
	DefaultBatchBytes = 1 << 20
)

// Options configures Load. A nil *Options means the defaults.
type Options struct {
	// Domain maps column names to domain sizes. Such a column becomes
	// INT NOT NULL CHECK (col BETWEEN 0 AND size-1), and every value must
	// lie in that range.
	Domain map[string]int
	// BatchRows and BatchBytes bound one INSERT statement; zero means the
	// default.
	BatchRows  int
	BatchBytes int
	// Progress, if not nil, is called after each batch with the bytes of the
	// file read so far, its size and the rows loaded so far.
	Progress func(done, total int64, rows int)
}

// Result describes a finished load.
type Result struct {
	Rows    int      // rows inserted
	Batches int      // INSERT statements sent
	Created bool     // the table was created by this load
	Columns []Column // the table's columns, in CSV order
}

// RowError is a problem with one line of the CSV file.
type RowError struct {
	Line   int    // 1-based line in the file
	Column string // column name, if the problem is one field
	Msg    string
	Err    error
}

func (e *RowError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "line %d", e.Line)
	if e.Column != "" {
		fmt.Fprintf(&b, ", column %s", QuoteIdent(e.Column))
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(e.Err.Error())
	}
	return b.String()
}

func (e *RowError) Unwrap() error { return e.Err }

// Load loads the CSV file at path into table db.table over conn, creating
// the database and the table if they do not exist.
func Load(ctx context.Context, conn *sql.DB, db, table, path string, opts *Options) (*Result, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.BatchRows <= 0 {
		o.BatchRows = DefaultBatchRows
	}
	if o.BatchBytes <= 0 {
		o.BatchBytes = DefaultBatchBytes
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("opening CSV: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("opening CSV: %w", err)
	}

	header, st, _, err := scan(f, o.Domain)
	if err != nil {
		return nil, err
	}
	existing, err := tableColumns(ctx, conn, db, table)
	if err != nil {
		return nil, err
	}
	cols, err := decide(header, st, o.Domain, existing)
	if err != nil {
		return nil, err
	}
	res := &Result{Columns: cols}
	if existing == nil {
		if _, err := conn.ExecContext(ctx, "CREATE DATABASE IF NOT EXISTS "+QuoteIdent(db)); err != nil {
			return nil, fmt.Errorf("creating database %s: %w", QuoteIdent(db), err)
		}
		if _, err := conn.ExecContext(ctx, CreateTableSQL(db, table, cols)); err != nil {
			return nil, fmt.Errorf("creating table %s.%s: %w", QuoteIdent(db), QuoteIdent(table), err)
		}
		res.Created = true
	}

	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return res, fmt.Errorf("rewinding CSV: %w", err)
	}
	cr := &countingReader{r: f}
	r := csv.NewReader(bufio.NewReaderSize(cr, 1<<16))
	r.FieldsPerRecord = -1
	r.ReuseRecord = true
	if _, err := r.Read(); err != nil {
		return res, fmt.Errorf("reading CSV header: %w", err)
	}

	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = QuoteIdent(c.Name)
	}
	prefix := "INSERT INTO " + QuoteIdent(db) + "." + QuoteIdent(table) + " (" + strings.Join(names, ", ") + ") VALUES "
	buf := make([]byte, 0, o.BatchBytes+4096)
	var n, first, last int
	flush := func() error {
		if n == 0 {
			return nil
		}
		if _, err := conn.ExecContext(ctx, string(buf)); err != nil {
			return &RowError{Line: first, Msg: fmt.Sprintf("batch of lines %d-%d refused, not loaded (%d earlier rows are)", first, last, res.Rows), Err: err}
		}
		res.Rows += n
		res.Batches++
		n = 0
		if o.Progress != nil {
			o.Progress(cr.n, fi.Size(), res.Rows)
		}
		return nil
	}
	for {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return res, fmt.Errorf("reading CSV: %w", err) // the first pass read it fine
		}
		line, _ := r.FieldPos(0)
		if n == 0 {
			buf = append(buf[:0], prefix...)
			first = line
		} else {
			buf = append(buf, ',')
		}
		buf = append(buf, '(')
		for i, v := range rec {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendLiteral(buf, v, cols[i].Kind)
		}
		buf = append(buf, ')')
		n++
		last = line
		if n >= o.BatchRows || len(buf) >= o.BatchBytes {
			if err := flush(); err != nil {
				return res, err
			}
		}
	}
	if err := flush(); err != nil {
		return res, err
	}
	return res, nil
}

// scan is the first pass: it checks the header and every row's arity and
// collects column statistics.
func scan(f io.Reader, domain map[string]int) (header []string, st []stats, rows int, err error) {
	r := csv.NewReader(bufio.NewReaderSize(f, 1<<16))
	r.FieldsPerRecord = -1
	r.ReuseRecord = true
	h, err := r.Read()
	if err == io.EOF {
		return nil, nil, 0, &RowError{Line: 1, Msg: "empty file, expected a header line"}
	}
	if err != nil {
		return nil, nil, 0, csvError(err)
	}
	header = append([]string(nil), h...)
	seen := make(map[string]bool, len(header))
	for i, name := range header {
		key := strings.ToLower(name)
		switch {
		case name == "":
			return nil, nil, 0, &RowError{Line: 1, Msg: fmt.Sprintf("header field %d is empty", i+1)}
		case seen[key]:
			return nil, nil, 0, &RowError{Line: 1, Column: name, Msg: "duplicate column name"}
		}
		seen[key] = true
	}
	sizes := make([]int, len(header))
	for name, size := range domain {
		i := indexFold(header, name)
		if i < 0 {
			return nil, nil, 0, fmt.Errorf("domain column %s is not in the CSV header", QuoteIdent(name))
		}
		if size < 1 {
			return nil, nil, 0, fmt.Errorf("domain column %s has size %d, want at least 1", QuoteIdent(name), size)
		}
		sizes[i] = size
	}
	st = make([]stats, len(header))
	for {
		rec, err := r.Read()
		if err == io.EOF {
			return header, st, rows, nil
		}
		if err != nil {
			return nil, nil, 0, csvError(err)
		}
		line, _ := r.FieldPos(0)
		if len(rec) != len(header) {
			return nil, nil, 0, &RowError{Line: line, Msg: fmt.Sprintf("%d fields, the header has %d", len(rec), len(header))}
		}
		for i, v := range rec {
			st[i].observe(v, line, sizes[i])
		}
		rows++
	}
}

// csvError turns a csv.ParseError into a RowError.
func csvError(err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return &RowError{Line: pe.Line, Msg: "malformed CSV", Err: pe.Err}
	}
	return fmt.Errorf("reading CSV: %w", err)
}

// decide chooses each column's type and reports the first value that does
// not fit it.
func decide(header []string, st []stats, domain map[string]int, existing map[string]Kind) ([]Column, error) {
	cols := make([]Column, len(header))
	for i, name := range header {
		s := &st[i]
		size := 0
		for k, v := range domain {
			if strings.EqualFold(k, name) {
				size = v
			}
		}
		var c Column
		switch {
		case existing != nil:
			k, ok := existing[strings.ToLower(name)]
			if !ok {
				return nil, fmt.Errorf("column %s is not in the existing table", QuoteIdent(name))
			}
			c = Column{Name: name, Kind: k}
		case size > 0:
			c = Column{Name: name, Kind: KindInt, SQLType: DomainType, Size: size}
		default:
			c = inferColumn(name, s)
		}
		switch {
		case c.Kind == KindInt && s.nonInt > 0:
			return nil, &RowError{Line: s.nonInt, Column: name, Msg: fmt.Sprintf("value %q is not an integer", s.badValue)}
		case c.Kind == KindInt && s.bigInt > 0:
			return nil, &RowError{Line: s.bigInt, Column: name, Msg: fmt.Sprintf("integer %s is outside the range of BIGINT", abbrev(s.bigValue))}
		case existing == nil && c.SQLType == TextType && s.long > 0:
			return nil, &RowError{Line: s.long, Column: name, Msg: fmt.Sprintf(
				"value of %d characters is longer than %s, the type dpsql import gives text columns; create the table first with the type you want (e.g. TEXT), then import into it",
				s.longLen, TextType)}
		case c.Kind == KindDouble && s.nonNumber > 0:
			return nil, &RowError{Line: s.nonNumber, Column: name, Msg: "value is not a number"}
		case size > 0 && s.empty:
			return nil, &RowError{Line: s.emptyLine, Column: name, Msg: "empty value in a domain column"}
		case size > 0 && s.outOfRange > 0:
			return nil, &RowError{Line: s.outOfRange, Column: name, Msg: fmt.Sprintf("value outside the domain 0..%d", size-1)}
		}
		cols[i] = c
	}
	return cols, nil
}

// tableColumns returns the kinds of the columns of db.table by lower-case
// name, or nil if the table does not exist.
func tableColumns(ctx context.Context, conn *sql.DB, db, table string) (map[string]Kind, error) {
	rows, err := conn.QueryContext(ctx,
		"SELECT COLUMN_NAME, DATA_TYPE FROM information_schema.columns WHERE table_schema = ? AND table_name = ?", db, table)
	if err != nil {
		return nil, fmt.Errorf("looking up table %s.%s: %w", QuoteIdent(db), QuoteIdent(table), err)
	}
	defer rows.Close()
	var out map[string]Kind
	for rows.Next() {
		var name, typ string
		if err := rows.Scan(&name, &typ); err != nil {
			return nil, fmt.Errorf("looking up table %s.%s: %w", QuoteIdent(db), QuoteIdent(table), err)
		}
		if out == nil {
			out = make(map[string]Kind)
		}
		out[strings.ToLower(name)] = kindOfType(typ)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("looking up table %s.%s: %w", QuoteIdent(db), QuoteIdent(table), err)
	}
	return out, nil
}

// kindOfType maps an information_schema DATA_TYPE to a Kind.
func kindOfType(t string) Kind {
	switch strings.ToLower(t) {
	case "tinyint", "smallint", "mediumint", "int", "integer", "bigint":
		return KindInt
	case "float", "double", "decimal", "real":
		return KindDouble
	case "char", "varchar", "text", "tinytext", "mediumtext", "longtext", "enum", "set":
		return KindText
	default:
		return KindOther
	}
}

// abbrev shortens a value quoted in an error message.
func abbrev(v string) string {
	const max = 40
	if utf8.RuneCountInString(v) <= max {
		return v
	}
	return string([]rune(v)[:max]) + "…"
}

func indexFold(list []string, s string) int {
	for i, v := range list {
		if strings.EqualFold(v, s) {
			return i
		}
	}
	return -1
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
