package federated

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/dpsql/dpsql/catalog/domain"
	"github.com/dpsql/dpsql/internal/par"
	"github.com/dpsql/dpsql/synth/pgm"
)

// SnapshotColumn is one attribute of a snapshot: a remote column and its
// public domain.
type SnapshotColumn struct {
	Name   string // remote column (case-insensitive)
	Domain *domain.Column
}

// Stats counts a snapshot's remote work.
type Stats struct {
	Queries    int           // data queries sent
	Scans      int           // full scans of the table they needed (one per query)
	RemoteTime time.Duration // time spent in data queries, results included
	Cells      int64         // result rows received
}

// DefaultBatch is how many marginals one PostgreSQL query computes with
// GROUPING SETS (see SetBatch). Measured on the 14-attribute adult-like
// table (internal/adultgen), all 364 3-way marginals, 100 000 rows, on a
// loaded 2-core machine: 8 per query 64 s, 32 per query 42-47 s, 91 per
// query 59-66 s, all 364 in one query 115 s (PostgreSQL then sorts the
// input once per set that does not fit its hash memory). 32, the fastest,
// keeps every set hashed (work_mem 1GB, see pgBegin). Larger batches save
// scans but not aggregation, which dominates: about 1 µs per row and set
// here.
const DefaultBatch = 32

// maxGrouping is the most arguments PostgreSQL's GROUPING() takes.
const maxGrouping = 31

// Snapshot answers count marginals of the remote table, each pushed down as
// a GROUP BY, all inside one consistent read-only transaction on one
// connection, so that they are mutually consistent. It implements
// synth.Data. It is safe for concurrent use (queries run one at a time).
type Snapshot struct {
	src  *Source
	cols []column
	dom  *pgm.Domain

	mu       sync.Mutex
	batch    int
	parallel int
	pg       *pgx.Conn
	snapID   string      // pg_export_snapshot() of pg's transaction
	extra    []*pgx.Conn // more connections in the same snapshot (SetParallel)
	my       *sql.Conn
	myID     int64
	touched  bool
	broken   error
	closed   bool

	statsMu sync.Mutex // guards stats; batches may run on several connections
	stats   Stats
}

// Snapshot compiles the encoding of every column (refusing unsupported
// pairs of remote type and domain before any data is read) and begins a
// consistent read-only transaction on a dedicated connection: PostgreSQL
// REPEATABLE READ READ ONLY; MySQL/MariaDB START TRANSACTION WITH
// CONSISTENT SNAPSHOT, READ ONLY at REPEATABLE READ.
func (s *Source) Snapshot(ctx context.Context, cols []SnapshotColumn) (*Snapshot, error) {
	if len(cols) == 0 {
		return nil, fmt.Errorf("federated: snapshot of no columns")
	}
	remote, err := s.Columns(ctx)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(cols))
	sizes := make([]int, len(cols))
	sn := &Snapshot{src: s, batch: DefaultBatch, parallel: 1, cols: make([]column, len(cols))}
	for i, c := range cols {
		if c.Domain == nil {
			return nil, fmt.Errorf("federated: column %q has no domain", c.Name)
		}
		rc, err := resolve(remote, []string{c.Name})
		if err != nil {
			return nil, fmt.Errorf("federated %s: %w", s.conn.target(), err)
		}
		sn.cols[i], err = compile(s.conn.Driver, rc[0], c.Domain)
		if err != nil {
			return nil, fmt.Errorf("federated %s: %w", s.conn.target(), err)
		}
		names[i], sizes[i] = c.Domain.Name(), c.Domain.Size()
	}
	sn.dom, err = pgm.NewDomain(names, sizes)
	if err != nil {
		return nil, fmt.Errorf("federated: synthesis domain: %w", err)
	}
	switch s.conn.Driver {
	case Postgres:
		conn, err := s.pgConnect(ctx)
		if err != nil {
			return nil, err
		}
		err = pgBegin(ctx, conn, "")
		if err == nil {
			err = conn.QueryRow(ctx, "SELECT pg_export_snapshot()").Scan(&sn.snapID)
		}
		if err != nil {
			conn.Close(context.WithoutCancel(ctx))
			return nil, s.newError("begin snapshot", ErrQuery, err)
		}
		sn.pg = conn
	case MySQL:
		conn, err := s.db.Conn(ctx)
		if err != nil {
			return nil, s.newError("connect", connectKind(err), err)
		}
		id, err := connectionID(ctx, conn)
		if err == nil {
			_, err = conn.ExecContext(ctx, "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
		}
		if err == nil {
			_, err = conn.ExecContext(ctx, "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY")
		}
		if err != nil {
			conn.Close()
			return nil, s.newError("begin snapshot", ErrQuery, err)
		}
		sn.my, sn.myID = conn, id
	}
	return sn, nil
}

