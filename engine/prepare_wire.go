package engine

// COM_STMT_PREPARE of dpsql statements.
//
// vitess parses the text of every COM_STMT_PREPARE with its own MySQL
// grammar before any handler sees it (mysql.Conn.handleNextCommand, to count
// the ? parameters), and answers a syntax error itself: "syntax error at
// position 17 near 'SYNTHETIC'". Neither vitess nor go-mysql-server offers
// a hook there, so dpsql filters the client's packets instead. Once a
// connection has authenticated (after any TLS handshake), the connection's
// read buffer is pointed at a packetFilter reading the same stream: every
// packet passes unchanged, except a COM_STMT_PREPARE whose text is a dpsql
// statement, which becomes a stand-in that vitess parses with the same
// number of parameters:
//
//	SELECT /*dpsql prepare*/ X'<the statement's text in hex>', ?, ?
//
// EXPLAIN of a statement with placeholders gets a stand-in too: vitess
// parses it but counts none of its parameters (standInParams). A text
// that vitess fails on because of MySQL's non-reserved keywords used as
// identifiers is passed on with them backquoted (keywords.go).
//
// The handler (prepareHandler) turns the stand-in back into the statement
// before go-mysql-server prepares it, and records the statement's text as
// the prepared statement's, so the prepare response and every execution
// are go-mysql-server's own, with dpsql's parser reading the placeholders
// (prepare.go). A client that sends a stand-in itself only prepares the
// dpsql statement inside it, which it may prepare directly anyway.
//
// The read buffer is an unexported field of vitess's mysql.Conn, reached
// by reflection. If a vitess upgrade renames it, the filter is not
// installed (the server logs why) and prepared dpsql statements fail as
// before; TestPreparedDpsqlStatements in cmd/dpsql catches that.

import (
	"bufio"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"reflect"
	"strings"
	"unsafe"

	"github.com/dolthub/go-mysql-server/server"
	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"github.com/dolthub/vitess/go/mysql"
	"github.com/dolthub/vitess/go/sqltypes"
	querypb "github.com/dolthub/vitess/go/vt/proto/query"
	ast "github.com/dolthub/vitess/go/vt/sqlparser"

	"github.com/dpsql/dpsql/engine/dpparse"
	"github.com/dpsql/dpsql/internal/vtparse"
)

// standInPrefix starts the stand-in of a prepared dpsql statement.
const standInPrefix = "SELECT /*dpsql prepare*/ X'"

// maxFilteredPacket bounds the COM_STMT_PREPARE packets the filter reads
// whole: a larger one (or a multi-packet one) passes unchanged.
const maxFilteredPacket = 1 << 20

// protocolListener is the server's ProtocolListenerFunc: vitess's listener,
// whose authentication also installs the packet filter on each connection.
func (e *Engine) protocolListener(cfg server.Config, lc mysql.ListenerConfig, sel server.ServerEventListener) (server.ProtocolListener, error) {
	lc.AuthServer = filterAuth{AuthServer: lc.AuthServer, e: e}
	return server.MySQLProtocolListenerFactory(cfg, lc, sel)
}

// filterAuth is an AuthServer whose methods install the packet filter on
// the connections they authenticate.
type filterAuth struct {
	mysql.AuthServer
	e *Engine
}

// AuthMethods implements mysql.AuthServer.
func (a filterAuth) AuthMethods() []mysql.AuthMethod {
	ms := a.AuthServer.AuthMethods()
	out := make([]mysql.AuthMethod, len(ms))
	for i, m := range ms {
		out[i] = filterAuthMethod{AuthMethod: m, e: a.e}
	}
	return out
}

// filterAuthMethod installs the packet filter once its method has
// authenticated a connection.
type filterAuthMethod struct {
	mysql.AuthMethod
	e *Engine
}

// HandleAuthPluginData implements mysql.AuthMethod. vitess calls it after
// the TLS handshake and any auth switch, and before it reads the first
// command.
func (m filterAuthMethod) HandleAuthPluginData(c *mysql.Conn, user string, serverData, clientData []byte, addr net.Addr) (mysql.Getter, error) {
	g, err := m.AuthMethod.HandleAuthPluginData(c, user, serverData, clientData, addr)
	if err == nil {
		if ferr := filterReads(c, m.e.rewritePrepare); ferr != nil {
			m.e.warnNoFilter.Do(func() {
				m.e.log.Warn("cannot intercept COM_STMT_PREPARE: server-side prepared dpsql statements will fail (use their CALL twins)", "err", ferr)
			})
		}
	}
	return g, err
}

