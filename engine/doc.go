// Package engine runs the dpsql server: go-mysql-server over the bbolt
// catalog, speaking the MySQL protocol.
//
// # Lifecycle
//
// New validates a Config, creates or reopens the data directory (refusing
// one held by another server or written by a newer dpsql), loads users and
// grants, makes sure root@localhost and the locked superuser dp_internal
// exist, seeds the demo database if asked and binds the listener. Serve
// accepts connections until its context is cancelled, then closes every
// connection and the storage.
//
// # Statements
//
// The engine's sql.Parser (parser.go) asks dpparse whether each statement
// of a query is a dpsql statement, skipping leading comments. If so, it
// hands GMS an ast.InjectedStatement carrying the statement's plan node and
// the privilege the planbuilder must check; otherwise the text goes to the
// MySQL parser. Multi-statement scripts may mix both. statements.go is the
// registry: one plan node and one CALL procedure (the statement's twin) per
// statement.
//
// dpsql statements may hold ? placeholders in value positions; the injected
// statement's children are then bind variables that GMS binds as for any
// prepared statement (prepare.go). vitess parses the text of a
// COM_STMT_PREPARE itself before any handler, so a packet filter installed
// on each authenticated connection hands it a stand-in instead
// (prepare_wire.go). When the MySQL parser fails on one of MySQL's
// non-reserved keywords used as a name, the parser backquotes it and
// parses again (keywords.go). qualified.go and provider.TableFunction let
// statements whose tables are all qualified run without a current
// database, which GMS requires for DELETE's TRUNCATE conversion, ANALYZE
// TABLE and table functions.
//
// # DP statements
//
// Each dpsql statement is a plan node (most are a dpNode: a run function
// and a schema) built by Engine.plan and run with the session's context.
// They share dp.go: the catalog (metadata buckets, synthetic-table records)
// and the budget ledger, openTable (resolve the named raw table and check
// the caller's role: owner or SYNTHESIZE grantee, access.go), the public
// domain of a table (domains.go: schema plus the owner's declarations) and
// the session's ledger user. budget_stmts.go, domain_stmts.go,
// grant_stmts.go, synthetic_stmts.go and bounds_stmts.go hold the statements
// and their CALL twins.
//
// # Synthesis
//
// CREATE SYNTHETIC TABLE (synthesize.go) validates everything that needs no
// data (options, domain, workload compiled by the planner, target, cost),
// reserves ρ in the ledger durably, scans the source once into a
// column-major encoded dataset (encode.go), runs the mechanism from the
// registry with noise from synth/noise (keyed by the server secret when
// SEED is given), then commits the ledger entry and writes the table, its
// rows, its model and its release in one catalog transaction. The table's
// column types come from the public domain alone (public_types.go), and its
// name must follow MySQL's identifier rules (identifiers.go). A failure or
// KILL QUERY after the scan started leaves the charge spent and nothing
// written. Progress shows in SHOW PROCESSLIST.
//
// # Federated tables
//
// CREATE TABLE ... ENGINE = FEDERATED CONNECTION = '...' declares a table
// whose rows stay in a remote PostgreSQL or MySQL database (federated.go):
// an analyzer rule turns go-mysql-server's CreateTable plan into a node
// that connects, checks the declared columns against the remote table and
// stores the declaration with its connection string in the catalog. Its
// credentials are masked wherever a statement or the table is shown. The
// provider serves it as a table that reads through to the source (owner
// SELECT) and refuses writes. CREATE SYNTHETIC TABLE from it opens the
// source and a read-only snapshot at the end of phase 1 and hands the
// mechanism the snapshot, which pushes each marginal down as one remote
// GROUP BY (federated_synth.go); the charge is kept once a data query was
// sent.
//
// # Answers from models
//
// For text queries, the parser also routes a COUNT SELECT on one synthetic
// table to its model (answer_route.go): if the session's
// dpsql_answer_source is 'model', planner.RouteSelect accepts the query and
// go-mysql-server binds it for the session (privileges and result types),
// the statement becomes a ModelAnswer node (answer_node.go) that computes
// expected counts from the model; arithmetic on the counts is evaluated
// with go-mysql-server's bound expression, and SQL_SELECT_LIMIT applies.
// On an answers-only table the same node sums the least noisy released
// marginal that contains the query's columns, and a query it cannot answer
// is refused (ErrNotAnswerable) unless it reads the cells (dp_* columns).
// answer.go caches, per synthetic table (at most 32, least recently used
// out), the decoded model, its marginals and its bounds.Analysis, which
// SHOW ERROR BOUNDS and the dp_marginal table function (bounds_stmts.go,
// sqlfuncs) read, or an answers-only table's released marginals. EXPLAIN of
// a SELECT on a synthetic table says which source answers it (explain.go).
// A server-side prepared SELECT is routed per execution with its values
// inlined (routePrepared). Everything else runs on the synthetic rows, with
// a Note saying so (answer_notes.go).
//
// # ENUM and SET strings
//
// go-mysql-server reads an ENUM or SET value as its index in LIKE, REGEXP
// and string functions; an analyzer rule (enum_strings.go) wraps such
// operands so that they read the label, as in MySQL.
//
// # Isolation
//
// The provider wraps every database so that, per session, the tables and
// views its user holds no privilege on do not exist in any enumeration
// (isolation.go), serves information_schema with one table value per
// lookup (isolation_infoschema.go), and guards LOAD_FILE; an analyzer rule
// adds MySQL's FILE and SUPER checks that GMS lacks. SHOW PROCESSLIST and
// information_schema.processlist show a user their own threads only, all
// of them to PROCESS holders (processlist.go).
//
// # Client compatibility
//
// compat.go makes the server look like one MySQL 8.0 server to client
// tools: one version string, real uptime and table creation times, SHOW
// ERRORS, (no) events, SHOW GRANTS for every user with their SYNTHESIZE
// grants, and a SHOW DATABASES that mysqldump --all-databases can dump and
// reload (diagnostics.go records the errors SHOW ERRORS shows).
//
// # Authentication
//
// Authentication is always on: GMS's mysql database holds users and grants
// and is persisted in the catalog after every CREATE USER, GRANT or REVOKE.
// Engine.QueryInternal runs a query as dp_internal in a fresh session, for
// privileged reads made on an analyst's behalf.
//
// # Errors
//
// errors.go declares the engine's error kinds, each with its MySQL error
// number; SQLError converts them for the wire.
package engine
