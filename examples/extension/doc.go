// Package extension shows, as a runnable example, dpsql installed into a
// go-mysql-server application with one call: the application serves its
// own databases (here go-mysql-server's memory databases) and
// dpsql.Install adds dpsql's statements, privacy ledger, synthesis and
// model answers over them, keeping its metadata in a directory the
// application names. The example synthesizes a host table with AIM and
// answers a query from the model; an analyst cannot read the host's raw
// table.
//
// The package has no API; see the example in its test file (go test
// ./examples/extension).
package extension