// bufferedReaderType is the type of mysql.Conn's read buffer.
var bufferedReaderType = reflect.TypeOf((*bufio.Reader)(nil))

// filterReads makes c's command reads go through a packetFilter. c must be
// between commands with nothing buffered, as after authentication.
func filterReads(c *mysql.Conn, rewrite func(string) (string, bool)) error {
	f := reflect.ValueOf(c).Elem().FieldByName("bufferedReader")
	if !f.IsValid() || f.Type() != bufferedReaderType {
		return errors.New("vitess mysql.Conn has no bufferedReader *bufio.Reader field")
	}
	br := *(**bufio.Reader)(unsafe.Pointer(f.UnsafeAddr()))
	switch {
	case br == nil:
		return errors.New("the connection reads unbuffered")
	case br.Buffered() != 0:
		return fmt.Errorf("%d bytes already buffered", br.Buffered())
	}
	br.Reset(&packetFilter{src: c.Conn, rewrite: rewrite})
	return nil
}

// packetFilter passes a client's MySQL packets through, replacing the text
// of a COM_STMT_PREPARE packet when rewrite says so.
type packetFilter struct {
	src       io.Reader
	rewrite   func(string) (string, bool)
	pending   []byte // bytes to return before reading src again
	remaining int    // payload bytes of the current packet to pass straight from src
	multi     bool   // the next packet continues a payload of 2^24-1 bytes or more
	hdr       [4]byte
}

// Read implements io.Reader.
func (f *packetFilter) Read(p []byte) (int, error) {
	for {
		if len(f.pending) > 0 {
			n := copy(p, f.pending)
			f.pending = f.pending[n:]
			return n, nil
		}
		if f.remaining > 0 {
			n, err := f.src.Read(p[:min(len(p), f.remaining)])
			f.remaining -= n
			return n, err
		}
		if err := f.next(); err != nil {
			return 0, err
		}
	}
}

// next reads the next packet's header and sets what to pass on: the whole
// packet when it is a COM_STMT_PREPARE small enough to examine, otherwise
// the header, then the payload straight from src.
func (f *packetFilter) next() error {
	if _, err := io.ReadFull(f.src, f.hdr[:]); err != nil {
		return err
	}
	length := int(f.hdr[0]) | int(f.hdr[1])<<8 | int(f.hdr[2])<<16
	command := f.hdr[3] == 0 && !f.multi // the first packet of a command
	f.multi = length == mysql.MaxPacketSize
	if !command || length < 2 || length > maxFilteredPacket {
		f.pending, f.remaining = f.hdr[:], length
		return nil
	}
	var first [1]byte
	if _, err := io.ReadFull(f.src, first[:]); err != nil {
		return err
	}
	if first[0] != mysql.ComPrepare {
		f.pending, f.remaining = append(f.hdr[:], first[0]), length-1
		return nil
	}
	query := make([]byte, length-1)
	if _, err := io.ReadFull(f.src, query); err != nil {
		return err
	}
	if q, ok := f.rewrite(string(query)); ok && len(q)+1 < mysql.MaxPacketSize {
		query = []byte(q)
		n := len(query) + 1
		f.hdr[0], f.hdr[1], f.hdr[2] = byte(n), byte(n>>8), byte(n>>16)
	}
	f.pending = append(append(append(make([]byte, 0, 5+len(query)), f.hdr[:]...), mysql.ComPrepare), query...)
	return nil
}

// rewritePrepare returns the stand-in of a COM_STMT_PREPARE text that
// needs one (standInParams), or the text with MySQL's non-reserved
// keywords backquoted where vitess fails on them (keywords.go).
func (e *Engine) rewritePrepare(query string) (string, bool) {
	if params, ok := standInParams(query); ok {
		return standIn(query, params), true
	}
	if len(keywordCandidates(query)) == 0 {
		return "", false
	}
	parse := func(q string) error {
		_, err := vtparse.Parse(q)
		return err
	}
	err := parse(query)
	if err == nil {
		return "", false
	}
	fixed, _, ok := quoteKeywords(query, err, parse)
	return fixed, ok
}

