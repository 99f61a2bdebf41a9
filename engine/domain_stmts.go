package engine

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"

	"github.com/dpsql/dpsql/catalog"
	"github.com/dpsql/dpsql/catalog/domain"
	"github.com/dpsql/dpsql/engine/dpparse"
)

// This file holds the domain statements:
//
//	ALTER TABLE t SET DOMAIN c BETWEEN lo AND hi BINS n  CALL dpsql_set_domain_between('t', 'c', lo, hi, n)
//	ALTER TABLE t SET DOMAIN c IN (v1, …)                CALL dpsql_set_domain_in('t', 'c', '[v1, …]')
//	SHOW DOMAIN FOR t                                    CALL dpsql_domain('t')
//
// Declarations are stored as described in domains.go. A declaration is
// checked against the column's SQL type when it is made: BETWEEN needs a
// numeric column (integral bounds and bins at least 1 wide for integer
// columns); IN values must be quoted strings for text and ENUM columns
// (ENUM values must be labels of the ENUM) and numbers for numeric ones
// (integers for integer columns). Whether NULL is a value of the domain
// always comes from the schema: NULL in an IN list is accepted, and
// redundant, for a nullable column, and refused for a NOT NULL one.

// setDomainNode returns the node of ALTER TABLE … SET DOMAIN.
func (e *Engine) setDomainNode(s dpparse.Statement) *dpNode {
	return okNode(s, func(ctx *sql.Context) error {
		switch s := s.(type) {
		case *dpparse.SetDomainBetween:
			return e.setDomain(ctx, s.Table, s.Column, s.String(), func(sc *sql.Column) (domain.Column, error) {
				return betweenDomain(sc, s)
			})
		case *dpparse.SetDomainIn:
			return e.setDomain(ctx, s.Table, s.Column, s.String(), func(sc *sql.Column) (domain.Column, error) {
				return inDomain(sc, s.Values)
			})
		default:
			return ErrInternal.New("%s is not a domain declaration", s)
		}
	})
}

