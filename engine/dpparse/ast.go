package dpparse

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/dolthub/vitess/go/vt/sqlparser"
)

// Statement is a parsed dpsql statement. String prints canonical SQL that
// Parse turns back into an equal Statement.
type Statement interface {
	fmt.Stringer
	dpsqlStatement()
}

var (
	_ Statement = (*ShowStatus)(nil)
	_ Statement = (*CreateSynthetic)(nil)
	_ Statement = (*SetBudget)(nil)
	_ Statement = (*ShowBudget)(nil)
	_ Statement = (*ShowLedger)(nil)
	_ Statement = (*SetDomainBetween)(nil)
	_ Statement = (*SetDomainIn)(nil)
	_ Statement = (*SetPublic)(nil)
	_ Statement = (*ShowDomain)(nil)
	_ Statement = (*GrantSynthesize)(nil)
	_ Statement = (*RevokeSynthesize)(nil)
	_ Statement = (*ShowSynthesizeGrants)(nil)
	_ Statement = (*ShowSyntheticTables)(nil)
	_ Statement = (*ShowMechanisms)(nil)
	_ Statement = (*ShowErrorBounds)(nil)
	_ Statement = (*Backup)(nil)
)

// TableName is an optionally database-qualified table name. The zero value
// means "no table"; Parse never produces an empty Name.
type TableName struct {
	DB   string // "" means the session's current database
	Name string
}

// IsZero reports whether t names no table.
func (t TableName) IsZero() bool { return t.Name == "" }

func (t TableName) String() string {
	if t.DB != "" {
		return QuoteIdent(t.DB) + "." + QuoteIdent(t.Name)
	}
	return QuoteIdent(t.Name)
}

// QuoteIdent backquotes an identifier, doubling embedded backquotes.
func QuoteIdent(s string) string {
	return "`" + strings.ReplaceAll(s, "`", "``") + "`"
}

// QuoteString renders s as a single-quoted MySQL string literal.
func QuoteString(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('\'')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\'':
			b.WriteString(`\'`)
		case '\\':
			b.WriteString(`\\`)
		case 0:
			b.WriteString(`\0`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case 26:
			b.WriteString(`\Z`)
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('\'')
	return b.String()
}

// simpleIdent reports whether s can be printed without backquotes in a
// position where any word is an identifier (option name, mechanism name).
func simpleIdent(s string) bool {
	if s == "" || isDigit(s[0]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || isDigit(c)) {
			return false
		}
	}
	return true
}

func identOrQuote(s string) string {
	if simpleIdent(s) {
		return s
	}
	return QuoteIdent(s)
}

// ValueKind is the kind of a literal Value.
type ValueKind uint8

const (
	ValueNumber ValueKind = iota + 1 // decimal or scientific number, possibly signed
	ValueString                      // quoted string
	ValueIdent                       // bare or backquoted word (e.g. an option value like auto)
	ValueNull                        // NULL
	ValueParam                       // a ? placeholder of a prepared statement (Prepare)
	ValueTable                       // a table name (the PUBLIC = db.t option); see Value.Table
)

// Value is a literal as written. Numbers keep their text so that exact
// decimal values (budgets) can be parsed without binary rounding.
type Value struct {
	Kind ValueKind
	Text string // number text (sign included), string contents or identifier; "" for NULL
	// Table is the table a ValueTable names.
	Table TableName
}

// Number returns a number Value for x, printed in the shortest form that
// parses back to x.
func Number(x float64) Value {
	return Value{Kind: ValueNumber, Text: strconv.FormatFloat(x, 'g', -1, 64)}
}

// Float64 returns the value of a number.
func (v Value) Float64() (float64, error) {
	if v.Kind != ValueNumber {
		return 0, fmt.Errorf("dpparse: %s is not a number", v)
	}
	x, err := strconv.ParseFloat(v.Text, 64)
	if err != nil {
		return 0, fmt.Errorf("dpparse: parsing number %s: %w", v.Text, err)
	}
	return x, nil
}

// Int64 returns the value of an integral number.
func (v Value) Int64() (int64, error) {
	x, err := v.Float64()
	if err != nil {
		return 0, err
	}
	if x != math.Trunc(x) || math.Abs(x) > 1<<53 {
		return 0, fmt.Errorf("dpparse: %s is not an integer", v.Text)
	}
	return int64(x), nil
}

