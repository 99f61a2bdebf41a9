package engine

import (
	"fmt"
	"strconv"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/expression"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"
	"github.com/shopspring/decimal"

	"github.com/dpsql/dpsql/engine/dpparse"
)

// Prepared dpsql statements.
//
// The parser reads a dpsql statement with dpparse.Prepare, which accepts ?
// placeholders in value positions, and hands GMS an injected statement
// whose children are the placeholders as vitess bind variables (:v1, :v2,
// …, the names vitess gives the ? of a prepared statement). GMS binds
// them as it binds any prepared statement's: COM_STMT_EXECUTE's values,
// EXECUTE … USING @vars, and nothing for a text query. The statement's
// WithResolvedChildren then gets the bound values as literals, writes them
// into the statement's text (dpparse.Prepared.Bind) and parses and plans
// that text, so a bound value is validated exactly as a written one. While
// preparing (no values yet) it returns a node with the statement's result
// schema, which is what the prepare response reports, and that fails if
// run. COM_STMT_PREPARE itself needs help to get this far: see
// prepare_wire.go.

// preparedStatement is the injectable of a dpsql statement.
type preparedStatement struct {
	e *Engine
	p *dpparse.Prepared
}

// inject wraps a parsed dpsql statement for the planbuilder: its node and
// privilege, with one bind variable child per placeholder.
func (p *parser) inject(prep *dpparse.Prepared) ast.InjectedStatement {
	_, auth, err := p.e.plan(prep.Stmt)
	if err != nil {
		return failed(err)
	}
	children := make(ast.Exprs, len(prep.Params))
	for i := range prep.Params {
		children[i] = ast.NewValArg([]byte(fmt.Sprintf(":v%d", i+1)))
	}
	return ast.InjectedStatement{Statement: preparedStatement{e: p.e, p: prep}, Children: children, Auth: auth}
}

// WithResolvedChildren implements ast.Injectable: children are the
// placeholders' values, bound or not.
func (s preparedStatement) WithResolvedChildren(children []any) (any, error) {
	if len(children) != len(s.p.Params) {
		return nil, sql.ErrInvalidChildrenNumber.New(s.p.Stmt, len(children), len(s.p.Params))
	}
	if len(children) == 0 {
		node, _, err := s.e.plan(s.p.Stmt)
		if err != nil {
			return nil, SQLError(err)
		}
		return node, nil
	}
	values := make([]dpparse.Value, len(children))
	for i, c := range children {
		v, bound, err := boundValue(c)
		if err != nil {
			return nil, SQLError(ErrSyntax.New("parameter %d (%s): %v", i+1, s.p.Params[i].What, err))
		}
		if !bound {
			return s.unbound()
		}
		values[i] = v
	}
	text, err := s.p.Bind(values)
	if err != nil {
		return nil, SQLError(ErrSyntax.Wrap(err, ""))
	}
	stmt, _, ok, err := dpparse.Parse(text)
	if !ok || err != nil {
		if err == nil {
			err = fmt.Errorf("%s is not a dpsql statement", text)
		}
		return nil, SQLError(ErrSyntax.Wrap(err, ""))
	}
	node, _, err := s.e.plan(stmt)
	if err != nil {
		return nil, SQLError(err)
	}
	return node, nil
}

// unbound returns the node of the statement before its values are bound:
// its result schema (the prepare response's columns), and an error if run,
// as when a text query holds a placeholder.
func (s preparedStatement) unbound() (any, error) {
	node, _, err := s.e.plan(s.p.Stmt)
	if err != nil {
		return nil, SQLError(err)
	}
	return &dpNode{stmt: s.p.Stmt, schema: node.Schema(), readOnly: node.IsReadOnly(), run: func(*sql.Context) ([]sql.Row, error) {
		return nil, ErrSyntax.New("%s has %d ? placeholders without values: prepare it (COM_STMT_PREPARE, or PREPARE … FROM) and execute it with values", s.p.Stmt, len(s.p.Params))
	}}, nil
}

// boundValue returns the literal a placeholder was bound to, or bound ==
// false when it is still a bind variable.
func boundValue(c any) (v dpparse.Value, bound bool, err error) {
	switch e := c.(type) {
	case *expression.BindVar:
		return dpparse.Value{}, false, nil
	case sql.Expression:
		if !e.Resolved() || !isConstant(e) {
			return dpparse.Value{}, false, fmt.Errorf("not a value: %s", e)
		}
		x, err := e.Eval(sql.NewEmptyContext(), nil)
		if err != nil {
			return dpparse.Value{}, false, err
		}
		v, err := literalValue(x)
		return v, true, err
	}
	return dpparse.Value{}, false, fmt.Errorf("not a value: %v", c)
}

// isConstant reports whether e holds no bind variable, column or
// subquery: a literal, possibly converted.
func isConstant(e sql.Expression) bool {
	constant := true
	sql.Inspect(e, func(e sql.Expression) bool {
		switch e.(type) {
		case *expression.BindVar, *expression.GetField, sql.NonDeterministicExpression:
			constant = false
		}
		return constant
	})
	return constant
}

// literalValue is the dpsql literal of a Go value of a GMS literal.
func literalValue(x any) (dpparse.Value, error) {
	num := func(s string) (dpparse.Value, error) { return dpparse.Value{Kind: dpparse.ValueNumber, Text: s}, nil }
	switch x := x.(type) {
	case nil:
		return dpparse.Value{Kind: dpparse.ValueNull}, nil
	case string:
		return dpparse.Value{Kind: dpparse.ValueString, Text: x}, nil
	case []byte:
		return dpparse.Value{Kind: dpparse.ValueString, Text: string(x)}, nil
	case bool:
		if x {
			return num("1")
		}
		return num("0")
	case int8, int16, int32, int64, int:
		return num(fmt.Sprint(x))
	case uint8, uint16, uint32, uint64, uint:
		return num(fmt.Sprint(x))
	case float32:
		return num(strconv.FormatFloat(float64(x), 'g', -1, 32))
	case float64:
		return num(strconv.FormatFloat(x, 'g', -1, 64))
	case decimal.Decimal:
		return num(x.String())
	case time.Time:
		return dpparse.Value{Kind: dpparse.ValueString, Text: x.Format("2006-01-02 15:04:05.999999")}, nil
	case fmt.Stringer:
		return dpparse.Value{Kind: dpparse.ValueString, Text: x.String()}, nil
	}
	return dpparse.Value{}, fmt.Errorf("a value of type %T cannot be a parameter of a dpsql statement", x)
}
