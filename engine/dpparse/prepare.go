package dpparse

import (
	"fmt"
	"strings"
)

// Prepared statements.
//
// A dpsql statement may be prepared with ? placeholders where a literal
// value goes: EPSILON = ?, DELTA = ?, ROWS = ?, SEED = ? and any mechanism
// option's value in CREATE SYNTHETIC TABLE … WITH; both values of SET
// PRIVACY BUDGET; BETWEEN ? AND ? BINS ? and the values of IN (…) in ALTER
// TABLE … SET DOMAIN; CONFIDENCE ? in SHOW ERROR BOUNDS. Names (tables,
// columns, mechanisms, options, accounts) cannot be placeholders, as in
// MySQL, and neither can the WORKLOAD queries or their weights.
//
// Prepare parses the statement once with its placeholders; Bind writes the
// statement's text with bound values in their places, which Parse then
// reads like any statement, so bound values are validated exactly as
// written ones.

// Param is one ? placeholder of a prepared statement.
type Param struct {
	Pos, End int    // byte span of the ? in the text
	What     string // what the value is, for messages: "EPSILON", "lower bound", "value of option rounds", …
	Number   bool   // only a number may be bound (a string or NULL is refused)
}

// Prepared is a dpsql statement parsed with its placeholders.
type Prepared struct {
	// Text is the statement's text, without what follows it in a
	// multi-statement text.
	Text string
	// Stmt is the statement; each placeholder is a Value of kind
	// ValueParam (and SetDomainBetween.Bins is 0 for BINS ?). It names
	// the statement's kind and tables, but cannot be run.
	Stmt   Statement
	Params []Param
}

// Prepare is Parse allowing ? placeholders in value positions. ok and err
// are as for Parse; n is the number of bytes the statement occupies in
// text, including its terminating ';'.
func Prepare(text string) (p *Prepared, n int, ok bool, err error) {
	ps := &parser{lx: lexer{src: text}, prepared: true}
	if !ps.ours() {
		return nil, 0, false, nil
	}
	stmt, n, perr := ps.parse()
	if perr != nil {
		return nil, 0, true, perr
	}
	return &Prepared{Text: text[:n], Stmt: stmt, Params: ps.params}, n, true, nil
}

// Bind returns the statement's text with values[i] in place of the i-th
// placeholder, to be parsed with Parse. A value of kind ValueParam is
// refused, and so is a value other than a number where only a number may
// go: the error names the parameter (1-based) and what it is.
func (p *Prepared) Bind(values []Value) (string, error) {
	if len(values) != len(p.Params) {
		return "", fmt.Errorf("%w: the statement has %d parameters, %d values were given", ErrSyntax, len(p.Params), len(values))
	}
	var b strings.Builder
	b.Grow(len(p.Text) + 16*len(values))
	at := 0
	for i, prm := range p.Params {
		v := values[i]
		switch {
		case v.Kind == ValueParam || v.Kind == 0:
			return "", fmt.Errorf("%w: parameter %d (%s) has no value", ErrSyntax, i+1, prm.What)
		case prm.Number && v.Kind != ValueNumber:
			return "", fmt.Errorf("%w: parameter %d (%s) must be a number, not %s", ErrSyntax, i+1, prm.What, describeValue(v))
		case v.Kind == ValueNumber && !isNumberText(v.Text):
			return "", fmt.Errorf("%w: parameter %d (%s): %q is not a number", ErrSyntax, i+1, prm.What, v.Text)
		}
		b.WriteString(p.Text[at:prm.Pos])
		b.WriteString(v.String())
		at = prm.End
	}
	b.WriteString(p.Text[at:])
	return b.String(), nil
}

// describeValue names a bound value for an error message.
func describeValue(v Value) string {
	switch v.Kind {
	case ValueString:
		return "the string " + quoteNear(v.Text)
	case ValueNull:
		return "NULL"
	case ValueIdent:
		return "the word " + quoteNear(v.Text)
	}
	return v.String()
}

// isNumberText reports whether s is one number token, optionally signed, so
// that a bound number is inlined as exactly one literal.
func isNumberText(s string) bool {
	s = strings.TrimPrefix(s, "-")
	lx := lexer{src: s}
	t, err := lx.number()
	return err == nil && t.kind == tokNumber && t.end == len(s) && strings.ContainsAny(s, "0123456789") && !strings.HasPrefix(s, "0x") && !strings.HasPrefix(s, "0X")
}

// StartsWith reports whether text, after leading whitespace and comments,
// starts with one of the words (case-insensitive).
func StartsWith(text string, words ...string) bool {
	lx := lexer{src: text}
	t, err := lx.next()
	if err != nil || t.kind != tokIdent {
		return false
	}
	for _, w := range words {
		if t.is(w) {
			return true
		}
	}
	return false
}
