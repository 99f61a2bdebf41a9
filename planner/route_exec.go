package planner

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/dolthub/vitess/go/vt/sqlparser"
	"github.com/shopspring/decimal"
)

// ExecOptions configures ModelQuery.Execute; the zero value (or nil) means
// integer counts scaled to the model's total.
type ExecOptions struct {
	// Unrounded returns expected counts and ratios as float64 instead of
	// int64 counts and decimal ratios.
	Unrounded bool
	// Total, if positive, scales the counts to this many records (the
	// synthetic table's row count) instead of the model's total.
	Total float64
	// NonNegative clips negative counts at 0 (noisy answers may be
	// negative; a model's expected counts never are).
	NonNegative bool
	// Eval, if set, computes the value of ExprColumn col for a group's
	// count and the total (both rounded unless Unrounded), as the SQL
	// engine would compute the column's expression from COUNT(*) and
	// (SELECT COUNT(*) FROM syn). Without it an ExprColumn is computed in
	// float64.
	Eval func(col int, count, total float64) (any, error)
}

// groupCount is a group index of the count query and its count.
type groupCount struct {
	g int
	c float64
}

// Execute answers mq from the model m. Each group's count is its expected
// count scaled to the total (ExecOptions.Total, or m.Total()), clipped at 0
// with NonNegative, and rounded half away from zero; groups whose count
// rounds to 0 are omitted, as an empty GROUP BY group would be (a query
// without GROUP BY always returns its one row). Then HAVING filters on the
// count, ORDER BY sorts (stably; without ORDER BY the groups come in code
// order, the last group-by column varying fastest) and LIMIT cuts. A ratio
// is k·count / total computed as go-mysql-server divides integers: a
// decimal with 4 places, or NULL for an empty table. An expression column
// is ExecOptions.Eval of the count and the total.
//
// The returned columns are mq.Columns; each row has one value per column
// (see ColumnKind for the Go types).
func (mq *ModelQuery) Execute(m ModelSource, opts *ExecOptions) ([]ResultColumn, [][]any, error) {
	var o ExecOptions
	if opts != nil {
		o = *opts
	}
	q := mq.Query
	counts, err := mq.counts(m)
	if err != nil {
		return nil, nil, err
	}
	if want := q.Groups(); len(counts) != want {
		return nil, nil, fmt.Errorf("planner: the model answered %d groups, want %d", len(counts), want)
	}
	mt := m.Total()
	scale, total := 1.0, mt
	if o.Total > 0 {
		total = o.Total
		scale = 0
		if mt > 0 {
			scale = o.Total / mt
		}
	}
	if !o.Unrounded {
		total = math.Round(total)
	}

	grouped := len(q.GroupBy) > 0
	keep := make([]groupCount, 0, min(len(counts), 1024))
	for g, x := range counts {
		c := x * scale
		if o.NonNegative && c < 0 {
			c = 0
		}
		r := math.Round(c)
		if grouped && r == 0 {
			continue
		}
		if !o.Unrounded {
			c = r
		}
		if mq.having != nil && mq.having.eval(c) != True {
			continue
		}
		keep = append(keep, groupCount{g: g, c: c})
	}

	eval := o.Eval
	if eval == nil {
		eval = func(col int, count, total float64) (any, error) {
			return evalCount(mq.items[col].expr, count, total), nil
		}
	}

	k := len(q.GroupBy)
	var codes []int // codes[i*k+j]: code of group-by column j in keep[i]
	if k > 0 {
		codes = make([]int, len(keep)*k)
		for i, gc := range keep {
			q.GroupCodes(gc.g, codes[i*k:(i+1)*k])
		}
	}
	// Values of the ExprColumns that ORDER BY sorts on, per kept group.
	var sortVals map[int][]any
	for _, key := range mq.order {
		if key.col == countKey || mq.items[key.col].kind != ExprColumn || sortVals[key.col] != nil {
			continue
		}
		if sortVals == nil {
			sortVals = map[int][]any{}
		}
		vals := make([]any, len(keep))
		for i, gc := range keep {
			if vals[i], err = eval(key.col, gc.c, total); err != nil {
				return nil, nil, err
			}
		}
		sortVals[key.col] = vals
	}
	if len(mq.order) > 0 {
		idx := make([]int, len(keep))
		for i := range idx {
			idx[i] = i
		}
		slices.SortStableFunc(idx, func(x, y int) int {
			for _, key := range mq.order {
				c := 0
				switch {
				case key.col == countKey:
					c = cmpFloat(keep[x].c, keep[y].c)
				case mq.items[key.col].kind == GroupColumn:
					it := mq.items[key.col]
					rk := mq.ranks[it.group]
					c = rk[codes[x*k+it.group]] - rk[codes[y*k+it.group]]
				case mq.items[key.col].kind == ExprColumn:
					c = cmpValues(sortVals[key.col][x], sortVals[key.col][y])
				default:
					// Counts and ratios (k > 0, one total) order alike.
					c = cmpFloat(keep[x].c, keep[y].c)
				}
				if key.desc {
					c = -c
				}
				if c != 0 {
					return c
				}
			}
			return 0
		})
		sorted := make([]groupCount, len(keep))
		sortedCodes := make([]int, len(codes))
		for i, j := range idx {
			sorted[i] = keep[j]
			copy(sortedCodes[i*k:(i+1)*k], codes[j*k:(j+1)*k])
		}
		keep, codes = sorted, sortedCodes
	}
	lo := int(min(mq.offset, int64(len(keep))))
	hi := len(keep)
	if mq.limit >= 0 {
		hi = int(min(int64(lo)+mq.limit, int64(len(keep))))
	}

	var dtotal decimal.Decimal
	if !o.Unrounded && total > 0 {
		dtotal = decimal.NewFromFloat(total)
	}
	width := len(mq.items)
	rows := make([][]any, 0, hi-lo)
	flat := make([]any, (hi-lo)*width) // one backing array for all rows
	for i := lo; i < hi; i++ {
		gc := keep[i]
		row := flat[:width:width]
		flat = flat[width:]
		for j, it := range mq.items {
			switch it.kind {
			case GroupColumn:
				row[j] = mq.values[it.group][codes[i*k+it.group]]
			case CountColumn:
				if o.Unrounded {
					row[j] = gc.c
				} else {
					row[j] = int64(gc.c)
				}
			case RatioColumn:
				switch {
				case !(total > 0):
					row[j] = nil
				case o.Unrounded:
					row[j] = float64(it.mult) * gc.c / total
				default:
					row[j] = divInts(decimal.NewFromInt(it.mult*int64(gc.c)), dtotal)
				}
			case ExprColumn:
				if row[j], err = eval(j, gc.c, total); err != nil {
					return nil, nil, err
				}
			}
		}
		rows = append(rows, row)
	}
	return slices.Clone(mq.Columns), rows, nil
}