// SetBatch sets how many marginals one PostgreSQL query computes with
// GROUPING SETS (n >= 1; MySQL always sends one GROUP BY per marginal).
func (sn *Snapshot) SetBatch(n int) {
	sn.mu.Lock()
	defer sn.mu.Unlock()
	sn.batch = max(n, 1)
}

// SetParallel lets PostgreSQL batches run on up to n connections at once,
// every one in the same snapshot (pg_export_snapshot / SET TRANSACTION
// SNAPSHOT), so that the marginals stay mutually consistent. MySQL has no
// shared snapshots: its queries always run one at a time.
func (sn *Snapshot) SetParallel(n int) {
	sn.mu.Lock()
	defer sn.mu.Unlock()
	sn.parallel = max(n, 1)
}

// pgBegin begins conn's read-only REPEATABLE READ transaction, in the
// exported snapshot snapID if it is not empty.
func pgBegin(ctx context.Context, conn *pgx.Conn, snapID string) error {
	stmts := []string{"BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"}
	if snapID != "" {
		stmts = append(stmts, "SET TRANSACTION SNAPSHOT '"+strings.ReplaceAll(snapID, "'", "''")+"'")
	}
	// work_mem only lets the planner hash every grouping set of a batch
	// (it estimates far more groups than the domains allow); the memory a
	// query really uses is that of the groups it finds, and PostgreSQL
	// spills to disk beyond it.
	stmts = append(stmts, "SET LOCAL work_mem = '1GB'", "SET LOCAL statement_timeout = 0")
	for _, q := range stmts {
		if _, err := conn.Exec(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// workers returns the connections batches may use: the snapshot's own
// and, for SetParallel, more that join its snapshot (opened once).
func (sn *Snapshot) workers(ctx context.Context, batches int) ([]*pgx.Conn, error) {
	want := min(sn.parallel, batches) - 1
	for len(sn.extra) < want {
		conn, err := sn.src.pgConnect(ctx)
		if err != nil {
			return nil, err
		}
		if err := pgBegin(ctx, conn, sn.snapID); err != nil {
			conn.Close(context.WithoutCancel(ctx))
			return nil, sn.src.newError("join snapshot", ErrQuery, err)
		}
		sn.extra = append(sn.extra, conn)
	}
	return append([]*pgx.Conn{sn.pg}, sn.extra[:max(want, 0)]...), nil
}

// Domain implements synth.Data: attribute i is the i-th SnapshotColumn.
func (sn *Snapshot) Domain() *pgm.Domain { return sn.dom }

// Touched reports whether a data query has been sent: from then on, a
// failure may depend on the data.
func (sn *Snapshot) Touched() bool {
	sn.mu.Lock()
	defer sn.mu.Unlock()
	return sn.touched
}

// Stats returns the remote work so far.
func (sn *Snapshot) Stats() Stats {
	sn.statsMu.Lock()
	defer sn.statsMu.Unlock()
	return sn.stats
}

// Close ends the transaction and releases the connection.
func (sn *Snapshot) Close() error {
	sn.mu.Lock()
	defer sn.mu.Unlock()
	if sn.closed {
		return nil
	}
	sn.closed = true
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	switch {
	case sn.pg != nil:
		for _, c := range sn.extra {
			_, _ = c.Exec(ctx, "ROLLBACK")
			_ = c.Close(ctx)
		}
		_, err := sn.pg.Exec(ctx, "ROLLBACK")
		if cerr := sn.pg.Close(ctx); err == nil {
			err = cerr
		}
		if err != nil && sn.broken == nil {
			return sn.src.newError("end snapshot", ErrQuery, err)
		}
	case sn.my != nil:
		_, err := sn.my.ExecContext(ctx, "ROLLBACK")
		if cerr := sn.my.Close(); err == nil {
			err = cerr
		}
		if err != nil && sn.broken == nil {
			return sn.src.newError("end snapshot", ErrQuery, err)
		}
	}
	return nil
}

// Marginals implements synth.Data: the count marginal of each set, laid out
// in the set's order with its last attribute varying fastest. Sets with the
// same attributes are computed once.
func (sn *Snapshot) Marginals(ctx context.Context, sets [][]int) ([][]float64, error) {
	sn.mu.Lock()
	defer sn.mu.Unlock()
	switch {
	case sn.closed:
		return nil, fmt.Errorf("federated: snapshot is closed")
	case sn.broken != nil:
		return nil, fmt.Errorf("federated: snapshot unusable after an earlier failure: %w", sn.broken)
	}
	out := make([][]float64, len(sets))
	type group struct {
		attrs []int // sorted
		want  []int // indexes into sets
	}
	var groups []*group
	byKey := map[string]*group{}
	for i, s := range sets {
		if err := checkSet(sn.dom, s); err != nil {
			return nil, err
		}
		out[i] = make([]float64, sn.dom.Cells(s))
		sorted := slices.Sorted(slices.Values(s))
		k := fmt.Sprint(sorted)
		g := byKey[k]
		if g == nil {
			g = &group{attrs: sorted}
			byKey[k] = g
			groups = append(groups, g)
		}
		g.want = append(g.want, i)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// add counts n into every requested layout of group g.
	add := func(g *group, codes map[int]int, n float64) error {
		for _, w := range g.want {
			idx := 0
			for _, a := range sets[w] {
				c := codes[a]
				if c < 0 || c >= sn.dom.Size(a) {
					return fmt.Errorf("federated: remote code %d of attribute %d outside [0, %d)", c, a, sn.dom.Size(a))
				}
				idx = idx*sn.dom.Size(a) + c
			}
			out[w][idx] += n
		}
		return nil
	}
	var err error
	switch {
	case sn.pg != nil:
		// Batches: up to sn.batch sets over at most maxGrouping columns.
		type batch struct {
			groups []*group
			attrs  []int
		}
		var batches []batch
		for lo := 0; lo < len(groups); {
			var b batch
			hi := lo
			for ; hi < len(groups) && len(b.groups) < sn.batch; hi++ {
				u := union(b.attrs, groups[hi].attrs)
				if len(u) > maxGrouping && len(b.groups) > 0 {
					break
				}
				b.attrs = u
				b.groups = append(b.groups, groups[hi])
			}
			lo = hi
			batches = append(batches, b)
		}
		var conns []*pgx.Conn
		conns, err = sn.workers(ctx, len(batches))
		if err != nil {
			break
		}
		sn.touched = true
		pool := make(chan *pgx.Conn, len(conns))
		for _, c := range conns {
			pool <- c
		}
		bctx, cancel := context.WithCancel(ctx)
		errs := make([]error, len(batches))
		// Batches write disjoint groups of out, so they need no lock.
		perr := par.For(bctx, len(batches), len(conns), func(k int) {
			conn := <-pool
			defer func() { pool <- conn }()
			b := batches[k]
			bsets := make([][]int, len(b.groups))
			for i, g := range b.groups {
				bsets[i] = g.attrs
			}
			errs[k] = sn.pgBatch(bctx, conn, b.attrs, bsets, func(set int, codes map[int]int, n float64) error {
				return add(b.groups[set], codes, n)
			})
			if errs[k] != nil {
				cancel()
			}
		})
		cancel()
		if err = errors.Join(errs...); err == nil && perr != nil {
			err = perr
		}
		if err != nil && ctx.Err() != nil {
			err = sn.src.newError("marginal query", ErrQuery, ctx.Err())
		} else if err != nil {
			// The first failure; the others are its cancellations.
			for _, e := range errs {
				if e != nil && !errors.Is(e, context.Canceled) {
					err = e
					break
				}
			}
		}
	case sn.my != nil:
		for _, g := range groups {
			if err = sn.myGroup(ctx, g.attrs, func(codes map[int]int, n float64) error {
				return add(g, codes, n)
			}); err != nil {
				break
			}
		}
	}
	if err != nil {
		sn.broken = err
		return nil, err
	}
	return out, nil
}

// union merges two sorted attribute lists.
func union(a, b []int) []int {
	out := slices.Concat(a, b)
	slices.Sort(out)
	return slices.Compact(out)
}

// pgBatch computes the marginals over sets (subsets of attrs) in one scan
// with GROUPING SETS. The inner derived tables convert each column, then
// compute its code, once per row (OFFSET 0 keeps PostgreSQL from inlining
// them into every use: every grouping set's hash key would recompute the
// codes); GROUPING() tells the sets apart.
func (sn *Snapshot) pgBatch(ctx context.Context, conn *pgx.Conn, attrs []int, sets [][]int, fn func(set int, codes map[int]int, n float64) error) error {
	q, setOf, pos := sn.batchQuery(attrs, sets)
	start := time.Now()
	var cells int64
	defer func() {
		sn.statsMu.Lock()
		sn.stats.Queries++
		sn.stats.Scans++
		sn.stats.Cells += cells
		sn.stats.RemoteTime += time.Since(start)
		sn.statsMu.Unlock()
	}()
	rows, err := conn.Query(ctx, q)
	if err != nil {
		return sn.src.queryError(ctx, "marginal query", err)
	}
	defer rows.Close()
	vals := make([]any, len(attrs)+2)
	ptrs := make([]any, len(vals))
	var g int32
	var count int64
	cv := make([]*int32, len(attrs))
	ptrs[0] = &g
	for i := range attrs {
		ptrs[i+1] = &cv[i]
	}
	ptrs[len(attrs)+1] = &count
	m := make(map[int]int, len(attrs))
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return sn.src.queryError(ctx, "marginal query", err)
		}
		cells++
		set, ok := setOf[uint32(g)]
		if !ok {
			return fmt.Errorf("federated: unexpected GROUPING() value %d", g)
		}
		clear(m)
		for _, a := range sets[set] {
			p := cv[pos[a]]
			if p == nil {
				return fmt.Errorf("federated: NULL code for attribute %d", a)
			}
			m[a] = int(*p)
		}
		if err := fn(set, m, float64(count)); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return sn.src.queryError(ctx, "marginal query", err)
	}
	return nil
}

// myGroup computes one marginal with a GROUP BY; cancelling ctx kills the
// query from a side connection (KILL QUERY).
func (sn *Snapshot) myGroup(ctx context.Context, attrs []int, fn func(codes map[int]int, n float64) error) error {
	sel := make([]string, len(attrs))
	ord := make([]string, len(attrs))
	for i, a := range attrs {
		c := &sn.cols[a]
		sel[i] = "CAST(" + c.code(MySQL, c.conv) + " AS SIGNED)"
		ord[i] = strconv.Itoa(i + 1)
	}
	q := fmt.Sprintf("SELECT %s, COUNT(*) FROM %s GROUP BY %s",
		strings.Join(sel, ", "), sn.src.tableRef(), strings.Join(ord, ", "))
	if err := ctx.Err(); err != nil {
		return err
	}
	start := time.Now()
	sn.touched = true
	var cells int64
	defer func() {
		sn.statsMu.Lock()
		sn.stats.Queries++
		sn.stats.Scans++
		sn.stats.Cells += cells
		sn.stats.RemoteTime += time.Since(start)
		sn.statsMu.Unlock()
	}()
	stop := sn.src.killOnCancel(ctx, sn.myID)
	defer stop()
	rows, err := sn.my.QueryContext(context.WithoutCancel(ctx), q)
	if err != nil {
		return sn.src.queryError(ctx, "marginal query", err)
	}
	defer rows.Close()
	cv := make([]int64, len(attrs))
	var count int64
	ptrs := make([]any, len(attrs)+1)
	for i := range cv {
		ptrs[i] = &cv[i]
	}
	ptrs[len(attrs)] = &count
	m := make(map[int]int, len(attrs))
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return sn.src.queryError(ctx, "marginal query", err)
		}
		cells++
		for i, a := range attrs {
			m[a] = int(cv[i])
		}
		if err := fn(m, float64(count)); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return sn.src.queryError(ctx, "marginal query", err)
	}
	if err := ctx.Err(); err != nil {
		return sn.src.newError("marginal query", ErrQuery, err)
	}
	return nil
}

