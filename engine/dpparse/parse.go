package dpparse

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/dolthub/vitess/go/vt/sqlparser"

	"github.com/dpsql/dpsql/internal/vtparse"
)

// Parse recognises a dpsql statement at the start of text.
//
// If the first statement of text (after whitespace and comments) is not a
// dpsql statement, Parse returns ok == false and the caller hands text to
// the MySQL parser. Otherwise ok == true and either err is a *Error (the
// statement starts like one of ours but is malformed) or stmt is the parsed
// statement and n is the number of bytes it occupies in text, including the
// terminating top-level ';' if there is one; text[n:] is the rest of a
// multi-statement text.
func Parse(text string) (stmt Statement, n int, ok bool, err error) {
	p := &parser{lx: lexer{src: text}}
	if !p.ours() {
		return nil, 0, false, nil
	}
	stmt, n, perr := p.parse()
	if perr != nil {
		return nil, 0, true, perr
	}
	return stmt, n, true, nil
}

// parser is a recursive-descent parser over the lexer's tokens, with
// arbitrary lookahead.
type parser struct {
	lx   lexer
	toks []token // lexed, not yet consumed tokens
	last token   // last consumed token
	// prepared allows ? placeholders in value positions (Prepare); params
	// collects them in order.
	prepared bool
	params   []Param
}

// peek returns the i-th unconsumed token.
func (p *parser) peek(i int) (token, *Error) {
	for len(p.toks) <= i {
		t, err := p.lx.next()
		if err != nil {
			return token{}, err
		}
		p.toks = append(p.toks, t)
		if t.kind == tokEOF {
			for len(p.toks) <= i {
				p.toks = append(p.toks, t)
			}
		}
	}
	return p.toks[i], nil
}

// advance consumes and returns the next token.
func (p *parser) advance() (token, *Error) {
	t, err := p.peek(0)
	if err != nil {
		return token{}, err
	}
	if t.kind != tokEOF {
		p.toks = p.toks[1:]
	}
	p.last = t
	return t, nil
}

// peekIs reports whether the i-th token is the keyword kw; lexing errors
// count as "no".
func (p *parser) peekIs(i int, kw string) bool {
	t, err := p.peek(i)
	return err == nil && t.is(kw)
}

// ours decides, from the leading keywords only, whether the statement is
// ours. It consumes nothing.
func (p *parser) ours() bool {
	t0, err := p.peek(0)
	if err != nil || t0.kind != tokIdent {
		return false
	}
	switch strings.ToUpper(t0.val) {
	case "SHOW":
		for _, kw := range []string{"DPSQL", "PRIVACY", "DOMAIN", "SYNTHETIC", "MECHANISMS", "ERROR", "SYNTHESIZE"} {
			if p.peekIs(1, kw) {
				return true
			}
		}
	case "CREATE":
		return p.peekIs(1, "SYNTHETIC")
	case "SET":
		return p.peekIs(1, "PRIVACY") && p.peekIs(2, "BUDGET")
	case "GRANT", "REVOKE":
		return p.peekIs(1, "SYNTHESIZE") || p.synthesizeInList()
	case "BACKUP":
		return p.peekIs(1, "DPSQL")
	case "ALTER":
		if !p.peekIs(1, "TABLE") {
			return false
		}
		// ALTER TABLE [db.]name SET DOMAIN, SET PUBLIC or SET NOT PUBLIC.
		i := 3
		if t, err := p.peek(3); err == nil && t.isPunct('.') {
			i = 5
		}
		return p.peekIs(i, "SET") && (p.peekIs(i+1, "DOMAIN") || p.peekIs(i+1, "PUBLIC") ||
			p.peekIs(i+1, "NOT") && p.peekIs(i+2, "PUBLIC") ||
			p.peekIs(i+1, "PRIVACY") && p.peekIs(i+2, "UNIT"))
	}
	return false
}

// maxPrivilegeTokens bounds how far synthesizeInList looks.
const maxPrivilegeTokens = 256

