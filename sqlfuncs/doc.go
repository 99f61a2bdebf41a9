// Package sqlfuncs holds dpsql's SQL functions for go-mysql-server.
//
// dp_marginal is a table function that shows a synthetic table's model
// marginal with a confidence interval per cell:
//
//	SELECT * FROM dp_marginal('db.syn', 'col1', 'col2'[, confidence])
//
// It returns one row per cell of the marginal on the named columns (the last
// column varying fastest): the cell's value of each column, the model's
// expected count (estimate), the interval's lower and upper ends, and
// support, which says whether the interval comes from a supported marginal
// (one the mechanism measured directly) or an unsupported one (bounded
// through the selection guarantee). The confidence defaults to 0.95.
//
// The package knows nothing of storage, models or privileges: the server
// implements Marginals, which resolves the table for the session, checks
// that it may be read and computes the intervals. Everything shown is
// post-processing of differentially private releases.
package sqlfuncs
