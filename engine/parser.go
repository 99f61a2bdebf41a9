package engine

import (
	"context"
	"strings"
	"unicode"

	"github.com/dolthub/go-mysql-server/sql"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"

	"github.com/dpsql/dpsql/engine/dpparse"
)

var _ sql.Parser = (*parser)(nil)

// parser routes each statement of a query: dpsql statements (recognised by
// dpparse, after leading comments, with ? placeholders in value positions:
// prepare.go) become injected plan nodes, everything
// else goes to the MySQL parser. Multi-statement scripts may mix both.
// COUNT queries on synthetic tables that their models answer become
// injected nodes too (route, answer_route.go), and so do the MySQL
// statements dpsql serves itself for clients (clientStatement, compat.go).
// MySQL's non-reserved keywords that vitess does not take as identifiers
// are backquoted when the MySQL parser fails on them (keywords.go).
type parser struct {
	e     *Engine
	mysql *sql.MysqlParser
}

// newParser returns the parser of e.
func newParser(e *Engine) *parser {
	return &parser{e: e, mysql: sql.NewMysqlParser()}
}

// ParseSimple implements sql.Parser.
func (p *parser) ParseSimple(query string) (ast.Statement, error) {
	stmt, _, _, err := p.ParseWithOptions(context.Background(), query, ';', false, ast.ParserOptions{})
	return stmt, err
}

// Parse implements sql.Parser.
func (p *parser) Parse(ctx *sql.Context, query string, multi bool) (ast.Statement, string, string, error) {
	return p.ParseWithOptions(ctx, query, ';', multi, sql.LoadSqlMode(ctx).ParserOptions())
}

// ParseWithOptions implements sql.Parser. For a dpsql statement, parsed is
// its text and remainder the rest of a multi-statement query ("" if only
// whitespace and semicolons remain).
func (p *parser) ParseWithOptions(ctx context.Context, query string, delimiter rune, multi bool, options ast.ParserOptions) (ast.Statement, string, string, error) {
	prep, n, ok, err := dpparse.Prepare(query)
	if !ok {
		if st, parsed, rest, ok := p.parseExplainSynth(query, delimiter, multi); ok {
			return st, parsed, rest, nil // explain_synth.go
		}
		mstmt, parsed, rest, err := p.mysql.ParseWithOptions(ctx, query, delimiter, multi, options)
		if err != nil {
			fixed, _, ok := quoteKeywords(query, err, func(q string) error {
				_, _, _, err := p.mysql.ParseWithOptions(ctx, q, delimiter, multi, options)
				return err
			})
			if !ok {
				return mstmt, parsed, rest, err
			}
			if mstmt, parsed, rest, err = p.mysql.ParseWithOptions(ctx, fixed, delimiter, multi, options); err != nil {
				return mstmt, parsed, rest, err
			}
		}
		return p.route(ctx, p.e.clientStatement(ctx, mstmt), parsed), parsed, rest, nil
	}
	if err != nil {
		return failed(ErrSyntax.Wrap(err, "")), query, "", nil
	}
	parsed := sql.RemoveSpaceAndDelimiter(query[:n], delimiter)
	rest := query[n:]
	if isBlank(rest, delimiter) {
		rest = ""
	}
	if rest != "" && !multi {
		return failed(ErrSyntax.New("unexpected text after %s: %s", prep.Stmt, abbrev(rest))), query, "", nil
	}
	return p.inject(prep), parsed, rest, nil
}

// ParseOneWithOptions implements sql.Parser: it parses the first statement
// and returns the index where the next one starts.
func (p *parser) ParseOneWithOptions(ctx context.Context, query string, options ast.ParserOptions) (ast.Statement, int, error) {
	prep, n, ok, err := dpparse.Prepare(query)
	if !ok {
		if st, parsed, _, ok := p.parseExplainSynth(query, ';', true); ok {
			return st, explainEnd(query, parsed), nil // explain_synth.go
		}
		stmt, next, err := p.mysql.ParseOneWithOptions(ctx, query, options)
		if err != nil {
			fixed, inserted, ok := quoteKeywords(query, err, func(q string) error {
				_, _, err := p.mysql.ParseOneWithOptions(ctx, q, options)
				return err
			})
			if !ok {
				return stmt, next, err
			}
			if stmt, next, err = p.mysql.ParseOneWithOptions(ctx, fixed, options); err != nil {
				return stmt, next, err
			}
			next = originalOffset(next, inserted)
		}
		return p.e.clientStatement(ctx, stmt), next, nil
	}
	if err != nil {
		return failed(ErrSyntax.Wrap(err, "")), len(query), nil
	}
	return p.inject(prep), n, nil
}

// failed returns a statement whose building fails with err. Malformed and
// unplannable dpsql statements are reported this way rather than as parse
// errors, because the planbuilder rewraps parse errors as a generic 1105;
// an error returned while building reaches the client with err's own MySQL
// code (1064 for syntax, 1235 for unsupported, ...).
func failed(err error) ast.InjectedStatement {
	return ast.InjectedStatement{Statement: failedStatement{err}, Auth: authAnyone}
}

// isBlank reports whether s holds only whitespace and delimiters.
func isBlank(s string, delimiter rune) bool {
	return strings.IndexFunc(s, func(r rune) bool { return r != delimiter && !unicode.IsSpace(r) }) < 0
}

// failedStatement is a dpsql statement that could not be planned.
type failedStatement struct{ err error }

// WithResolvedChildren implements ast.Injectable by failing.
func (f failedStatement) WithResolvedChildren([]any) (any, error) { return nil, SQLError(f.err) }