// synthesizeInList reports whether the privilege list of a GRANT or REVOKE
// (the tokens before its top-level ON) names SYNTHESIZE among other
// privileges, as in GRANT SELECT, SYNTHESIZE ON db.t TO u.
func (p *parser) synthesizeInList() bool {
	depth, found := 0, false
	for i := 1; i < maxPrivilegeTokens; i++ {
		t, err := p.peek(i)
		if err != nil || t.kind == tokEOF || (depth == 0 && t.isPunct(';')) {
			return false
		}
		switch {
		case t.isPunct('('):
			depth++
		case t.isPunct(')'):
			depth--
		case depth == 0 && t.is("ON"):
			return found
		case depth == 0 && t.is("SYNTHESIZE"):
			found = true
		}
	}
	return false
}

func (p *parser) errAt(t token, kind ErrorKind, format string, args ...any) *Error {
	return newError(p.lx.src, kind, t.pos, fmt.Sprintf(format, args...))
}

// describe names a token for "expected X, found Y" messages.
func describe(t token) string {
	switch t.kind {
	case tokEOF:
		return "end of input"
	case tokString:
		return "string " + QuoteString(t.val)
	case tokQIdent:
		return "identifier " + QuoteIdent(t.val)
	}
	return quoteNear(t.val)
}

// expect consumes the keyword sequence kws.
func (p *parser) expect(kws ...string) *Error {
	for _, kw := range kws {
		t, err := p.advance()
		if err != nil {
			return err
		}
		if !t.is(kw) {
			return p.errAt(t, KindUnexpected, "expected %s, found %s", kw, describe(t))
		}
	}
	return nil
}

// accept consumes the keyword kw if it is next.
func (p *parser) accept(kw string) (bool, *Error) {
	t, err := p.peek(0)
	if err != nil {
		return false, err
	}
	if t.is(kw) {
		p.advance()
		return true, nil
	}
	return false, nil
}

func (p *parser) acceptPunct(c byte) (bool, *Error) {
	t, err := p.peek(0)
	if err != nil {
		return false, err
	}
	if t.isPunct(c) {
		p.advance()
		return true, nil
	}
	return false, nil
}

func (p *parser) expectPunct(c byte) *Error {
	t, err := p.advance()
	if err != nil {
		return err
	}
	if !t.isPunct(c) {
		return p.errAt(t, KindUnexpected, "expected '%c', found %s", c, describe(t))
	}
	return nil
}

// ident parses a bare or backquoted identifier.
func (p *parser) ident(what string) (string, *Error) {
	t, err := p.advance()
	if err != nil {
		return "", err
	}
	if t.kind != tokIdent && t.kind != tokQIdent {
		return "", p.errAt(t, KindUnexpected, "expected %s, found %s", what, describe(t))
	}
	if t.val == "" {
		return "", p.errAt(t, KindBadValue, "empty %s", what)
	}
	return t.val, nil
}

// tableName parses [db.]name.
func (p *parser) tableName() (TableName, *Error) {
	name, err := p.ident("table name")
	if err != nil {
		return TableName{}, err
	}
	dot, err := p.acceptPunct('.')
	if err != nil {
		return TableName{}, err
	}
	if !dot {
		return TableName{Name: name}, nil
	}
	tbl, err := p.ident("table name")
	if err != nil {
		return TableName{}, err
	}
	return TableName{DB: name, Name: tbl}, nil
}

// number parses an optionally signed number literal.
func (p *parser) number(what string) (Value, *Error) {
	t, err := p.advance()
	if err != nil {
		return Value{}, err
	}
	if t.isPunct('?') {
		return p.param(t, what, true)
	}
	start, sign := t, ""
	if t.isPunct('-') || t.isPunct('+') {
		if t.val == "-" {
			sign = "-"
		}
		if t, err = p.advance(); err != nil {
			return Value{}, err
		}
	}
	if t.kind != tokNumber {
		return Value{}, p.errAt(start, KindUnexpected, "expected %s (a number), found %s", what, describe(start))
	}
	x, perr := strconv.ParseFloat(t.val, 64)
	switch {
	case perr != nil && !math.IsInf(x, 0):
		return Value{}, p.errAt(start, KindBadNumber, "%s %s%s is not a decimal number", what, sign, t.val)
	case perr != nil || math.IsInf(x, 0):
		return Value{}, p.errAt(start, KindBadNumber, "%s %s%s is out of range", what, sign, t.val)
	}
	return Value{Kind: ValueNumber, Text: sign + t.val}, nil
}

