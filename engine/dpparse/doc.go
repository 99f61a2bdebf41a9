// Package dpparse recognises and parses dpsql's own SQL statements.
//
// dpsql extends MySQL with a handful of statements (CREATE SYNTHETIC TABLE,
// SHOW PRIVACY BUDGET, ALTER TABLE … SET DOMAIN, …). The server's parser hook
// calls [Parse] first; when Parse reports ok == false the text is not a dpsql
// statement and is handed, untouched, to the MySQL parser.
//
// Parse works on the first statement of a possibly multi-statement text. It
// skips leading whitespace and comments (-- …, # …, /* … */; a MySQL
// version comment /*! … */ is code and therefore never ours), recognises the
// statement by its leading keywords and returns the number of bytes consumed,
// including the terminating top-level ';'. Keywords are case-insensitive,
// identifiers may be backquoted and tables may be qualified by a database.
//
// Every statement is an immutable, typed value whose String method prints
// canonical SQL that parses back to an equal value. The package is pure: it
// knows nothing about storage, budgets or the server; validation that needs
// the catalog (does the table exist, is the mechanism known, are its options
// valid) is the engine's job.
package dpparse
