// Package analyst shows, as a runnable example, the workflow of dpsql's two
// roles over an in-process server: a data owner loads a sensitive table,
// gives it a privacy budget and public domains and grants SYNTHESIZE; an
// analyst reads the public domain, creates a differentially private
// synthetic table, queries it (answered from its model or its rows) and
// reads its error bounds and the budget it cost.
//
// The package has no API; see the example in its test file (go test
// ./examples/analyst, or go doc -all with -src).
package analyst