// standInParams reports whether the COM_STMT_PREPARE text query needs a
// stand-in, and with how many parameters:
//
//   - a dpsql statement, which vitess cannot parse; a malformed one gets no
//     parameters, and its prepare fails with dpsql's syntax error;
//   - EXPLAIN (or DESCRIBE) of a statement with placeholders, which vitess
//     parses but counts none of (its Walk does not enter the explained
//     statement), so that no value could be bound.
func standInParams(query string) (int, bool) {
	prep, _, ok, err := dpparse.Prepare(query)
	switch {
	case ok && err != nil:
		return 0, true
	case ok:
		return len(prep.Params), true
	}
	if _, ok := explainSynthText(query); ok {
		return 0, true // EXPLAIN CREATE SYNTHETIC TABLE takes no placeholders (explain_synth.go)
	}
	if !dpparse.StartsWith(query, explainWords...) {
		return 0, false
	}
	stmt, err := vtparse.Parse(query)
	explain, isExplain := stmt.(*ast.Explain)
	if err != nil || !isExplain {
		return 0, false
	}
	n := countParams(explain.Statement)
	return n, n != countParams(explain)
}

// countParams counts the ? placeholders in n as vitess does.
func countParams(n ast.SQLNode) int {
	count := 0
	_ = ast.Walk(func(node ast.SQLNode) (bool, error) {
		if v, ok := node.(*ast.SQLVal); ok && strings.HasPrefix(string(v.Val), ":v") {
			count++
		}
		return true, nil
	}, n)
	return count
}

// standIn is the text vitess parses for the dpsql statement text with
// params placeholders.
func standIn(text string, params int) string {
	var b strings.Builder
	b.Grow(len(standInPrefix) + 2*len(text) + 1 + 3*params)
	b.WriteString(standInPrefix)
	b.WriteString(hex.EncodeToString([]byte(text)))
	b.WriteByte('\'')
	for range params {
		b.WriteString(", ?")
	}
	return b.String()
}

// fromStandIn returns the text of a stand-in with params placeholders,
// when it is the stand-in the filter makes of that text.
func fromStandIn(query string, params int) (string, bool) {
	rest, ok := strings.CutPrefix(query, standInPrefix)
	if !ok {
		return "", false
	}
	hexText, tail, ok := strings.Cut(rest, "'")
	if !ok || tail != strings.Repeat(", ?", params) {
		return "", false
	}
	text, err := hex.DecodeString(hexText)
	if err != nil {
		return "", false
	}
	if n, ok := standInParams(string(text)); !ok || n != params {
		return "", false
	}
	return string(text), true
}

// explainWords are the words that start an EXPLAIN.
var explainWords = []string{"EXPLAIN", "DESCRIBE", "DESC"}

// prepareHandler is the server's outermost mysql.Handler: it turns the
// stand-ins of prepared dpsql statements back into the statements.
type prepareHandler struct {
	passOn
	e *Engine
}

// The wrapped handler implements the optional replication interface vitess
// looks for; keep it visible through the wrapper.
var _ mysql.BinlogReplicaHandler = (*prepareHandler)(nil)

// ComPrepare implements mysql.Handler.
func (h *prepareHandler) ComPrepare(ctx context.Context, c *mysql.Conn, query string, prepare *mysql.PrepareData) ([]*querypb.Field, error) {
	if text, ok := fromStandIn(query, int(prepare.ParamsCount)); ok {
		if _, n, ours, err := dpparse.Prepare(text); ours && err == nil && !isBlank(text[n:], ';') {
			return nil, SQLError(ErrSyntax.New("cannot prepare multiple statements"))
		}
		query = text
		prepare.PrepareStmt = text
	}
	fields, err := h.Handler.ComPrepare(ctx, c, query, prepare)
	if err == nil {
		if f, ok := h.e.explainFields(ctx, c, query); ok {
			fields = f
		}
	}
	return fields, err
}