func (v Value) String() string {
	switch v.Kind {
	case ValueNumber:
		return v.Text
	case ValueString:
		return QuoteString(v.Text)
	case ValueIdent:
		if simpleIdent(v.Text) && !strings.EqualFold(v.Text, "NULL") {
			return v.Text
		}
		return QuoteIdent(v.Text)
	case ValueNull:
		return "NULL"
	case ValueParam:
		return "?"
	case ValueTable:
		return v.Table.String()
	}
	return "<invalid>"
}

// Option is one generic name = value pair of CREATE SYNTHETIC TABLE … WITH.
// Names are compared case-insensitively; the mechanism validates them.
type Option struct {
	Name  string
	Value Value
}

// Account is a MySQL account name; Host is "%" when not given.
type Account struct {
	User string
	Host string
}

func (a Account) String() string { return QuoteString(a.User) + "@" + QuoteString(a.Host) }

// ShowStatus is SHOW DPSQL STATUS.
type ShowStatus struct{}

func (*ShowStatus) String() string { return "SHOW DPSQL STATUS" }

// Backup is BACKUP DPSQL: a consistent copy of the whole data file.
type Backup struct{}

func (*Backup) String() string { return "BACKUP DPSQL" }

// CreateSynthetic is
//
//	CREATE SYNTHETIC TABLE [IF NOT EXISTS] t FROM src USING mech [WITH opt = v, …] [workload]
type CreateSynthetic struct {
	IfNotExists bool
	Table       TableName
	Source      TableName
	Mechanism   string
	Options     []Option
	Workload    Workload
}

// Workload is the WORKLOAD clause. At most one of AllKWay and Queries is
// set; the zero Workload means the clause was omitted (the engine uses its
// default).
type Workload struct {
	AllKWay int // k of WORKLOAD ALL k-WAY
	Queries []WorkloadQuery
}

// IsZero reports whether the WORKLOAD clause was omitted.
func (w Workload) IsZero() bool { return w.AllKWay == 0 && len(w.Queries) == 0 }

// WorkloadQuery is one query of WORKLOAD ( … ). Text is the query as
// written (without its WEIGHT clause); Select is Text parsed by vitess.
type WorkloadQuery struct {
	Text   string
	Select *sqlparser.Select
	Weight float64 // > 0 and finite; 1 when WEIGHT is omitted
}

func (w Workload) String() string {
	if w.AllKWay > 0 {
		return fmt.Sprintf("WORKLOAD ALL %d-WAY", w.AllKWay)
	}
	var b strings.Builder
	b.WriteString("WORKLOAD (")
	for i, q := range w.Queries {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(q.Text)
		if q.Weight != 1 {
			b.WriteString(" WEIGHT ")
			b.WriteString(strconv.FormatFloat(q.Weight, 'g', -1, 64))
		}
	}
	b.WriteString(")")
	return b.String()
}

func (s *CreateSynthetic) String() string {
	var b strings.Builder
	b.WriteString("CREATE SYNTHETIC TABLE ")
	if s.IfNotExists {
		b.WriteString("IF NOT EXISTS ")
	}
	fmt.Fprintf(&b, "%s FROM %s USING %s", s.Table, s.Source, identOrQuote(s.Mechanism))
	for i, o := range s.Options {
		if i == 0 {
			b.WriteString(" WITH ")
		} else {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "%s = %s", identOrQuote(o.Name), o.Value)
	}
	if !s.Workload.IsZero() {
		b.WriteString(" ")
		b.WriteString(s.Workload.String())
	}
	return b.String()
}

// Option returns the value of the named option (case-insensitive).
func (s *CreateSynthetic) Option(name string) (Value, bool) {
	for _, o := range s.Options {
		if strings.EqualFold(o.Name, name) {
			return o.Value, true
		}
	}
	return Value{}, false
}

// SetBudget is SET PRIVACY BUDGET FOR t WITH EPSILON = e, DELTA = d.
type SetBudget struct {
	Table   TableName
	Epsilon Value // a number
	Delta   Value // a number
}

func (s *SetBudget) String() string {
	return fmt.Sprintf("SET PRIVACY BUDGET FOR %s WITH EPSILON = %s, DELTA = %s", s.Table, s.Epsilon, s.Delta)
}

