// Package federated reads source tables that stay in a PostgreSQL or
// MySQL-wire database.
//
// A FEDERATED table's CONNECTION string (ParseConnection) names a remote
// table; Open connects to its database. Owners read the rows through Scan.
// A synthesis never pulls raw rows: Snapshot begins a consistent read-only
// transaction and answers count marginals (it implements synth.Data), each
// pushed down as a GROUP BY whose grouping expressions compute the public
// domain's codes remotely, exactly as domain.Column.Encode would locally
// (see encode.go). PostgreSQL answers many marginals in one scan with
// GROUPING SETS; MySQL and MariaDB answer one GROUP BY per marginal.
//
// Errors never contain the password, and their Error text never contains
// the remote server's message, which may quote data values (Detail has it
// for the owner's logs; Redact makes any error safe to show). Cancelling
// the context cancels the remote query: a PostgreSQL cancel request, or
// KILL QUERY on MySQL.
package federated
