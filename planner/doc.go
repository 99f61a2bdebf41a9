// Package planner compiles a workload of SQL counting queries into the
// weighted marginal queries that synthesis mechanisms consume.
//
// It is pure and deterministic: a workload, the source table's name and its
// public domain (catalog/domain) go in, a *Workload comes out. It knows
// nothing about storage, budgets or mechanisms, so every rejection happens
// before any privacy budget is spent.
//
// # Accepted queries
//
// Each workload query must be
//
//	SELECT c1, …, ck, COUNT(*) FROM source [WHERE pred] GROUP BY c1, …, ck
//	SELECT COUNT(*) FROM source [WHERE pred]
//
// where the group-by columns are exactly the selected columns (in any
// order; the select list fixes the order of the answer), columns may be
// qualified by the table (or its alias) and aliased, and pred is built from
// =, <>, !=, <, <=, >, >=, IN, NOT IN, BETWEEN, NOT BETWEEN, IS NULL,
// IS NOT NULL, AND, OR, NOT and parentheses, each comparison between a
// column that has a domain and a literal of the column's type (or NULL).
// Everything else is rejected with an *Error whose Kind names the problem
// and whose Fragment is the offending SQL.
//
// A compiled Query is a marginal on Attrs = group-by ∪ predicate columns
// (sorted attribute indices) plus the predicate compiled to code level: for
// every atom, the SQL truth value (TRUE, FALSE or UNKNOWN, three-valued as in
// SQL) of each code of its column, composed into a boolean tree. Its answer
// can therefore be computed from any marginal on Attrs (Query.Answer), and a
// predicate that is a conjunction of single-column conditions also has a
// per-attribute 0/1 evidence form (Query.Evidence) for models that can
// condition on it directly.
//
// String comparisons are binary (byte-wise), as under go-mysql-server's
// default collation utf8mb4_0900_bin.
//
// # Binned columns
//
// A Binned column knows only which bin a value falls in, so a condition on
// it is accepted only if every bin satisfies it entirely or not at all
// ("bin-aligned"); otherwise the query is rejected with KindBinAlignment
// and a message listing the bin edges. For a float column bin i is
// [e_i, e_{i+1}) (the last bin closed): c < e_i and c >= e_i are aligned,
// while c <= e_i and c = x are not. For an integer column a bin is the set
// of integers it contains, so c < n, c <= n-1 and, for bins holding a
// single integer, c = n are aligned when n is the first integer of a bin.
//
// # Answering from a model
//
// RouteSelect decides whether a SELECT on a synthetic table is a count query
// that the table's fitted model can answer exactly (expected counts, no
// sampling noise): the workload form above, in any of its equivalent
// phrasings (GROUP BY positions and aliases, DISTINCT, COUNT(1)), plus
// arithmetic on COUNT(*) such as percentages
// 100.0 * COUNT(*) / (SELECT COUNT(*) FROM syn), HAVING on COUNT(*),
// ORDER BY and LIMIT, and LIKE on text columns given a matcher. The
// resulting ModelQuery executes against any ModelSource (a *pgm.Model, a
// ModelCache that remembers its marginals, or a Measured noisy marginal)
// and returns rows with the values the synthetic rows' SQL would give. A
// query that is not routed comes with the reason, and runs on the synthetic
// rows instead.
package planner