// explainFields returns the columns of a prepared EXPLAIN of a SELECT on a
// synthetic table, which its executions return as the text EXPLAIN does
// (routePrepared): go-mysql-server's prepare response would give those of
// its own EXPLAIN.
func (e *Engine) explainFields(ctx context.Context, c *mysql.Conn, query string) ([]*querypb.Field, bool) {
	if !dpparse.StartsWith(query, explainWords...) || e.dp.cat == nil || e.answers == nil || e.srv == nil {
		return nil, false
	}
	sctx, err := e.srv.SessionManager().NewContextWithQuery(ctx, c, query)
	if err != nil {
		return nil, false
	}
	stmt, err := ast.ParseWithOptions(sctx, query, sql.LoadSqlMode(sctx).ParserOptions())
	if err != nil {
		return nil, false
	}
	sel := syntheticExplain(stmt)
	if sel == nil {
		return nil, false
	}
	if _, _, syn := e.syntheticFrom(sctx, sel); syn == nil {
		return nil, false
	}
	return schemaFields(sctx, explainSchema), true
}

// schemaFields describes the columns of sch as go-mysql-server's handler
// does in its responses.
func schemaFields(ctx *sql.Context, sch sql.Schema) []*querypb.Field {
	fields := make([]*querypb.Field, len(sch))
	for i, c := range sch {
		charset := uint32(sql.Collation_Default.CharacterSet())
		if ct, ok := c.Type.(sql.TypeWithCollation); ok {
			charset = uint32(ct.Collation().CharacterSet())
		}
		if cs := ctx.GetCharacterSetResults(); types.IsBinaryType(c.Type) {
			charset = uint32(sql.Collation_binary)
		} else if cs != sql.CharacterSet_Unspecified {
			charset = uint32(cs)
		}
		var flags querypb.MySqlFlag
		if !c.Nullable {
			flags |= querypb.MySqlFlag_NOT_NULL_FLAG
		}
		fields[i] = &querypb.Field{
			Name: c.Name, OrgName: c.Name, Table: c.Source, OrgTable: c.Source, Database: c.DatabaseSource,
			Type: c.Type.Type(), Charset: charset, ColumnLength: c.Type.MaxTextResponseByteLength(ctx), Flags: uint32(flags),
		}
	}
	return fields
}

// ComQuery implements mysql.Handler.
func (h *prepareHandler) ComQuery(ctx context.Context, c *mysql.Conn, query string, callback mysql.ResultSpoolFn) error {
	return h.Handler.ComQuery(ctx, c, query, wellFormedInfo(callback))
}

// ComMultiQuery implements mysql.Handler.
func (h *prepareHandler) ComMultiQuery(ctx context.Context, c *mysql.Conn, query string, callback mysql.ResultSpoolFn) (string, error) {
	return h.Handler.ComMultiQuery(ctx, c, query, wellFormedInfo(callback))
}

// minInfo is the shortest OK-packet info a client tracking session state
// can read from vitess (see wellFormedInfo).
const minInfo = '#'

// wellFormedInfo drops the info of OK packets that clients would reject.
// vitess writes an OK packet's info after a '#' byte, which a client with
// CLIENT_SESSION_TRACK (the mariadb and mysql command-line clients) reads
// as the info's length, 35: a shorter info, such as SQL PREPARE's
// "Statement prepared", is then "ERROR 2027 (HY000): Received malformed
// packet". Longer ones (UPDATE's "Rows matched: …") are read truncated, as
// before.
func wellFormedInfo(callback mysql.ResultSpoolFn) mysql.ResultSpoolFn {
	return func(res *sqltypes.Result, more bool) error {
		if res != nil && len(res.Fields) == 0 && res.Info != "" && len(res.Info) < minInfo {
			r := *res
			r.Info = ""
			res = &r
		}
		return callback(res, more)
	}
}

// handlerWrapper wraps go-mysql-server's handler: disconnects cancel
// commands (disconnect.go), prepared executions may be routed to models
// (answer_route.go), and prepared dpsql statements get their text back.
func (e *Engine) handlerWrapper(h mysql.Handler) (mysql.Handler, error) {
	h, err := watchDisconnects(e.log, e.routePrepared)(h)
	if err != nil {
		return nil, err
	}
	return &prepareHandler{passOn: passOn{h}, e: e}, nil
}
