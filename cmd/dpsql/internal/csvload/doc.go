// Package csvload loads a CSV file into a MySQL table over the wire.
//
// A load is two passes over the file. The first pass reads every row,
// checks its arity and collects per-column facts (integers? numbers? first
// offending line?), then decides each column's type: the existing table's,
// the INT domain given by a domain file, or one inferred from the syntax
// of the values. Inferred types are fixed, never sized to the data:
// BIGINT for integers, DOUBLE for other numbers, VARCHAR(255) for the rest
// (a longer value is an error: create the table first, then import into
// it). A schema is metadata that more people see than the rows, so it must
// not reveal the longest text or the largest number. It fails with a *RowError naming the first bad line
// before anything is written, so a malformed file loads nothing. The second
// pass sends the rows as multi-row INSERT statements, each of which is
// atomic: if the server refuses one (a CHECK constraint, a duplicate key),
// the load stops with that batch's line range, that batch is not applied and
// earlier batches stay committed.
//
// Header names are kept exactly (e.g. "income>50K") and always backquoted.
// An empty field is NULL in a numeric column and the empty string in a text
// column; inferred numeric columns are therefore always nullable and text
// columns never, whether or not some field is empty.
package csvload