// positiveInt parses an integer literal >= 1.
func (p *parser) positiveInt(what string) (int, *Error) {
	t, err := p.peek(0)
	if err != nil {
		return 0, err
	}
	v, err := p.number(what)
	if err != nil {
		return 0, err
	}
	if v.Kind == ValueParam {
		return 0, nil // checked when the value is bound
	}
	k, ierr := v.Int64()
	if ierr != nil || k < 1 || k > math.MaxInt32 {
		return 0, p.errAt(t, KindBadValue, "%s must be a positive integer, not %s", what, v.Text)
	}
	return int(k), nil
}

// param records the ? placeholder t of a prepared statement (the value of
// what; only a number may be bound when number is set). Outside Prepare a
// placeholder is a syntax error.
func (p *parser) param(t token, what string, number bool) (Value, *Error) {
	if !p.prepared {
		return Value{}, p.errAt(t, KindUnexpected, "expected %s, found '?': placeholders are for prepared statements "+
			"(COM_STMT_PREPARE, or PREPARE … FROM and EXECUTE … USING)", what)
	}
	p.params = append(p.params, Param{Pos: t.pos, End: t.end, What: what, Number: number})
	return Value{Kind: ValueParam, Text: "?"}, nil
}

// numericOption reports whether the CREATE SYNTHETIC TABLE option name is
// one of the generic options, whose values are numbers.
func numericOption(name string) bool {
	for _, o := range []string{"EPSILON", "DELTA", "ROWS", "SEED"} {
		if strings.EqualFold(name, o) {
			return true
		}
	}
	return false
}

// literal parses a number, string, NULL or (when idents is set) an identifier.
func (p *parser) literal(what string, idents bool) (Value, *Error) {
	t, err := p.peek(0)
	if err != nil {
		return Value{}, err
	}
	switch {
	case t.isPunct('?'):
		p.advance()
		return p.param(t, what, false)
	case t.kind == tokNumber || t.isPunct('-') || t.isPunct('+'):
		return p.number(what)
	case t.kind == tokString:
		p.advance()
		return Value{Kind: ValueString, Text: t.val}, nil
	case t.is("NULL"):
		p.advance()
		return Value{Kind: ValueNull}, nil
	case idents && (t.kind == tokIdent || t.kind == tokQIdent) && t.val != "":
		p.advance()
		return Value{Kind: ValueIdent, Text: t.val}, nil
	}
	return Value{}, p.errAt(t, KindUnexpected, "expected %s, found %s", what, describe(t))
}

// parse parses the statement ours has recognised and its terminator.
func (p *parser) parse() (Statement, int, *Error) {
	t0, _ := p.advance()
	var (
		stmt Statement
		err  *Error
	)
	switch strings.ToUpper(t0.val) {
	case "SHOW":
		stmt, err = p.show()
	case "CREATE":
		stmt, err = p.createSynthetic()
	case "SET":
		stmt, err = p.setBudget()
	case "ALTER":
		stmt, err = p.setDomain()
	case "GRANT":
		stmt, err = p.grant(false)
	case "REVOKE":
		stmt, err = p.grant(true)
	case "BACKUP":
		stmt, err = &Backup{}, p.expect("DPSQL")
	}
	if err != nil {
		return nil, 0, err
	}
	t, err := p.advance()
	if err != nil {
		return nil, 0, err
	}
	switch {
	case t.kind == tokEOF:
		return stmt, len(p.lx.src), nil
	case t.isPunct(';'):
		return stmt, t.end, nil
	}
	return nil, 0, p.errAt(t, KindUnexpected, "expected ';' or end of statement, found %s", describe(t))
}

