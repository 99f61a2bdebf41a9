// Package catalog stores dpsql's databases, tables and metadata durably in one bbolt file.
//
// A Store owns a single bbolt file (dpsql.db) inside a data directory. It
// holds, in separate top-level buckets:
//
//   - a format header (magic and format version), validated on every Open
//     (format 1 files are migrated to the current format);
//   - the server secret that keys differential-privacy noise seeds;
//   - the grants blob of go-mysql-server's mysql database;
//   - the SQL catalog: databases, views, tables, their schemas and rows;
//   - generic metadata buckets, named "meta_<name>", used by the engine to
//     record synthetic-table models and domains (see Store.Update and Tx).
//
// Other packages may add their own buckets to the same file through
// Store.DB; the prefixes "budget_" and "ledger_" are reserved for them and are
// never used here.
//
// # Damaged files
//
// Only a missing data file means a new database. Open takes the file's
// lock, then reads its whole structure without bbolt (internal/boltcheck:
// both meta pages, the size, the freelist and every page of every B+tree)
// before bbolt maps it, and refuses an empty, truncated or damaged file
// with a *DamagedError (ErrDamaged) that says how to restore it; the file
// is never changed. Every value the catalog stores is sealed with a CRC-32C
// checksum of its key and value and verified on every read (sealed.go): a
// damaged record fails with an error matching ErrCorrupt that names it,
// and is never returned. OpenReadOnly and Verify check a file without
// changing it (dpsql check); Backup copies it while it is in use
// (BACKUP DPSQL).
//
// # SQL backend
//
// Store.Provider returns a go-mysql-server sql.MutableDatabaseProvider. Its
// tables support INSERT, UPDATE, DELETE, REPLACE, TRUNCATE, AUTO_INCREMENT,
// CHECK constraints, ALTER TABLE ADD/DROP/MODIFY COLUMN, views, primary-key
// point and range lookups, and secondary indexes. Secondary indexes are
// answered by filtered scans; UNIQUE ones (on tables with a primary key) are
// enforced through a bucket mapping each unique key to its row's primary key.
// Foreign keys, triggers, stored procedures, temporary tables and unique
// indexes on keyless tables or with prefix lengths are not supported.
//
// Every table has a stable numeric ID drawn from a bbolt sequence. IDs are
// never reused: dropping a table and creating another under the same name
// gives a new ID, so state keyed by ID (such as a privacy ledger) cannot be
// reset by renaming tricks.
//
// Rows are stored with a compact typed binary encoding. Tables with a primary
// key are keyed by an order-preserving encoding of the key columns (strings
// with a case-insensitive collation are keyed by their collation weight, so
// 'a' and 'A' collide as MySQL requires); keyless tables are keyed by a
// sequence number and may hold duplicate rows.
//
// # Transactions
//
// The backend does not implement sql.TransactionSession: every statement is
// its own transaction (autocommit). A statement's edits are buffered in memory
// by its editor and applied in one bbolt write transaction, fsynced, when the
// statement completes; a failing statement leaves nothing behind. BEGIN,
// COMMIT and ROLLBACK are accepted by the engine but do not group statements:
// each statement is durable as soon as it completes, and ROLLBACK undoes
// nothing.
//
// AUTO_INCREMENT values are reserved atomically, so concurrent sessions never
// receive the same value; as in InnoDB, values reserved by a statement that
// fails are not given back.
//
// Within a statement, reads do not see the statement's own pending writes
// (INSERT ... SELECT from the same table reads the rows as they were). Note
// that the engine creates a table before its secondary indexes and checks,
// so a CREATE TABLE whose index is refused leaves the table without it.
//
// Reads run in short read transactions of at most 1024 rows, so a
// long scan never blocks writers; a scan that races with concurrent writes
// sees each chunk at its own commit point (read committed), not one snapshot.
// Schema changes (ALTER TABLE) rewrite the table in one write transaction; a
// statement that planned against the old schema fails with ErrSchemaChanged
// instead of reading or writing rows in the wrong layout.
//
// # Concurrency and locking
//
// A Store is safe for concurrent use. bbolt allows one writer at a time, so
// statement commits are serialised. The data file is locked exclusively: a
// second Open of the same directory, from this or any other process, fails
// after Options.Timeout with ErrLocked.
package catalog