// checkSet reports whether s is a non-empty list of distinct attributes.
func checkSet(dom *pgm.Domain, s []int) error {
	if len(s) == 0 {
		return errors.New("federated: marginal over no attributes")
	}
	for i, a := range s {
		if a < 0 || a >= dom.Len() {
			return fmt.Errorf("federated: attribute %d outside the domain of %d attributes", a, dom.Len())
		}
		if slices.Contains(s[:i], a) {
			return fmt.Errorf("federated: attribute %d repeated in %v", a, s)
		}
	}
	return nil
}

// batchQuery is the GROUPING SETS query over sets (subsets of attrs), with
// the set of each GROUPING() value and the position of each attribute.
func (sn *Snapshot) batchQuery(attrs []int, sets [][]int) (string, map[uint32]int, map[int]int) {
	conv := make([]string, len(attrs))
	codes := make([]string, len(attrs))
	names := make([]string, len(attrs))
	for i, a := range attrs {
		c := &sn.cols[a]
		conv[i] = fmt.Sprintf("%s AS v%d", c.conv, a)
		codes[i] = fmt.Sprintf("%s::int AS a%d", c.code(Postgres, "v"+strconv.Itoa(a)), a)
		names[i] = "a" + strconv.Itoa(a)
	}
	gs := make([]string, len(sets))
	pos := make(map[int]int, len(attrs)) // attribute → position in attrs
	for i, a := range attrs {
		pos[a] = i
	}
	setOf := map[uint32]int{} // GROUPING() bits → set
	for i, s := range sets {
		parts := make([]string, len(s))
		mask := uint32(1)<<len(attrs) - 1
		for j, a := range s {
			parts[j] = "a" + strconv.Itoa(a)
			mask &^= 1 << (len(attrs) - 1 - pos[a])
		}
		gs[i] = "(" + strings.Join(parts, ", ") + ")"
		setOf[mask] = i
	}
	var grouping string
	if len(sets) == 1 {
		grouping = "0"
	} else {
		grouping = "GROUPING(" + strings.Join(names, ", ") + ")"
	}
	q := fmt.Sprintf("SELECT %s, %s, COUNT(*) FROM (SELECT %s FROM (SELECT %s FROM %s OFFSET 0) s1 OFFSET 0) s2 GROUP BY GROUPING SETS (%s)",
		grouping, strings.Join(names, ", "), strings.Join(codes, ", "), strings.Join(conv, ", "), sn.src.tableRef(), strings.Join(gs, ", "))
	if len(sets) == 1 {
		setOf = map[uint32]int{0: 0}
	}
	return q, setOf, pos
}

