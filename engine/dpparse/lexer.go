package dpparse

import (
	"strings"
	"unicode/utf8"
)

// tokKind classifies a token.
type tokKind uint8

const (
	tokEOF    tokKind = iota
	tokIdent          // bare word: keyword or identifier
	tokQIdent         // `backquoted identifier`
	tokString         // 'string' or "string"
	tokNumber         // 12, 1.5, 1e-9, .5
	tokPunct          // single-byte punctuation: ( ) , ; . = @ - + and others
)

// token is one lexeme. Pos and End are byte offsets into the source text.
type token struct {
	kind tokKind
	pos  int
	end  int
	val  string // decoded value: identifier name, string contents, number text, punctuation byte
}

// is reports whether t is the keyword kw (case-insensitive). Backquoted
// identifiers are never keywords.
func (t token) is(kw string) bool {
	return t.kind == tokIdent && strings.EqualFold(t.val, kw)
}

// isPunct reports whether t is the punctuation byte c.
func (t token) isPunct(c byte) bool {
	return t.kind == tokPunct && t.val[0] == c
}

// lexer splits SQL text into tokens. It is quote-, backquote- and
// comment-aware. Errors (unterminated quotes or comments, version comments)
// are reported as *Error.
type lexer struct {
	src string
	pos int
}

// skipSpace advances past whitespace and comments. A MySQL version comment
// (/*! … */ or /*+ … */ optimizer hint) is code, so skipSpace stops in front
// of it and reports versionComment = true.
func (l *lexer) skipSpace() (versionComment bool, err *Error) {
	for l.pos < len(l.src) {
		c := l.src[l.pos]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			l.pos++
		case c == '#':
			l.skipLine()
		case c == '-' && strings.HasPrefix(l.src[l.pos:], "--") &&
			(l.pos+2 == len(l.src) || isSpace(l.src[l.pos+2])):
			// MySQL requires whitespace (or end of input) after "--".
			l.skipLine()
		case c == '/' && strings.HasPrefix(l.src[l.pos:], "/*"):
			if strings.HasPrefix(l.src[l.pos:], "/*!") || strings.HasPrefix(l.src[l.pos:], "/*+") {
				return true, nil
			}
			end := strings.Index(l.src[l.pos+2:], "*/")
			if end < 0 {
				return false, l.errAt(KindUnterminated, l.pos, "unterminated comment")
			}
			l.pos += 2 + end + 2
		default:
			return false, nil
		}
	}
	return false, nil
}