// ShowBudget is SHOW PRIVACY BUDGET [FOR t].
type ShowBudget struct {
	Table TableName // zero: all tables
}

func (s *ShowBudget) String() string {
	if s.Table.IsZero() {
		return "SHOW PRIVACY BUDGET"
	}
	return "SHOW PRIVACY BUDGET FOR " + s.Table.String()
}

// ShowLedger is SHOW PRIVACY LEDGER FOR t.
type ShowLedger struct {
	Table TableName
}

func (s *ShowLedger) String() string { return "SHOW PRIVACY LEDGER FOR " + s.Table.String() }

// SetDomainBetween is ALTER TABLE t SET DOMAIN c BETWEEN lo AND hi BINS n.
type SetDomainBetween struct {
	Table  TableName
	Column string
	Lo, Hi Value // numbers (or placeholders, from Prepare)
	Bins   int   // >= 1; 0 for a placeholder (from Prepare)
}

func (s *SetDomainBetween) String() string {
	bins := "?"
	if s.Bins != 0 {
		bins = strconv.Itoa(s.Bins)
	}
	return fmt.Sprintf("ALTER TABLE %s SET DOMAIN %s BETWEEN %s AND %s BINS %s",
		s.Table, QuoteIdent(s.Column), s.Lo, s.Hi, bins)
}

// SetDomainIn is ALTER TABLE t SET DOMAIN c IN (v1, v2, …); values are
// numbers, strings or NULL.
type SetDomainIn struct {
	Table  TableName
	Column string
	Values []Value
}

func (s *SetDomainIn) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "ALTER TABLE %s SET DOMAIN %s IN (", s.Table, QuoteIdent(s.Column))
	for i, v := range s.Values {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(v.String())
	}
	b.WriteString(")")
	return b.String()
}

// SetPublic is ALTER TABLE t SET PUBLIC (Public) or ALTER TABLE t SET NOT
// PUBLIC: the owner declares the table's rows public, or no longer public.
type SetPublic struct {
	Table  TableName
	Public bool
}

func (s *SetPublic) String() string {
	if s.Public {
		return "ALTER TABLE " + s.Table.String() + " SET PUBLIC"
	}
	return "ALTER TABLE " + s.Table.String() + " SET NOT PUBLIC"
}

// ShowDomain is SHOW DOMAIN FOR t.
type ShowDomain struct {
	Table TableName
}

func (s *ShowDomain) String() string { return "SHOW DOMAIN FOR " + s.Table.String() }

// GrantSynthesize is GRANT [privileges, ]SYNTHESIZE ON target TO
// user[@host], where target is a table or db.* (AllTables: every table of
// the database, current and future; Table.DB is "" for the current
// database and Table.Name is empty).
type GrantSynthesize struct {
	Table     TableName
	AllTables bool
	Account   Account
	// Others are the MySQL privileges granted with SYNTHESIZE, as written
	// ("SELECT", "INSERT (a, b)").
	Others []string
}

func (s *GrantSynthesize) String() string {
	return fmt.Sprintf("GRANT %s ON %s TO %s", privilegeList(s.Others), GrantTarget(s.Table, s.AllTables), s.Account)
}

// RevokeSynthesize is REVOKE [privileges, ]SYNTHESIZE ON target FROM
// user[@host]; its fields are GrantSynthesize's.
type RevokeSynthesize struct {
	Table     TableName
	AllTables bool
	Account   Account
	Others    []string
}

func (s *RevokeSynthesize) String() string {
	return fmt.Sprintf("REVOKE %s ON %s FROM %s", privilegeList(s.Others), GrantTarget(s.Table, s.AllTables), s.Account)
}

// ShowSynthesizeGrants is SHOW SYNTHESIZE GRANTS FOR target: who holds
// SYNTHESIZE on a table (or on every table of a database).
type ShowSynthesizeGrants struct {
	Table     TableName
	AllTables bool
}

func (s *ShowSynthesizeGrants) String() string {
	return "SHOW SYNTHESIZE GRANTS FOR " + GrantTarget(s.Table, s.AllTables)
}

// GrantTarget renders the object of a grant: the table, or db.* (* for the
// current database) when all is set.
func GrantTarget(t TableName, all bool) string {
	switch {
	case !all:
		return t.String()
	case t.DB == "":
		return "*"
	}
	return QuoteIdent(t.DB) + ".*"
}