// debugCodes returns, for every row, the remote value of attribute a (as
// text) and the code the pushed-down expression gives it; for tests.
func (sn *Snapshot) debugCodes(ctx context.Context, a int) ([]string, []int64, error) {
	c := &sn.cols[a]
	driver := sn.src.conn.Driver
	var q string
	if driver == Postgres {
		q = fmt.Sprintf("SELECT %s::text, (%s)::int8 FROM (SELECT %s AS v, %s FROM %s OFFSET 0) s",
			quoteIdent(driver, c.remote.Name), c.code(driver, "v"), c.conv, quoteIdent(driver, c.remote.Name), sn.src.tableRef())
	} else {
		q = fmt.Sprintf("SELECT CAST(%s AS CHAR), CAST(%s AS SIGNED) FROM %s",
			quoteIdent(driver, c.remote.Name), c.code(driver, c.conv), sn.src.tableRef())
	}
	var vals []string
	var codes []int64
	add := func(v *string, code int64) {
		s := "NULL"
		if v != nil {
			s = *v
		}
		vals, codes = append(vals, s), append(codes, code)
	}
	if driver == Postgres {
		rows, err := sn.pg.Query(ctx, q)
		if err != nil {
			return nil, nil, err
		}
		defer rows.Close()
		for rows.Next() {
			var v *string
			var code int64
			if err := rows.Scan(&v, &code); err != nil {
				return nil, nil, err
			}
			add(v, code)
		}
		return vals, codes, rows.Err()
	}
	rows, err := sn.my.QueryContext(ctx, q)
	if err != nil {
		return nil, nil, err
	}
	defer rows.Close()
	for rows.Next() {
		var v *string
		var code int64
		if err := rows.Scan(&v, &code); err != nil {
			return nil, nil, err
		}
		add(v, code)
	}
	return vals, codes, rows.Err()
}