func (p *parser) show() (Statement, *Error) {
	t, err := p.advance()
	if err != nil {
		return nil, err
	}
	switch strings.ToUpper(t.val) {
	case "DPSQL":
		return &ShowStatus{}, p.expect("STATUS")
	case "MECHANISMS":
		return &ShowMechanisms{}, nil
	case "DOMAIN":
		if err := p.expect("FOR"); err != nil {
			return nil, err
		}
		tbl, err := p.tableName()
		return &ShowDomain{Table: tbl}, err
	case "SYNTHETIC":
		if err := p.expect("TABLES"); err != nil {
			return nil, err
		}
		s := &ShowSyntheticTables{}
		from, err := p.accept("FROM")
		if err != nil {
			return nil, err
		}
		if !from {
			if from, err = p.accept("IN"); err != nil {
				return nil, err
			}
		}
		if from {
			if s.DB, err = p.ident("database name"); err != nil {
				return nil, err
			}
		}
		return s, nil
	case "SYNTHESIZE":
		if err := p.expect("GRANTS", "FOR"); err != nil {
			return nil, err
		}
		tbl, all, err := p.grantTarget()
		return &ShowSynthesizeGrants{Table: tbl, AllTables: all}, err
	case "ERROR":
		if err := p.expect("BOUNDS", "FOR"); err != nil {
			return nil, err
		}
		s := &ShowErrorBounds{}
		if s.Table, err = p.tableName(); err != nil {
			return nil, err
		}
		if ok, err := p.accept("CONFIDENCE"); err != nil || !ok {
			return s, err
		}
		t, err := p.peek(0)
		if err != nil {
			return nil, err
		}
		if s.Confidence, err = p.number("confidence"); err != nil {
			return nil, err
		}
		if c, _ := s.Confidence.Float64(); s.Confidence.Kind != ValueParam && !(c > 0 && c < 1) {
			return nil, p.errAt(t, KindBadValue, "confidence must be strictly between 0 and 1, not %s", s.Confidence.Text)
		}
		return s, nil
	case "PRIVACY":
		t, err := p.advance()
		if err != nil {
			return nil, err
		}
		switch {
		case t.is("BUDGET"):
			s := &ShowBudget{}
			if ok, err := p.accept("FOR"); err != nil || !ok {
				return s, err
			}
			s.Table, err = p.tableName()
			return s, err
		case t.is("LEDGER"):
			if err := p.expect("FOR"); err != nil {
				return nil, err
			}
			tbl, err := p.tableName()
			return &ShowLedger{Table: tbl}, err
		}
		return nil, p.errAt(t, KindUnexpected, "expected BUDGET or LEDGER, found %s", describe(t))
	}
	panic("dpparse: show() called on a statement ours() did not recognise")
}

