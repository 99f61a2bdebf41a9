// Package ident applies MySQL's rules for identifiers to the names of
// objects dpsql creates itself (the target of CREATE SYNTHETIC TABLE), so
// that dpsql never makes an object that CREATE TABLE or CREATE DATABASE
// would refuse, or that other statements and clients cannot handle (a
// table named with invalid UTF-8 breaks SHOW TABLES for every client of
// its database).
//
// The rules (MySQL 8, "Schema Object Names" and "Identifier Length
// Limits"):
//
//   - a name is valid UTF-8, not empty, and made of characters of the Basic
//     Multilingual Plane other than U+0000: no NUL, no supplementary
//     character (U+10000 and above);
//   - it has at most MaxChars (64) characters, counted as characters, not
//     bytes;
//   - database, table and column names do not end with a space;
//   - database names contain none of / \ . (the characters go-mysql-server's
//     CREATE DATABASE and MySQL's file-name rules refuse; a database name is
//     a directory name).
//
// Check reports a violation as an *Error whose message is MySQL's own for
// the case: ER_TOO_LONG_IDENT (1059) "Identifier name '…' is too long",
// ER_WRONG_DB_NAME (1102) "Incorrect database name '…'", ER_WRONG_TABLE_NAME
// (1103) "Incorrect table name '…'" or ER_WRONG_COLUMN_NAME (1166)
// "Incorrect column name '…'". The name is quoted escaped (Escape): an
// invalid name is never echoed raw.
package ident

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxChars is the longest identifier, in characters (MySQL's NAME_CHAR_LEN).
const MaxChars = 64

// Kind is the kind of object a name is for.
type Kind uint8

const (
	Table Kind = iota + 1
	Database
	Column
)

func (k Kind) String() string {
	switch k {
	case Table:
		return "table"
	case Database:
		return "database"
	case Column:
		return "column"
	}
	return fmt.Sprintf("Kind(%d)", uint8(k))
}

// Problem is what is wrong with a name.
type Problem uint8

const (
	Empty         Problem = iota + 1 // the empty name
	InvalidUTF8                      // not valid UTF-8
	NUL                              // contains U+0000
	Supplementary                    // contains a character above U+FFFF
	TrailingSpace                    // ends with a space
	PathChar                         // a database name with / \ or .
	TooLong                          // more than MaxChars characters
)

var problemText = [...]string{
	Empty:         "it is empty",
	InvalidUTF8:   "it is not valid UTF-8",
	NUL:           "it contains the character U+0000",
	Supplementary: "it contains a character outside the Basic Multilingual Plane (above U+FFFF)",
	TrailingSpace: "it ends with a space",
	PathChar:      `a database name may not contain / \ or .`,
	TooLong:       fmt.Sprintf("it has more than %d characters", MaxChars),
}

func (p Problem) String() string {
	if int(p) < len(problemText) && problemText[p] != "" {
		return problemText[p]
	}
	return fmt.Sprintf("Problem(%d)", uint8(p))
}

// MySQL error numbers of the errors Check returns.
const (
	ERTooLongIdent    = 1059
	ERWrongDBName     = 1102
	ERWrongTableName  = 1103
	ERWrongColumnName = 1166
)

// Error is a name that breaks MySQL's rules.
type Error struct {
	Kind    Kind
	Name    string
	Problem Problem
}

// Error is MySQL's message for the case, with the name escaped.
func (e *Error) Error() string {
	name := Escape(e.Name)
	switch {
	case e.Problem == TooLong:
		return fmt.Sprintf("Identifier name '%s' is too long", name)
	case e.Kind == Database:
		return fmt.Sprintf("Incorrect database name '%s'", name)
	case e.Kind == Column:
		return fmt.Sprintf("Incorrect column name '%s'", name)
	}
	return fmt.Sprintf("Incorrect table name '%s'", name)
}

// Code is the MySQL error number of e.
func (e *Error) Code() int {
	switch {
	case e.Problem == TooLong:
		return ERTooLongIdent
	case e.Kind == Database:
		return ERWrongDBName
	case e.Kind == Column:
		return ERWrongColumnName
	}
	return ERWrongTableName
}

// Check returns nil if name is a valid identifier for an object of kind k,
// and an *Error otherwise. Problems with the characters are reported first,
// then a trailing space (as MySQL does), then the length.
func Check(k Kind, name string) error {
	if p := problem(k, name); p != 0 {
		return &Error{Kind: k, Name: name, Problem: p}
	}
	return nil
}

func problem(k Kind, name string) Problem {
	switch {
	case name == "":
		return Empty
	case !utf8.ValidString(name):
		return InvalidUTF8
	}
	n := 0
	for _, r := range name {
		switch {
		case r == 0:
			return NUL
		case r > 0xFFFF:
			return Supplementary
		case k == Database && (r == '/' || r == '\\' || r == '.'):
			return PathChar
		}
		n++
	}
	if name[len(name)-1] == ' ' {
		return TrailingSpace
	}
	if n > MaxChars {
		return TooLong
	}
	return 0
}

// maxEscaped is how many characters of a name Escape shows, like MySQL's
// messages ('%-.100s').
const maxEscaped = 100

// Escape renders name for an error message: printable characters as they
// are, a backslash doubled, other characters as \xHH (ASCII controls, NUL
// included) or \uHHHH / \U00HHHHHH, bytes that are not UTF-8 as \xHH; at
// most 100 characters, then "...". The result is valid, printable UTF-8.
func Escape(name string) string {
	var b strings.Builder
	n := 0
	for i := 0; i < len(name); {
		if n == maxEscaped {
			b.WriteString("...")
			break
		}
		r, size := utf8.DecodeRuneInString(name[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02X`, name[i])
		case r == '\\':
			b.WriteString(`\\`)
		case r < utf8.RuneSelf && !unicode.IsPrint(r):
			fmt.Fprintf(&b, `\x%02X`, r)
		case !unicode.IsPrint(r) && r <= 0xFFFF:
			fmt.Fprintf(&b, `\u%04X`, r)
		case !unicode.IsPrint(r) || r > 0xFFFF:
			fmt.Fprintf(&b, `\U%08X`, r)
		default:
			b.WriteRune(r)
		}
		i += size
		n++
	}
	return b.String()
}