// divInts divides two integers as go-mysql-server v0.20 does for the
// outermost division of integer operands: 9 extra digits plus 2 guard
// digits, truncated to 9, then rounded half away from zero to
// div_precision_increment (4) places.
func divInts(l, r decimal.Decimal) decimal.Decimal {
	return l.DivRound(r, 9+2).Truncate(9).Round(divPrecInc)
}

// cmpValues orders values of one result column as SQL does: NULL first,
// then numbers (int64, float64 or decimal.Decimal) by value.
func cmpValues(x, y any) int {
	switch {
	case x == nil && y == nil:
		return 0
	case x == nil:
		return -1
	case y == nil:
		return 1
	}
	dx, okx := x.(decimal.Decimal)
	dy, oky := y.(decimal.Decimal)
	if okx && oky {
		return dx.Cmp(dy)
	}
	return cmpFloat(toFloat(x), toFloat(y))
}

func toFloat(v any) float64 {
	switch v := v.(type) {
	case int64:
		return float64(v)
	case float64:
		return v
	case decimal.Decimal:
		return v.InexactFloat64()
	}
	return math.NaN()
}

// evalCount evaluates a count expression (see router.countExpr) in
// float64 for a group's count and the total; nil stands for NULL
// (a division by zero).
func evalCount(e sqlparser.Expr, count, total float64) any {
	var ev func(e sqlparser.Expr) (float64, bool)
	ev = func(e sqlparser.Expr) (float64, bool) {
		switch e := unparen(e).(type) {
		case *sqlparser.SQLVal:
			x, err := strconv.ParseFloat(string(e.Val), 64)
			return x, err == nil
		case *sqlparser.UnaryExpr:
			x, ok := ev(e.Expr)
			if e.Operator == sqlparser.UMinusStr {
				x = -x
			}
			return x, ok
		case *sqlparser.Subquery:
			return total, true
		case *sqlparser.BinaryExpr:
			x, okx := ev(e.Left)
			y, oky := ev(e.Right)
			if !okx || !oky {
				return 0, false
			}
			return arith(e.Operator, x, y)
		case *sqlparser.FuncExpr:
			name := strings.ToLower(e.Name.String())
			if name == "count" {
				return count, true
			}
			args := make([]float64, len(e.Exprs))
			for i, a := range e.Exprs {
				x, ok := ev(a.(*sqlparser.AliasedExpr).Expr)
				if !ok {
					return 0, false
				}
				args[i] = x
			}
			p := 1.0
			if len(args) == 2 {
				p = math.Pow(10, math.Trunc(args[1]))
			}
			switch name {
			case "abs":
				return math.Abs(args[0]), true
			case "ceil", "ceiling":
				return math.Ceil(args[0]), true
			case "floor":
				return math.Floor(args[0]), true
			case "round":
				return math.Round(args[0]*p) / p, true
			case "truncate":
				return math.Trunc(args[0]*p) / p, true
			case "mod":
				return arith(sqlparser.ModStr, args[0], args[1])
			}
		}
		return 0, false
	}
	x, ok := ev(e)
	if !ok || math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return x
}

// arith applies a binary arithmetic operator; false for a division by 0.
func arith(op string, x, y float64) (float64, bool) {
	switch op {
	case sqlparser.PlusStr:
		return x + y, true
	case sqlparser.MinusStr:
		return x - y, true
	case sqlparser.MultStr:
		return x * y, true
	}
	if y == 0 {
		return 0, false
	}
	switch op {
	case sqlparser.DivStr:
		return x / y, true
	case sqlparser.IntDivStr:
		return math.Trunc(x / y), true
	case sqlparser.ModStr:
		return math.Mod(x, y), true
	}
	return 0, false
}

func cmpFloat(x, y float64) int {
	switch {
	case x < y:
		return -1
	case x > y:
		return 1
	}
	return 0
}

// Cells is the number of cells of the marginal on q.Attrs.
func (q *Query) Cells() int {
	n := 1
	for _, s := range q.sizes {
		n *= s
	}
	return n
}