func (p *parser) setBudget() (Statement, *Error) {
	if err := p.expect("PRIVACY", "BUDGET", "FOR"); err != nil {
		return nil, err
	}
	s := &SetBudget{}
	var err *Error
	if s.Table, err = p.tableName(); err != nil {
		return nil, err
	}
	if err := p.expect("WITH"); err != nil {
		return nil, err
	}
	for i := 0; i < 2; i++ {
		if i > 0 {
			if t, _ := p.peek(0); t.kind == tokEOF || t.isPunct(';') {
				missing := "DELTA"
				if s.Epsilon.Kind == 0 {
					missing = "EPSILON"
				}
				return nil, p.errAt(t, KindUnexpected, "%s is missing: a budget needs both, e.g. SET PRIVACY BUDGET FOR %s WITH EPSILON = 1, DELTA = 1e-9", missing, s.Table)
			}
			if err := p.expectPunct(','); err != nil {
				return nil, err
			}
		}
		t, err := p.advance()
		if err != nil {
			return nil, err
		}
		var dst *Value
		switch {
		case t.is("EPSILON"):
			dst = &s.Epsilon
		case t.is("DELTA"):
			dst = &s.Delta
		default:
			return nil, p.errAt(t, KindUnexpected, "expected EPSILON or DELTA, found %s", describe(t))
		}
		if dst.Kind != 0 {
			return nil, p.errAt(t, KindDuplicate, "%s given twice", strings.ToUpper(t.val))
		}
		if err := p.expectPunct('='); err != nil {
			return nil, err
		}
		if *dst, err = p.number(strings.ToUpper(t.val)); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func (p *parser) setDomain() (Statement, *Error) {
	if err := p.expect("TABLE"); err != nil {
		return nil, err
	}
	tbl, err := p.tableName()
	if err != nil {
		return nil, err
	}
	if err := p.expect("SET"); err != nil {
		return nil, err
	}
	if ok, err := p.accept("PUBLIC"); err != nil || ok {
		return &SetPublic{Table: tbl, Public: true}, err
	}
	if p.peekIs(0, "PRIVACY") {
		return p.setPrivacyUnit(tbl)
	}
	if ok, err := p.accept("NOT"); err != nil || ok {
		if err == nil {
			err = p.expect("PUBLIC")
		}
		return &SetPublic{Table: tbl}, err
	}
	if err := p.expect("DOMAIN"); err != nil {
		return nil, err
	}
	col, err := p.ident("column name")
	if err != nil {
		return nil, err
	}
	t, err := p.advance()
	if err != nil {
		return nil, err
	}
	switch {
	case t.is("BETWEEN"):
		s := &SetDomainBetween{Table: tbl, Column: col}
		if s.Lo, err = p.number("lower bound"); err != nil {
			return nil, err
		}
		if err := p.expect("AND"); err != nil {
			return nil, err
		}
		hi, err := p.peek(0)
		if err != nil {
			return nil, err
		}
		if s.Hi, err = p.number("upper bound"); err != nil {
			return nil, err
		}
		lo, _ := s.Lo.Float64()
		if h, _ := s.Hi.Float64(); s.Lo.Kind != ValueParam && s.Hi.Kind != ValueParam && !(lo < h) {
			return nil, p.errAt(hi, KindBadValue, "upper bound %s must be greater than lower bound %s", s.Hi.Text, s.Lo.Text)
		}
		if err := p.expect("BINS"); err != nil {
			return nil, err
		}
		if s.Bins, err = p.positiveInt("BINS"); err != nil {
			return nil, err
		}
		return s, nil
	case t.is("IN"):
		s := &SetDomainIn{Table: tbl, Column: col}
		if err := p.expectPunct('('); err != nil {
			return nil, err
		}
		for {
			v, err := p.literal("a number, string or NULL", false)
			if err != nil {
				return nil, err
			}
			s.Values = append(s.Values, v)
			t, err := p.advance()
			if err != nil {
				return nil, err
			}
			if t.isPunct(')') {
				return s, nil
			}
			if !t.isPunct(',') {
				return nil, p.errAt(t, KindUnexpected, "expected ',' or ')', found %s", describe(t))
			}
		}
	}
	return nil, p.errAt(t, KindUnexpected, "expected BETWEEN or IN, found %s", describe(t))
}

func (p *parser) grant(revoke bool) (Statement, *Error) {
	others, err := p.privileges()
	if err != nil {
		return nil, err
	}
	if err := p.expect("ON"); err != nil {
		return nil, err
	}
	tbl, all, err := p.grantTarget()
	if err != nil {
		return nil, err
	}
	to := "TO"
	if revoke {
		to = "FROM"
	}
	if err := p.expect(to); err != nil {
		return nil, err
	}
	acct, err := p.account()
	if err != nil {
		return nil, err
	}
	if revoke {
		return &RevokeSynthesize{Table: tbl, AllTables: all, Account: acct, Others: others}, nil
	}
	return &GrantSynthesize{Table: tbl, AllTables: all, Account: acct, Others: others}, nil
}

// privileges parses the privilege list of a GRANT or REVOKE that names
// SYNTHESIZE (ours checked it does) and returns the other privileges as
// written, column lists included ("SELECT", "INSERT (a, b)"), for the
// MySQL statement that grants or revokes them.
func (p *parser) privileges() ([]string, *Error) {
	var others []string
	synthesize := false
	for {
		t, err := p.peek(0)
		if err != nil {
			return nil, err
		}
		if t.is("SYNTHESIZE") {
			p.advance()
			if synthesize {
				return nil, p.errAt(t, KindDuplicate, "SYNTHESIZE named twice")
			}
			synthesize = true
		} else {
			text, err := p.privilege()
			if err != nil {
				return nil, err
			}
			others = append(others, text)
		}
		if comma, err := p.acceptPunct(','); err != nil || !comma {
			return others, err
		}
	}
}

// privilege consumes one privilege other than SYNTHESIZE (words, and a
// parenthesised column list) and returns its text.
func (p *parser) privilege() (string, *Error) {
	first, err := p.peek(0)
	if err != nil {
		return "", err
	}
	depth, end := 0, first.pos
	for {
		t, err := p.peek(0)
		if err != nil {
			return "", err
		}
		stop := t.kind == tokEOF || t.isPunct(';') || (depth == 0 && (t.isPunct(',') || t.is("ON")))
		if stop || (depth == 0 && t.kind != tokIdent && !t.isPunct('(')) {
			if end == first.pos {
				return "", p.errAt(t, KindUnexpected, "expected a privilege, found %s", describe(t))
			}
			if !stop {
				return "", p.errAt(t, KindUnexpected, "expected ',' or ON after a privilege, found %s", describe(t))
			}
			return p.lx.src[first.pos:end], nil
		}
		switch {
		case t.isPunct('('):
			depth++
		case t.isPunct(')'):
			depth--
		}
		p.advance()
		end = t.end
	}
}

// grantTarget parses the object of a SYNTHESIZE grant: [TABLE] [db.]t, or
// [db.]* for every table of a database (all).
func (p *parser) grantTarget() (tbl TableName, all bool, err *Error) {
	if _, err := p.accept("TABLE"); err != nil {
		return TableName{}, false, err
	}
	star := func() (bool, *Error) { return p.acceptPunct('*') }
	if ok, err := star(); err != nil || ok {
		if ok {
			if t, _ := p.peek(0); t.isPunct('.') {
				return TableName{}, false, p.errAt(t, KindBadValue, "SYNTHESIZE is granted on a table (db.t) or on the tables of a database (db.*), not on *.*")
			}
		}
		return TableName{}, ok, err
	}
	name, err := p.ident("table or database name")
	if err != nil {
		return TableName{}, false, err
	}
	if dot, err := p.acceptPunct('.'); err != nil || !dot {
		return TableName{Name: name}, false, err
	}
	if ok, err := star(); err != nil || ok {
		return TableName{DB: name}, ok, err
	}
	tn, err := p.ident("table name")
	if err != nil {
		return TableName{}, false, err
	}
	return TableName{DB: name, Name: tn}, false, nil
}

// account parses user[@host]; each part is a word, a backquoted identifier
// or a string.
func (p *parser) account() (Account, *Error) {
	part := func(what string) (string, *Error) {
		t, err := p.advance()
		if err != nil {
			return "", err
		}
		if t.kind != tokIdent && t.kind != tokQIdent && t.kind != tokString {
			return "", p.errAt(t, KindUnexpected, "expected %s, found %s", what, describe(t))
		}
		return t.val, nil
	}
	user, err := part("user name")
	if err != nil {
		return Account{}, err
	}
	if user == "" {
		return Account{}, p.errAt(p.last, KindBadValue, "empty user name")
	}
	acct := Account{User: user, Host: "%"}
	if at, err := p.acceptPunct('@'); err != nil || !at {
		return acct, err
	}
	if acct.Host, err = part("host name"); err != nil {
		return Account{}, err
	}
	return acct, nil
}

func (p *parser) createSynthetic() (Statement, *Error) {
	if p.peekIs(0, "SYNTHETIC") && p.peekIs(1, "TABLES") {
		return p.createSyntheticTables()
	}
	if err := p.expect("SYNTHETIC", "TABLE"); err != nil {
		return nil, err
	}
	s := &CreateSynthetic{}
	var err *Error
	if p.peekIs(0, "IF") {
		if err := p.expect("IF", "NOT", "EXISTS"); err != nil {
			return nil, err
		}
		s.IfNotExists = true
	}
	if s.Table, err = p.tableName(); err != nil {
		return nil, err
	}
	if err := p.expect("FROM"); err != nil {
		return nil, err
	}
	if s.Source, err = p.tableName(); err != nil {
		return nil, err
	}
	return s, p.synthesisTail(s)
}

// synthesisTail parses USING mech [WITH …] [WORKLOAD …] into s.
func (p *parser) synthesisTail(s *CreateSynthetic) *Error {
	var err *Error
	if err := p.expect("USING"); err != nil {
		return err
	}
	if s.Mechanism, err = p.ident("mechanism name"); err != nil {
		return err
	}
	with, err := p.accept("WITH")
	if err != nil {
		return err
	}
	for with {
		nameTok, err := p.peek(0)
		if err != nil {
			return err
		}
		name, err := p.ident("option name")
		if err != nil {
			return err
		}
		if _, dup := s.Option(name); dup {
			return p.errAt(nameTok, KindDuplicate, "option %s given twice", name)
		}
		if err := p.expectPunct('='); err != nil {
			return err
		}
		var v Value
		if t, _ := p.peek(0); t.isPunct('?') && numericOption(name) {
			v, err = p.number(strings.ToUpper(name))
		} else if strings.EqualFold(name, "PUBLIC") {
			// PUBLIC = [db.]t names the public table of a public-data
			// mechanism.
			var tbl TableName
			if tbl, err = p.tableName(); err == nil {
				v = Value{Kind: ValueTable, Text: tbl.String(), Table: tbl}
			}
		} else {
			v, err = p.literal("value of option "+name, true)
		}
		if err != nil {
			return err
		}
		s.Options = append(s.Options, Option{Name: name, Value: v})
		if with, err = p.acceptPunct(','); err != nil {
			return err
		}
	}
	if ok, err := p.accept("WORKLOAD"); err != nil || !ok {
		return err
	}
	if s.Workload, err = p.workload(); err != nil {
		return err
	}
	return nil
}

// createSyntheticTables parses the rest of
//
//	CREATE SYNTHETIC TABLES t1, t2 FROM src1, src2 USING mech [WITH …] [WORKLOAD …]
func (p *parser) createSyntheticTables() (Statement, *Error) {
	if err := p.expect("SYNTHETIC", "TABLES"); err != nil {
		return nil, err
	}
	s := &CreateSyntheticTables{}
	list := func() ([]TableName, *Error) {
		var out []TableName
		for {
			t, err := p.tableName()
			if err != nil {
				return nil, err
			}
			out = append(out, t)
			if ok, err := p.acceptPunct(','); err != nil || !ok {
				return out, err
			}
		}
	}
	var err *Error
	if s.Tables, err = list(); err != nil {
		return nil, err
	}
	if err := p.expect("FROM"); err != nil {
		return nil, err
	}
	if s.Sources, err = list(); err != nil {
		return nil, err
	}
	return s, p.synthesisTail(&s.CreateSynthetic)
}

// setPrivacyUnit parses the rest of
//
//	ALTER TABLE child SET PRIVACY UNIT unit ON child.col = unit.col MAX k
func (p *parser) setPrivacyUnit(tbl TableName) (Statement, *Error) {
	if err := p.expect("PRIVACY", "UNIT"); err != nil {
		return nil, err
	}
	s := &SetPrivacyUnit{Table: tbl}
	var err *Error
	if s.Unit, err = p.tableName(); err != nil {
		return nil, err
	}
	if err := p.expect("ON"); err != nil {
		return nil, err
	}
	qcol := func() (string, string, *Error) {
		a, err := p.ident("column name")
		if err != nil {
			return "", "", err
		}
		if ok, err := p.acceptPunct('.'); err != nil || !ok {
			return "", a, err
		}
		b, err := p.ident("column name")
		return a, b, err
	}
	var e *Error
	if s.LeftQual, s.LeftCol, e = qcol(); e != nil {
		return nil, e
	}
	if err := p.expectPunct('='); err != nil {
		return nil, err
	}
	if s.RightQual, s.RightCol, e = qcol(); e != nil {
		return nil, e
	}
	if err := p.expect("MAX"); err != nil {
		return nil, err
	}
	if s.Max, err = p.positiveInt("MAX (the largest number of rows per unit)"); err != nil {
		return nil, err
	}
	return s, nil
}

// workload parses what follows WORKLOAD: ALL k-WAY or a parenthesised list
// of SELECTs separated by ';' or ',', each optionally followed by WEIGHT w.
func (p *parser) workload() (Workload, *Error) {
	t, err := p.advance()
	if err != nil {
		return Workload{}, err
	}
	if t.is("ALL") {
		if q, _ := p.peek(0); q.isPunct('?') {
			return Workload{}, p.errAt(q, KindUnexpected, "expected k of ALL k-WAY (a number), found '?': the workload cannot be a parameter")
		}
		k, err := p.positiveInt("k of ALL k-WAY")
		if err != nil {
			return Workload{}, err
		}
		if err := p.expectPunct('-'); err != nil {
			return Workload{}, err
		}
		return Workload{AllKWay: k}, p.expect("WAY")
	}
	if !t.isPunct('(') {
		return Workload{}, p.errAt(t, KindUnexpected, "expected '(' or ALL after WORKLOAD, found %s", describe(t))
	}
	var w Workload
	for {
		q, end, err := p.workloadQuery(len(w.Queries) + 1)
		if err != nil {
			return Workload{}, err
		}
		if q.Text != "" {
			w.Queries = append(w.Queries, q)
		}
		if end {
			break
		}
	}
	if len(w.Queries) == 0 {
		return Workload{}, p.errAt(p.last, KindUnexpected, "empty WORKLOAD")
	}
	return w, nil
}

// workloadQuery consumes one query of a WORKLOAD list and its separator
// (';', ',' before SELECT, or the closing ')', reported by end). An empty query (between two
// separators) has empty Text; only a trailing one is allowed.
func (p *parser) workloadQuery(num int) (q WorkloadQuery, end bool, err *Error) {
	var (
		first, last token
		depth       int
		n           int
	)
	q.Weight = 1
	for {
		t, err := p.peek(0)
		if err != nil {
			return q, false, err
		}
		if t.kind == tokEOF {
			return q, false, p.errAt(t, KindUnexpected, "expected ')' closing WORKLOAD; the mysql and mariadb "+
				"command-line clients end a statement at every ';', even inside WORKLOAD ( … ): separate the queries "+
				"with commas instead, or set another delimiter first (DELIMITER //, end the statement with //, then DELIMITER ;)")
		}
		if depth == 0 && p.separator(0) {
			p.advance()
			end = t.isPunct(')')
			break
		}
		if depth == 0 && t.is("WEIGHT") && n > 0 {
			if w, ok, err := p.weight(); err != nil {
				return q, false, err
			} else if ok {
				q.Weight = w
				sep, _ := p.advance() // weight() checked it is ';' or ')'
				end = sep.isPunct(')')
				break
			}
		}
		switch {
		case t.isPunct('('):
			depth++
		case t.isPunct(')'):
			depth--
		}
		if n == 0 {
			first = t
		}
		last = t
		n++
		p.advance()
	}
	if n == 0 {
		if !end {
			return q, false, p.errAt(p.last, KindUnexpected, "empty query %d in WORKLOAD", num)
		}
		return q, true, nil
	}
	q.Text = p.lx.src[first.pos:last.end]
	stmt, perr := vtparse.Parse(q.Text)
	if perr != nil {
		e := p.errAt(first, KindWorkloadQuery, "WORKLOAD query %d does not parse", num)
		e.Query, e.Err = num, perr
		return q, false, e
	}
	sel, ok := stmt.(*sqlparser.Select)
	if !ok {
		e := p.errAt(first, KindWorkloadQuery, "WORKLOAD query %d is not a simple SELECT", num)
		e.Query = num
		return q, false, e
	}
	q.Select = sel
	return q, end, nil
}

// separator reports whether the token i ahead ends a WORKLOAD query: ';',
// the closing ')', or a ',' before SELECT (a comma-separated list, which
// command-line clients do not split; SELECT is reserved, so ", SELECT" ends
// a select list or GROUP BY only where a new query starts).
func (p *parser) separator(i int) bool {
	t, err := p.peek(i)
	if err != nil {
		return false
	}
	if t.isPunct(';') || t.isPunct(')') {
		return true
	}
	if !t.isPunct(',') {
		return false
	}
	next, err := p.peek(i + 1)
	return err == nil && next.is("SELECT")
}

// weight checks whether the tokens ahead are WEIGHT <number> followed by
// a separator (see separator). If so it consumes WEIGHT and the number (but not the
// separator) and returns the validated weight; otherwise it consumes
// nothing and WEIGHT is part of the query.
func (p *parser) weight() (float64, bool, *Error) {
	i := 1
	sign := 1.0
	if t, err := p.peek(i); err != nil {
		return 0, false, nil
	} else if t.isPunct('-') || t.isPunct('+') {
		if t.val == "-" {
			sign = -1
		}
		i++
	}
	num, err := p.peek(i)
	if err != nil || num.kind != tokNumber {
		return 0, false, nil
	}
	if !p.separator(i + 1) {
		return 0, false, nil
	}
	wt, _ := p.peek(0)
	x, perr := strconv.ParseFloat(num.val, 64)
	x *= sign
	if perr != nil || !(x > 0) || math.IsInf(x, 0) {
		return 0, false, p.errAt(wt, KindBadValue, "WEIGHT must be a positive finite number, not %s", p.lx.src[wt.pos:num.end])
	}
	for ; i >= 0; i-- {
		p.advance()
	}
	return x, true, nil
}
