package engine

import (
	"errors"

	"github.com/dpsql/dpsql/engine/dpparse"
	"github.com/dpsql/dpsql/internal/ident"
)

// Names dpsql statements create.
//
// go-mysql-server checks the names of CREATE TABLE (at most 64 bytes) and
// CREATE DATABASE (no '/'), but a synthetic table is written straight into
// the catalog, so dpsql applies MySQL's identifier rules itself
// (internal/ident) to every name a dpsql statement creates. Only CREATE
// SYNTHETIC TABLE creates a named object: its target, checked by
// checkTarget before any budget is reserved. Every other dpsql statement
// names existing objects (tables, columns, accounts), which are looked up,
// not created.

// checkNewTable applies MySQL's identifier rules to a table a dpsql
// statement creates: its name and, when given, its database's. The error
// is MySQL's (1059, 1102 or 1103) and quotes the name escaped.
func checkNewTable(t dpparse.TableName) error {
	if t.DB != "" {
		if err := identError(ident.Check(ident.Database, t.DB)); err != nil {
			return err
		}
	}
	return identError(ident.Check(ident.Table, t.Name))
}

// identError converts an ident error to the engine kind of its MySQL code.
func identError(err error) error {
	var ie *ident.Error
	if !errors.As(err, &ie) {
		return err
	}
	kind := ErrWrongTableName
	switch ie.Code() {
	case ident.ERTooLongIdent:
		kind = ErrTooLongIdent
	case ident.ERWrongDBName:
		kind = ErrWrongDBName
	}
	return kind.New("%s", ie.Error())
}