// privilegeList is the privilege list of a SYNTHESIZE grant.
func privilegeList(others []string) string {
	return strings.Join(append(slices.Clone(others), "SYNTHESIZE"), ", ")
}

// ShowSyntheticTables is SHOW SYNTHETIC TABLES [FROM db].
type ShowSyntheticTables struct {
	DB string // "" means the current database
}

func (s *ShowSyntheticTables) String() string {
	if s.DB == "" {
		return "SHOW SYNTHETIC TABLES"
	}
	return "SHOW SYNTHETIC TABLES FROM " + QuoteIdent(s.DB)
}

// ShowMechanisms is SHOW MECHANISMS.
type ShowMechanisms struct{}

func (*ShowMechanisms) String() string { return "SHOW MECHANISMS" }

// ShowErrorBounds is SHOW ERROR BOUNDS FOR syn [CONFIDENCE c], 0 < c < 1.
type ShowErrorBounds struct {
	Table      TableName
	Confidence Value // zero Value: the engine's default
}

func (s *ShowErrorBounds) String() string {
	if s.Confidence.Kind == 0 {
		return "SHOW ERROR BOUNDS FOR " + s.Table.String()
	}
	return fmt.Sprintf("SHOW ERROR BOUNDS FOR %s CONFIDENCE %s", s.Table, s.Confidence)
}

func (*ShowStatus) dpsqlStatement()            {}
func (*CreateSynthetic) dpsqlStatement()       {}
func (*SetBudget) dpsqlStatement()             {}
func (*ShowBudget) dpsqlStatement()            {}
func (*ShowLedger) dpsqlStatement()            {}
func (*SetDomainBetween) dpsqlStatement()      {}
func (*SetDomainIn) dpsqlStatement()           {}
func (*SetPublic) dpsqlStatement()             {}
func (*ShowDomain) dpsqlStatement()            {}
func (*GrantSynthesize) dpsqlStatement()       {}
func (*RevokeSynthesize) dpsqlStatement()      {}
func (*ShowSynthesizeGrants) dpsqlStatement()  {}
func (*ShowSyntheticTables) dpsqlStatement()   {}
func (*ShowMechanisms) dpsqlStatement()        {}
func (*ShowErrorBounds) dpsqlStatement()       {}
func (*Backup) dpsqlStatement()                {}
func (*CreateSyntheticTables) dpsqlStatement() {}
func (*SetPrivacyUnit) dpsqlStatement()        {}

// CreateSyntheticTables is
//
//	CREATE SYNTHETIC TABLES t1, t2 FROM src1, src2 USING mech [WITH …] [workload]
//
// a hierarchical synthesis (households and persons). Its embedded
// CreateSynthetic holds the mechanism, options and workload (its Table and
// Source are unset).
type CreateSyntheticTables struct {
	CreateSynthetic
	Tables, Sources []TableName
}

func (s *CreateSyntheticTables) String() string {
	names := func(ts []TableName) string {
		out := make([]string, len(ts))
		for i, t := range ts {
			out[i] = t.String()
		}
		return strings.Join(out, ", ")
	}
	full := s.CreateSynthetic.String()
	tail := full[strings.Index(full, " USING ")+1:]
	return fmt.Sprintf("CREATE SYNTHETIC TABLES %s FROM %s %s", names(s.Tables), names(s.Sources), tail)
}

// SetPrivacyUnit is
//
//	ALTER TABLE child SET PRIVACY UNIT unit ON a.col = b.col MAX k
//
// linking every row of child to one row of unit. The two sides of ON are
// written in either order, each optionally qualified.
type SetPrivacyUnit struct {
	Table, Unit         TableName
	LeftQual, LeftCol   string
	RightQual, RightCol string
	Max                 int
}

func (s *SetPrivacyUnit) String() string {
	q := func(a, b string) string {
		if a == "" {
			return QuoteIdent(b)
		}
		return QuoteIdent(a) + "." + QuoteIdent(b)
	}
	return fmt.Sprintf("ALTER TABLE %s SET PRIVACY UNIT %s ON %s = %s MAX %d", s.Table, s.Unit,
		q(s.LeftQual, s.LeftCol), q(s.RightQual, s.RightCol), s.Max)
}