func (l *lexer) skipLine() {
	if i := strings.IndexByte(l.src[l.pos:], '\n'); i >= 0 {
		l.pos += i + 1
	} else {
		l.pos = len(l.src)
	}
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// isIdentByte reports whether c may appear in a bare identifier. Bytes of
// multi-byte UTF-8 sequences are accepted, as MySQL does.
func isIdentByte(c byte) bool {
	return c == '_' || c == '$' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || isDigit(c) || c >= utf8.RuneSelf
}

// next returns the next token, skipping whitespace and comments.
func (l *lexer) next() (token, *Error) {
	vc, err := l.skipSpace()
	if err != nil {
		return token{}, err
	}
	start := l.pos
	if vc {
		return token{}, l.errAt(KindUnexpected, start, "version comments are not supported in dpsql statements")
	}
	if l.pos >= len(l.src) {
		return token{kind: tokEOF, pos: start, end: start}, nil
	}
	c := l.src[l.pos]
	switch {
	case c == '`':
		return l.quoted('`', tokQIdent)
	case c == '\'' || c == '"':
		return l.quoted(c, tokString)
	case isDigit(c) || c == '.' && l.pos+1 < len(l.src) && isDigit(l.src[l.pos+1]):
		return l.number()
	case isIdentByte(c):
		for l.pos < len(l.src) && isIdentByte(l.src[l.pos]) {
			l.pos++
		}
		return token{kind: tokIdent, pos: start, end: l.pos, val: l.src[start:l.pos]}, nil
	default:
		l.pos++
		return token{kind: tokPunct, pos: start, end: l.pos, val: l.src[start:l.pos]}, nil
	}
}

// number lexes digits [. digits] [e [+-] digits]. A number immediately
// followed by identifier bytes (12abc) is a malformed token.
func (l *lexer) number() (token, *Error) {
	start := l.pos
	if strings.HasPrefix(l.src[l.pos:], "0x") || strings.HasPrefix(l.src[l.pos:], "0X") {
		// Hexadecimal literal (meaningful inside WORKLOAD queries only).
		p := l.pos + 2
		for p < len(l.src) && strings.IndexByte("0123456789abcdefABCDEF", l.src[p]) >= 0 {
			p++
		}
		if p > l.pos+2 && (p == len(l.src) || !isIdentByte(l.src[p])) {
			l.pos = p
			return token{kind: tokNumber, pos: start, end: p, val: l.src[start:p]}, nil
		}
	}
	for l.pos < len(l.src) && isDigit(l.src[l.pos]) {
		l.pos++
	}
	if l.pos < len(l.src) && l.src[l.pos] == '.' {
		l.pos++
		for l.pos < len(l.src) && isDigit(l.src[l.pos]) {
			l.pos++
		}
	}
	if l.pos < len(l.src) && (l.src[l.pos] == 'e' || l.src[l.pos] == 'E') {
		p := l.pos + 1
		if p < len(l.src) && (l.src[p] == '+' || l.src[p] == '-') {
			p++
		}
		if p < len(l.src) && isDigit(l.src[p]) {
			for p < len(l.src) && isDigit(l.src[p]) {
				p++
			}
			l.pos = p
		}
	}
	if l.pos < len(l.src) && isIdentByte(l.src[l.pos]) && l.src[l.pos] != '$' {
		for l.pos < len(l.src) && isIdentByte(l.src[l.pos]) {
			l.pos++
		}
		return token{}, l.errAt(KindBadNumber, start, "malformed number "+quoteNear(l.src[start:l.pos]))
	}
	return token{kind: tokNumber, pos: start, end: l.pos, val: l.src[start:l.pos]}, nil
}

// quoted lexes a quoted string or identifier. The quote is escaped by
// doubling it; in strings a backslash escapes the next byte as in MySQL.
func (l *lexer) quoted(q byte, kind tokKind) (token, *Error) {
	start := l.pos
	l.pos++
	var b strings.Builder
	for l.pos < len(l.src) {
		c := l.src[l.pos]
		switch {
		case c == q && l.pos+1 < len(l.src) && l.src[l.pos+1] == q:
			b.WriteByte(q)
			l.pos += 2
		case c == q:
			l.pos++
			return token{kind: kind, pos: start, end: l.pos, val: b.String()}, nil
		case c == '\\' && kind == tokString && l.pos+1 < len(l.src):
			b.WriteByte(unescape(l.src[l.pos+1]))
			l.pos += 2
		default:
			b.WriteByte(c)
			l.pos++
		}
	}
	what := "string"
	if kind == tokQIdent {
		what = "quoted identifier"
	}
	return token{}, l.errAt(KindUnterminated, start, "unterminated "+what)
}

// unescape maps the byte after a backslash to its MySQL meaning.
func unescape(c byte) byte {
	switch c {
	case '0':
		return 0
	case 'b':
		return '\b'
	case 'n':
		return '\n'
	case 'r':
		return '\r'
	case 't':
		return '\t'
	case 'Z':
		return 26
	}
	return c
}

func (l *lexer) errAt(kind ErrorKind, pos int, msg string) *Error {
	return newError(l.src, kind, pos, msg)
}

// quoteNear renders s for an error message, shortened.
func quoteNear(s string) string {
	const max = 40
	if len(s) > max {
		s = s[:max] + "…"
	}
	return "'" + s + "'"
}
