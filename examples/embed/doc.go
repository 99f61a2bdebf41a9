// Package embed shows, as a runnable example, dpsql embedded in a Go
// program: dpsql.Open serves a data directory in the process, and the
// program talks to it through database/sql with the "dpsql" driver, over
// in-memory pipes (no TCP port). Users, grants, the privacy ledger and
// durability are the server's: the example grants an analyst SYNTHESIZE,
// the analyst creates a synthetic table, and after Close and a re-open
// the table, the grant and the ledger entry are still there.
//
// The package has no API; see the example in its test file (go test
// ./examples/embed).
package embed