// setDomain validates and stores the owner's declaration of column's
// domain, built by build from the schema column, replacing any earlier
// one, and deletes the table's stale declarations.
func (e *Engine) setDomain(ctx *sql.Context, tn dpparse.TableName, column, stmt string, build func(*sql.Column) (domain.Column, error)) error {
	t, err := e.openTable(ctx, "ALTER TABLE … SET DOMAIN", tn, roleOwner)
	if err != nil {
		return err
	}
	sch := t.Table.Schema()
	idx := sch.IndexOfColName(column)
	if idx < 0 {
		return ErrNoSuchColumn.New("table %s has no column %s", t, quoteIdent(column))
	}
	sc := sch[idx]
	d, err := build(sc)
	if err != nil {
		return err
	}
	// FromSchema is the check synthesis will apply: it must accept the
	// declaration for this column.
	if _, errs := domain.FromSchema(sql.Schema{sc}, nil, map[string]domain.Column{sc.Name: d}); len(errs) > 0 {
		return ErrDomain.Wrap(errors.Join(errs...), "%s", stmt)
	}
	rec, err := json.Marshal(declaration{Column: sc.Name, Type: sc.Type.String(), Domain: d, User: e.ledgerUser(ctx), Declared: time.Now().UTC()})
	if err != nil {
		return ErrInternal.Wrap(err, "encoding the domain of %s", quoteIdent(sc.Name))
	}
	current := make(map[string]string, len(sch)) // lower-cased name → type
	for _, c := range sch {
		current[strings.ToLower(c.Name)] = c.Type.String()
	}
	err = e.dp.cat.Update(ctx, func(tx *catalog.Tx) error {
		var stale [][]byte
		err := forEachPrefix(tx, domainsBucket, tableKey(t.ID), func(k, v []byte) error {
			var old declaration
			if json.Unmarshal(v, &old) != nil || current[string(k[8:])] != old.Type {
				stale = append(stale, k)
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, k := range stale {
			if err := tx.Delete(domainsBucket, k); err != nil {
				return err
			}
		}
		return tx.Put(domainsBucket, domainKey(t.ID, sc.Name), rec)
	})
	if err != nil {
		return ErrInternal.Wrap(err, "storing the domain of %s.%s", t, quoteIdent(sc.Name))
	}
	return nil
}

// isIntegerType and isNumericType classify schema types as the domain
// package does.
func isIntegerType(t sql.Type) bool { return types.IsInteger(t) || types.IsYear(t) }
func isNumericType(t sql.Type) bool { return types.IsNumber(t) || types.IsYear(t) }

// betweenDomain is the binned domain of SET DOMAIN c BETWEEN lo AND hi BINS n.
func betweenDomain(sc *sql.Column, s *dpparse.SetDomainBetween) (domain.Column, error) {
	if !isNumericType(sc.Type) {
		return domain.Column{}, ErrDomain.New("%s: column %s is %s; BETWEEN … BINS needs a numeric column (use IN (…) for the others)",
			s, quoteIdent(sc.Name), sc.Type)
	}
	lo, err := s.Lo.Float64()
	if err != nil || math.IsInf(lo, 0) {
		return domain.Column{}, ErrDomain.New("%s: lower bound %s is not a finite number", s, s.Lo)
	}
	hi, err := s.Hi.Float64()
	if err != nil || math.IsInf(hi, 0) {
		return domain.Column{}, ErrDomain.New("%s: upper bound %s is not a finite number", s, s.Hi)
	}
	if !(lo < hi) {
		return domain.Column{}, ErrDomain.New("%s: the lower bound %s must be below the upper bound %s", s, s.Lo, s.Hi)
	}
	integer := isIntegerType(sc.Type)
	if integer && (lo != math.Trunc(lo) || hi != math.Trunc(hi)) {
		return domain.Column{}, ErrDomain.New("%s: column %s is %s; its bounds must be integers", s, quoteIdent(sc.Name), sc.Type)
	}
	d, err := domain.NewBinned(sc.Name, lo, hi, s.Bins, integer, sc.Nullable)
	if err != nil {
		return domain.Column{}, ErrDomain.Wrap(err, "%s", s)
	}
	return d, nil
}

// inDomain is the categorical domain of SET DOMAIN c IN (values).
func inDomain(sc *sql.Column, values []dpparse.Value) (domain.Column, error) {
	var typ domain.Type
	switch {
	case types.IsEnum(sc.Type) || types.IsText(sc.Type):
		typ = domain.String
	case isIntegerType(sc.Type):
		typ = domain.Int
	case isNumericType(sc.Type):
		typ = domain.Float
	default:
		return domain.Column{}, ErrDomain.New("column %s is %s, which has no supported domain (use a numeric, text or ENUM column)", quoteIdent(sc.Name), sc.Type)
	}
	var vals []domain.Value
	for _, v := range values {
		if v.Kind == dpparse.ValueNull {
			if !sc.Nullable {
				return domain.Column{}, ErrDomain.New("column %s is NOT NULL, so NULL cannot be in its domain", quoteIdent(sc.Name))
			}
			continue // the schema already makes NULL a value
		}
		dv, err := domainValue(v, typ)
		if err != nil {
			return domain.Column{}, ErrDomain.Wrap(err, "column %s (%s)", quoteIdent(sc.Name), sc.Type)
		}
		vals = append(vals, dv)
	}
	if len(vals) == 0 {
		return domain.Column{}, ErrDomain.New("the domain of column %s needs at least one non-NULL value", quoteIdent(sc.Name))
	}
	d, err := domain.NewCategorical(sc.Name, typ, vals, sc.Nullable, types.IsEnum(sc.Type))
	if err != nil {
		return domain.Column{}, ErrDomain.Wrap(err, "column %s", quoteIdent(sc.Name))
	}
	return d, nil
}

// domainValue converts a literal of an IN list to a value of type typ.
func domainValue(v dpparse.Value, typ domain.Type) (domain.Value, error) {
	switch typ {
	case domain.String:
		if v.Kind != dpparse.ValueString {
			return domain.Value{}, fmt.Errorf("value %s must be a quoted string", v)
		}
		return domain.StringValue(v.Text), nil
	case domain.Int:
		if v.Kind != dpparse.ValueNumber {
			return domain.Value{}, fmt.Errorf("value %s must be an integer", v)
		}
		i, err := v.Int64()
		if err != nil {
			// 3.0 is the integer 3.
			f, ferr := v.Float64()
			if ferr != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
				return domain.Value{}, fmt.Errorf("value %s must be an integer", v)
			}
			i = int64(f)
		}
		return domain.IntValue(i), nil
	default:
		if v.Kind != dpparse.ValueNumber {
			return domain.Value{}, fmt.Errorf("value %s must be a number", v)
		}
		f, err := v.Float64()
		if err != nil || math.IsInf(f, 0) {
			return domain.Value{}, fmt.Errorf("value %s must be a finite number", v)
		}
		return domain.FloatValue(f), nil
	}
}

// setDomainProcedures are CALL dpsql_set_domain_between('t', 'c', lo, hi, n)
// and CALL dpsql_set_domain_in('t', 'c', '[v1, …]'), whose values are a
// JSON array of strings, numbers and null.
func (e *Engine) setDomainProcedures() []sql.ExternalStoredProcedureDetails {
	return []sql.ExternalStoredProcedureDetails{
		{
			Name:   "dpsql_set_domain_between",
			Schema: okSchema,
			Function: func(ctx *sql.Context, table, column string, lo, hi float64, bins int64) (sql.RowIter, error) {
				tn, err := parseTableArg(table)
				if err != nil {
					return procResult(nil, err)
				}
				if bins < 1 || bins > domain.MaxSize {
					return procResult(nil, ErrDomain.New("BINS %d: must be between 1 and %d", bins, domain.MaxSize))
				}
				s := &dpparse.SetDomainBetween{Table: tn, Column: column, Lo: dpparse.Number(lo), Hi: dpparse.Number(hi), Bins: int(bins)}
				return procResult(e.setDomainNode(s).run(ctx))
			},
		},
		{
			Name:   "dpsql_set_domain_in",
			Schema: okSchema,
			Function: func(ctx *sql.Context, table, column, values string) (sql.RowIter, error) {
				tn, err := parseTableArg(table)
				if err != nil {
					return procResult(nil, err)
				}
				vals, err := jsonValues(values)
				if err != nil {
					return procResult(nil, err)
				}
				s := &dpparse.SetDomainIn{Table: tn, Column: column, Values: vals}
				return procResult(e.setDomainNode(s).run(ctx))
			},
		},
	}
}

// jsonValues reads the values of dpsql_set_domain_in: a JSON array of
// strings, numbers and null.
func jsonValues(s string) ([]dpparse.Value, error) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var raw []any
	if err := dec.Decode(&raw); err != nil || dec.More() {
		return nil, ErrBadParameter.New("values %q: must be a JSON array such as '[\"a\", \"b\"]' or '[1, 2, null]'", s)
	}
	vals := make([]dpparse.Value, len(raw))
	for i, r := range raw {
		switch r := r.(type) {
		case nil:
			vals[i] = dpparse.Value{Kind: dpparse.ValueNull}
		case string:
			vals[i] = dpparse.Value{Kind: dpparse.ValueString, Text: r}
		case json.Number:
			vals[i] = dpparse.Value{Kind: dpparse.ValueNumber, Text: r.String()}
		default:
			return nil, ErrBadParameter.New("values %q: element %d is neither a string, a number nor null", s, i+1)
		}
	}
	return vals, nil
}

// SHOW DOMAIN

// domainSchema is the result of SHOW DOMAIN: one row per column of the
// table, in schema order.
//
//   - type: the public type of the column, derived from its domain alone:
//     the type its synthetic column gets (public_types.go), e.g. bigint,
//     double, varchar(5) for the longest declared value, enum('F','M'); for
//     a column without a domain only its family (integer, number, text,
//     …). Never the raw column's SQL type, whose sizes may come from the
//     data;
//   - kind: categorical, integer range or binned; skipped for an
//     AUTO_INCREMENT key without a declared domain (see synthesisDomain);
//     NULL when missing;
//   - size: the number of codes, NULL included;
//   - domain: the values ('a', 'b'), the range (lo..hi) or the bins
//     ([lo, hi] in n bins);
//   - nullable: YES or NO, from the schema;
//   - source: ENUM, BOOLEAN or CHECK (from the schema; an import's domain
//     file becomes a CHECK), declared (SET DOMAIN) or AUTO_INCREMENT
//     (skipped);
//   - missing: YES for a column without a domain, which must be declared
//     before the table can be synthesized;
//   - note: for the owner, why a column is missing.
var domainSchema = sql.Schema{
	{Name: "column", Type: types.LongText},
	{Name: "type", Type: types.LongText},
	{Name: "kind", Type: types.LongText, Nullable: true},
	{Name: "size", Type: types.Int64, Nullable: true},
	{Name: "domain", Type: types.LongText, Nullable: true},
	{Name: "nullable", Type: types.LongText},
	{Name: "source", Type: types.LongText, Nullable: true},
	{Name: "missing", Type: types.LongText},
	{Name: "note", Type: types.LongText, Nullable: true},
}

// showDomainNode returns the node of SHOW DOMAIN.
func (e *Engine) showDomainNode(s *dpparse.ShowDomain) *dpNode {
	return &dpNode{stmt: s, schema: domainSchema, readOnly: true, run: func(ctx *sql.Context) ([]sql.Row, error) {
		return e.showDomain(ctx, s.Table)
	}}
}

// showDomain is SHOW DOMAIN FOR t, for its owner and SYNTHESIZE grantees.
// It is the only way an analyst learns the columns of a raw table.
func (e *Engine) showDomain(ctx *sql.Context, tn dpparse.TableName) ([]sql.Row, error) {
	t, err := e.openTable(ctx, "SHOW DOMAIN", tn, roleSynthesizer)
	if err != nil {
		return nil, err
	}
	owner := e.isOwner(ctx, t)
	declared, err := e.declaredDomains(ctx, t)
	if err != nil {
		return nil, err
	}
	dom, errs, err := deriveDomain(ctx, t, declared)
	if err != nil {
		return nil, err
	}
	reasons := make(map[string]string)
	var other []string
	for _, err := range errs {
		var m *domain.MissingDomainError
		if errors.As(err, &m) {
			reasons[strings.ToLower(m.Column)] = m.Reason
		} else {
			other = append(other, err.Error())
		}
	}
	var rows []sql.Row
	for _, sc := range t.Table.Schema() {
		nullable := "NO"
		if sc.Nullable {
			nullable = "YES"
		}
		c, ok := dom.Column(sc.Name)
		if !ok && sc.AutoIncrement {
			// Not missing: synthesisDomain skips an AUTO_INCREMENT column
			// without a declared domain and numbers the synthetic rows.
			rows = append(rows, sql.Row{sc.Name, publicTypeName(sc, nil), "skipped", nil, nil, nullable, "AUTO_INCREMENT", "NO",
				"AUTO_INCREMENT key, skipped: not synthesized; synthetic rows are numbered 1, 2, … in it"})
			continue
		}
		if !ok {
			var note any
			if owner {
				r, ok := reasons[strings.ToLower(sc.Name)]
				if !ok {
					r = strings.Join(other, "; ")
				}
				note = fmt.Sprintf("%s; declare it with ALTER TABLE %s SET DOMAIN %s BETWEEN <lo> AND <hi> BINS <n> or IN (…)", r, t, quoteIdent(sc.Name))
			}
			rows = append(rows, sql.Row{sc.Name, publicTypeName(sc, nil), nil, nil, nil, nullable, nil, "YES", note})
			continue
		}
		var source string
		_, isDeclared := declared[sc.Name]
		switch {
		case isDeclared:
			source = "declared"
		case types.IsEnum(sc.Type):
			source = "ENUM"
		case types.IsBoolean(sc.Type):
			source = "BOOLEAN"
		default:
			source = "CHECK"
		}
		rows = append(rows, sql.Row{sc.Name, publicTypeName(sc, c), kindName(c.Kind()), int64(c.Size()), describeDomain(c), nullable, source, "NO", nil})
	}
	return rows, nil
}

// kindName names a domain kind in SHOW DOMAIN.
func kindName(k domain.Kind) string {
	switch k {
	case domain.Categorical:
		return "categorical"
	case domain.IntRange:
		return "integer range"
	case domain.Binned:
		return "binned"
	}
	return k.String()
}

// describeDomain prints a column's values, range or bins.
func describeDomain(c *domain.Column) string {
	switch c.Kind() {
	case domain.Categorical:
		var b strings.Builder
		for i, v := range c.Values() {
			if i > 0 {
				b.WriteString(", ")
			}
			if v.Type() == domain.String {
				b.WriteString(dpparse.QuoteString(v.Str()))
			} else {
				b.WriteString(v.String())
			}
		}
		return b.String()
	case domain.IntRange:
		lo, hi := c.Range()
		return strconv.FormatFloat(lo, 'g', -1, 64) + ".." + strconv.FormatFloat(hi, 'g', -1, 64)
	default:
		lo, hi := c.Range()
		return fmt.Sprintf("[%s, %s] in %d bins", strconv.FormatFloat(lo, 'g', -1, 64), strconv.FormatFloat(hi, 'g', -1, 64), c.Bins())
	}
}

// showDomainProcedure is CALL dpsql_domain('t').
func (e *Engine) showDomainProcedure() sql.ExternalStoredProcedureDetails {
	return sql.ExternalStoredProcedureDetails{
		Name:     "dpsql_domain",
		Schema:   domainSchema,
		ReadOnly: true,
		Function: func(ctx *sql.Context, table string) (sql.RowIter, error) {
			tn, err := parseTableArg(table)
			if err != nil {
				return procResult(nil, err)
			}
			return procResult(e.showDomainNode(&dpparse.ShowDomain{Table: tn}).run(ctx))
		},
	}
}
