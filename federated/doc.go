// Package federated reads source tables that stay in a PostgreSQL or
// MySQL-wire database.
//
// A FEDERATED table's CONNECTION string (ParseConnection) names a remote
// table; Open connects to its database. Owners read the rows through Scan.
// A synthesis never pulls raw rows: Snapshot begins a consistent
// transaction and answers count marginals (it implements synth.Data), each
// pushed down as a GROUP BY whose grouping expressions compute the public
// domain's codes remotely, exactly as domain.Column.Encode would locally
// (see encode.go). On PostgreSQL the codes are computed once per
// connection into a session-private temporary table inside the snapshot
// (the transaction is read-only from then on), and the marginals are
// answered by plain GROUP BYs over it, each fetching a superset of several
// requested marginals that dpsql projects exactly; on two connections in
// the same exported snapshot, each with its codes table sorted by a
// different attribute (its lead, chosen from the domain sizes) and
// answering first the fetch sets that contain its lead, whose hash tables
// then keep only the groups of one lead value in use. A fetch set has at
// most SetCoverCells hot cells (its cells, divided by its lead's size if
// it has one), so that sets with a lead may be larger: fewer scans. Only the groups' counts
// leave PostgreSQL, each keyed by one integer. A remote user
// without the TEMP privilege falls back to GROUPING SETS over the table in
// a read-only transaction. MySQL and MariaDB answer one GROUP BY per
// marginal in a read-only transaction.
//
// Which remote types take which public domains (anything else is refused
// with ErrUnsupported when the snapshot begins, before any data is read):
//
//   - integers (PostgreSQL smallint, integer, bigint, boolean as 0/1; MySQL
//     TINYINT … BIGINT, UNSIGNED too, YEAR): every domain; a categorical
//     domain of strings matches the integer's decimal text, an ENUM domain
//     its 1-based index (as go-mysql-server stores ENUMs);
//   - floats (PostgreSQL real, double precision; MySQL DOUBLE): ranges
//     (rounded half away from zero), bins, categorical integers and floats;
//     NaN is invalid;
//   - NUMERIC/DECIMAL: as the float strconv.ParseFloat reads from its text
//     (NaN and values beyond float64 are invalid), or, for a categorical
//     domain of strings, its exact text;
//   - strings (PostgreSQL text, varchar; MySQL CHAR, VARCHAR, TEXT, ENUM,
//     SET, BINARY, VARBINARY, BLOB): categorical domains of strings, compared
//     byte for byte (no collation, case or trailing-space folding).
//
// Refused: PostgreSQL char(n) (its padding), MySQL FLOAT (its text form is
// rounded), dates and times, and every other type. Integer-valued decimals
// beyond ±2^53 are read through float64, where Encode would parse the text
// of a scale-0 decimal exactly: an integer domain over such values may
// differ from local encoding.
//
// Errors never contain the password, and their Error text never contains
// the remote server's message, which may quote data values (Detail has it
// for the owner's logs; Redact makes any error safe to show). Cancelling
// the context cancels the remote query: a PostgreSQL cancel request, or
// KILL QUERY on MySQL.
package federated
