package federated

import (
	"cmp"
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
	"github.com/jackc/pgx/v5/pgconn"

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

// DefaultCoverCells and DefaultParallel configure the temp-table path of
// PostgreSQL snapshots (pgCovered). Measured on the 14-attribute adult-like
// table (internal/adultgen), 1 000 000 rows, on a loaded 2-core machine:
// one plain GROUP BY over the encoded codes table takes 0.25-0.3 s for a
// 3-way marginal and 0.5-1 s for a 4-5-way one with up to 10^6 groups,
// while GROUPING SETS cost 0.7-1.6 s per set (PostgreSQL sorts or hashes
// every set separately) on top of re-encoding every row per scan (about
// 4.5 s). Fetching supersets of at most 2^18 cells and projecting them
// locally answers the 364 3-way marginals with 131 plain GROUP BYs; two
// connections in the same snapshot halve the wall time. Re-measured with
// sorted codes tables (chooseLeads) in backend CPU for all 364: 2^18 cells
// 40.0-42.1 s (131 GROUP BYs, 7.6 million result rows), 2^20 44.7 s (99,
// 12.0 million), 2^22 37.2-41.8 s (80, 13.9 million rows to decode, and
// at 10 million source rows up to 4 million groups a query): 2^18 stays,
// as the cap on a fetch set's hot cells (coverSets); a set that contains
// a lead may have up to maxFetchCells cells. See docs/federated.md.
const (
	DefaultCoverCells = 1 << 18
	DefaultParallel   = 2
)

// maxFetchCells caps the cells of a fetch set that contains a lead (whose
// hot cells are a fraction of its cells, see coverSets): the most result
// rows one GROUP BY may send, and the most groups its hash table holds.
// Every GROUP BY costs PostgreSQL 0.1-0.3 µs per source row plus about
// 1 µs per result row (hash entry, output, decoding). Larger lead sets
// (2^22: 95 queries instead of 133 for adult's 364 3-way marginals) were
// level at 1 and 3 million rows and 7 % cheaper at 10 million on the
// loaded machine, but on the idle machine at 10 million rows the
// synthesis took 234 s against 175 s with 2^18 (7m23s against 5m29s in
// remote queries: two backends with hash tables of millions of groups
// each contend for memory bandwidth), so the cap equals DefaultCoverCells.
// See docs/federated.md.
const maxFetchCells = DefaultCoverCells

// TempBuffers is the temp_buffers of a PostgreSQL snapshot's sessions:
// the most memory of the remote server each one's codes table may hold
// (56 bytes a row for 14 attributes: 57 MB at 1 million rows).
const TempBuffers = "1GB"

// maxGrouping is the most arguments PostgreSQL's GROUPING() takes.
const maxGrouping = 31

// Snapshot answers count marginals of the remote table, each pushed down as
// a GROUP BY, all inside one consistent snapshot (one transaction, or
// several sharing an exported PostgreSQL snapshot), so that they are
// mutually consistent. It implements synth.Data. It is safe for concurrent
// use (one Marginals call runs at a time).
type Snapshot struct {
	src  *Source
	cols []column
	dom  *pgm.Domain

	mu       sync.Mutex
	batch    int
	parallel int
	// cover is the hot-cell cap of the fetch sets of the temp-table path
	// (pgCovered); noTemp means that path is unavailable (the remote user
	// may not create temporary tables) and batches of GROUPING SETS run
	// on the table itself.
	cover   float64
	noTemp  bool
	coded   map[*pgx.Conn]int // connections whose codes table exists: its lead (see chooseLeads)
	pg      *pgx.Conn
	snapID  string      // pg_export_snapshot() of pg's transaction
	extra   []*pgx.Conn // more connections in the same snapshot (SetParallel)
	my      *sql.Conn
	myID    int64
	touched bool
	broken  error
	closed  bool

	statsMu sync.Mutex // guards stats; batches may run on several connections
	stats   Stats
}

// Snapshot compiles the encoding of every column (refusing unsupported
// pairs of remote type and domain before any data is read) and begins a
// consistent transaction on a dedicated connection: PostgreSQL REPEATABLE
// READ (read-only once the codes table exists, see buildCodes);
// MySQL/MariaDB START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY at
// REPEATABLE READ.
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
	sn := &Snapshot{src: s, batch: DefaultBatch, parallel: DefaultParallel, cover: DefaultCoverCells,
		cols: make([]column, len(cols)), coded: map[*pgx.Conn]int{}}
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

// SetCoverCells sets the cap on the hot cells of the fetch sets of the
// temp-table path (cells >= 1; 1 fetches every marginal by itself; see
// coverSets).
func (sn *Snapshot) SetCoverCells(cells float64) {
	sn.mu.Lock()
	defer sn.mu.Unlock()
	sn.cover = max(cells, 1)
}

// SetTempTable enables or disables the temp-table path (on by default for
// PostgreSQL; it falls back by itself when the user may not create
// temporary tables).
func (sn *Snapshot) SetTempTable(on bool) {
	sn.mu.Lock()
	defer sn.mu.Unlock()
	sn.noTemp = !on
}

// pgBegin begins conn's REPEATABLE READ transaction, in the exported
// snapshot snapID if it is not empty. It is read-write only so that the
// temp-table path can create its session-private codes table; ensureCodes
// makes it read-only right after (or at once when that path is off).
func pgBegin(ctx context.Context, conn *pgx.Conn, snapID string) error {
	// temp_buffers holds the codes table in the session's memory (a scan
	// of a table beyond them reads every page back from the file system,
	// about a tenth more backend CPU per GROUP BY at 1 million rows). It
	// must be set before the session's first use of a temporary table,
	// and it is a cap: the buffers are allocated as the table grows.
	stmts := []string{"SET temp_buffers = '" + TempBuffers + "'", "BEGIN ISOLATION LEVEL REPEATABLE READ"}
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
		err = pgBegin(ctx, conn, sn.snapID)
		if err == nil && sn.noTemp {
			_, err = conn.Exec(ctx, readOnly)
		}
		if err != nil {
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
	out := make([][]float64, len(sets))
	if err := sn.VisitMarginals(ctx, sets, func(i int, x []float64) error {
		out[i] = x
		return nil
	}); err != nil {
		return nil, err
	}
	return out, nil
}

// VisitMarginals implements synth.MarginalVisitor: it answers sets as
// Marginals does, but hands each marginal to fn as soon as the scan that
// computes it has ended, so that only the marginals of the scans in flight
// are held densely (a synthesis's whole workload, densely, is hundreds of
// megabytes on a wide domain, whatever the row count). fn is called once
// per set, from one goroutine at a time, and owns x; an error from fn
// stops the scans and is returned.
func (sn *Snapshot) VisitMarginals(ctx context.Context, sets [][]int, fn func(i int, x []float64) error) error {
	sn.mu.Lock()
	defer sn.mu.Unlock()
	switch {
	case sn.closed:
		return fmt.Errorf("federated: snapshot is closed")
	case sn.broken != nil:
		return fmt.Errorf("federated: snapshot unusable after an earlier failure: %w", sn.broken)
	}
	// out[i] is allocated when the scan that computes set i starts, and
	// dropped when it has been handed over.
	out := make([][]float64, len(sets))
	type group struct {
		attrs []int // sorted
		want  []int // indexes into sets
	}
	var groups []*group
	byKey := map[string]*group{}
	for i, s := range sets {
		if err := checkSet(sn.dom, s); err != nil {
			return err
		}
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
		return err
	}
	// Groups are disjoint in out and each is written by one scan, so
	// scans running at once need no lock to add; handing over does (fn
	// runs on one goroutine at a time). begin allocates a group's
	// marginals when its scan starts (all zeros if no row comes back),
	// not in the per-row paths.
	begin := func(g *group) {
		for _, w := range g.want {
			if out[w] == nil {
				out[w] = make([]float64, sn.dom.Cells(sets[w]))
			}
		}
	}
	var (
		fnMu  sync.Mutex
		fnErr error // fn's error: fn is not called again
	)
	done := func(g *group) error {
		fnMu.Lock()
		defer fnMu.Unlock()
		for _, w := range g.want {
			if fnErr != nil {
				return fnErr
			}
			x := out[w]
			out[w] = nil
			fnErr = fn(w, x)
		}
		return fnErr
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
	if sn.pg != nil && !sn.noTemp {
		gs := make([][]int, len(groups))
		for i, g := range groups {
			gs[i] = g.attrs
		}
		var fellBack bool
		fellBack, err = sn.pgCovered(ctx, gs, func(g int) { begin(groups[g]) }, func(g int, codes []int32, n float64) {
			for _, w := range groups[g].want {
				idx := 0
				for _, a := range sets[w] {
					idx = idx*sn.dom.Size(a) + int(codes[a])
				}
				out[w][idx] += n
			}
		}, func(g int) error { return done(groups[g]) })
		if err != nil {
			sn.broken = err
			return err
		}
		if !fellBack {
			return nil
		}
	}
	switch {
	case sn.pg != nil:
		// This path writes nothing: make sure the transaction says so.
		if _, err := sn.pg.Exec(ctx, readOnly); err != nil {
			sn.broken = sn.src.queryError(ctx, "marginal query", err)
			return sn.broken
		}
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
			for _, g := range b.groups {
				begin(g)
			}
			errs[k] = sn.pgBatch(bctx, conn, b.attrs, bsets, func(set int, codes map[int]int, n float64) error {
				return add(b.groups[set], codes, n)
			})
			for _, g := range b.groups {
				if errs[k] != nil {
					break
				}
				errs[k] = done(g)
			}
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
			begin(g)
			if err = sn.myGroup(ctx, g.attrs, func(codes map[int]int, n float64) error {
				return add(g, codes, n)
			}); err != nil {
				break
			}
			if err = done(g); err != nil {
				break
			}
		}
	}
	if err != nil {
		sn.broken = err
		return err
	}
	return nil
}

// coverSets groups sets (sorted attribute lists) into fetch sets, best
// fit first: every set joins the fetch set whose union with it has the
// fewest hot cells within the caps, largest sets first. It returns the
// fetch sets and, for every set, its fetch set.
//
// The hot cells of a fetch set are the groups its GROUP BY keeps in use at
// a time (hotCells): all its cells, or, when it contains a lead (the
// attribute a connection's codes table is sorted by), its cells divided by
// the lead's size, since the rows then arrive one lead value at a time.
// maxHot caps the hot cells (the hash table's working set: the CPU
// caches), maxCells the cells (the result rows to send and decode). A set
// beyond the caps by itself is its own fetch set.
func coverSets(dom *pgm.Domain, sets [][]int, maxHot, maxCells float64, leads []int) (fetch [][]int, of []int) {
	cells := func(s []int) float64 {
		c := 1.0
		for _, a := range s {
			c *= float64(dom.Size(a))
		}
		return c
	}
	order := make([]int, len(sets))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(i, j int) int { return cmp.Compare(cells(sets[j]), cells(sets[i])) })
	of = make([]int, len(sets))
	for _, i := range order {
		best, bestHot := -1, 0.0
		for f, fs := range fetch {
			u := union(fs, sets[i])
			if h := hotCells(dom, u, leads); h <= maxHot && cells(u) <= maxCells && (best < 0 || h < bestHot) {
				best, bestHot = f, h
			}
		}
		if best < 0 {
			best = len(fetch)
			fetch = append(fetch, slices.Clone(sets[i]))
		} else {
			fetch[best] = union(fetch[best], sets[i])
		}
		of[i] = best
	}
	return dissolve(dom, sets, fetch, of, maxHot, maxCells, leads)
}

// dissolve improves a cover: it removes every fetch set whose sets all
// fit into the other fetch sets (each joining the one whose union with it
// has the fewest hot cells, within the caps), smallest fetch sets first,
// until none can be removed. Every removal saves a scan of the table.
func dissolve(dom *pgm.Domain, sets [][]int, fetch [][]int, of []int, maxHot, maxCells float64, leads []int) ([][]int, []int) {
	for changed := true; changed; {
		changed = false
		order := make([]int, len(fetch))
		for i := range order {
			order[i] = i
		}
		slices.SortStableFunc(order, func(i, j int) int {
			return cmp.Compare(dom.Cells(fetch[i]), dom.Cells(fetch[j]))
		})
		for _, f := range order {
			if fetch[f] == nil {
				continue
			}
			trial := slices.Clone(fetch)
			trial[f] = nil
			moved := map[int]int{}
			ok := true
			for i, fi := range of {
				if fi != f {
					continue
				}
				best, bestHot := -1, 0.0
				for g, gs := range trial {
					if gs == nil {
						continue
					}
					u := union(gs, sets[i])
					if h := hotCells(dom, u, leads); h <= maxHot && float64(dom.Cells(u)) <= maxCells && (best < 0 || h < bestHot) {
						best, bestHot = g, h
					}
				}
				if best < 0 {
					ok = false
					break
				}
				trial[best] = union(trial[best], sets[i])
				moved[i] = best
			}
			if !ok {
				continue
			}
			fetch = trial
			for i, g := range moved {
				of[i] = g
			}
			changed = true
		}
	}
	// Compact the removed fetch sets away.
	index := make([]int, len(fetch))
	var out [][]int
	for f, fs := range fetch {
		index[f] = len(out)
		if fs != nil {
			out = append(out, fs)
		}
	}
	for i := range of {
		of[i] = index[of[i]]
	}
	return out, of
}

// hotCells is the number of groups a GROUP BY over fetch set f keeps in
// use at a time on the connection that serves it: the cells of f divided
// by the size of the largest lead f contains (see coverSets).
func hotCells(dom *pgm.Domain, f []int, leads []int) float64 {
	c := float64(dom.Cells(f))
	div := 1.0
	for _, l := range leads {
		if l >= 0 && slices.Contains(f, l) {
			div = max(div, float64(dom.Size(l)))
		}
	}
	return c / div
}

// codesTable is the session-private table of encoded codes (pgCovered).
const codesTable = "pg_temp.dpsql_codes"

// buildCodes creates conn's codes table: every row of the source, read in
// the snapshot, encoded into one small integer per attribute. The encoding
// is then computed once per connection instead of once per query, and
// every marginal is a plain GROUP BY over narrow rows. The table is
// temporary (session-private, dropped at the end of the transaction): the
// codes never leave the source database. A user without the TEMP privilege
// gets errNoTemp (the transaction is rolled back to before the attempt).
// On success the transaction is read-only from then on.
func (sn *Snapshot) buildCodes(ctx context.Context, conn *pgx.Conn, lead int) error {
	q := sn.codesQuery(lead)
	if _, err := conn.Exec(ctx, "SAVEPOINT dpsql_codes"); err != nil {
		return sn.src.queryError(ctx, "marginal query", err)
	}
	start := time.Now()
	_, err := conn.Exec(ctx, q)
	sn.statsMu.Lock()
	sn.stats.Queries++
	sn.stats.Scans++
	sn.stats.RemoteTime += time.Since(start)
	sn.statsMu.Unlock()
	if err != nil {
		var pe *pgconn.PgError
		if ctx.Err() == nil && errors.As(err, &pe) && pe.Code == "42501" { // insufficient_privilege
			if _, rerr := conn.Exec(ctx, "ROLLBACK TO SAVEPOINT dpsql_codes"); rerr == nil {
				return errNoTemp
			}
		}
		return sn.src.queryError(ctx, "marginal query", err)
	}
	// ANALYZE gives the planner the codes' statistics, so that it hashes
	// rather than sorts; then nothing may write any more. JIT, which
	// made the build a tenth cheaper at 1 million rows (2.3 s of backend
	// CPU instead of 2.6 s), is off for the GROUP BYs: they reach
	// jit_above_cost from about 4 million rows on, where compiling every
	// one of them (with inlining and optimisation beyond
	// jit_optimize_above_cost) can cost more than it saves on a hash
	// aggregate of narrow rows.
	for _, q := range []string{"ANALYZE " + codesTable, "RELEASE SAVEPOINT dpsql_codes", readOnly, "SET LOCAL jit = off"} {
		if _, err := conn.Exec(ctx, q); err != nil {
			return sn.src.queryError(ctx, "marginal query", err)
		}
	}
	return nil
}

// codesQuery is the CREATE TABLE AS of the codes table, in three layers
// (OFFSET 0 keeps PostgreSQL from inlining a layer into every use of its
// outputs): s1 converts each column once, s2 estimates the bin of each
// binned one once (binLayer), and the outer list computes the codes.
func (sn *Snapshot) codesQuery(lead int) string {
	conv := make([]string, len(sn.cols))
	mid := make([]string, 0, len(sn.cols))
	codes := make([]string, len(sn.cols))
	for a := range sn.cols {
		c := &sn.cols[a]
		typ := "int2"
		if c.size > 32767 {
			typ = "int4"
		}
		v := "v" + strconv.Itoa(a)
		conv[a] = fmt.Sprintf("%s AS %s", c.conv, v)
		if f, est, ok := c.binLayer(v); ok {
			mid = append(mid, fmt.Sprintf("%s AS f%d, %s AS b%d", f, a, est, a))
			codes[a] = fmt.Sprintf("(%s)::%s AS a%d", c.codeWith(Postgres, "f"+strconv.Itoa(a), "b"+strconv.Itoa(a)), typ, a)
			continue
		}
		mid = append(mid, v)
		codes[a] = fmt.Sprintf("(%s)::%s AS a%d", c.code(Postgres, v), typ, a)
	}
	order := ""
	if lead >= 0 {
		order = " ORDER BY a" + strconv.Itoa(lead)
	}
	return fmt.Sprintf("CREATE TEMP TABLE dpsql_codes ON COMMIT DROP AS SELECT %s FROM (SELECT %s FROM (SELECT %s FROM %s OFFSET 0) s1 OFFSET 0) s2%s",
		strings.Join(codes, ", "), strings.Join(mid, ", "), strings.Join(conv, ", "), sn.src.tableRef(), order)
}

// chooseLeads returns, for each connection, the attribute its codes table
// is sorted by (its lead; -1: none), keeping those of the tables that
// exist. A GROUP BY that contains the lead reads the rows one lead value
// at a time, so its hash table's working set is a fraction of the
// groups and stays in the CPU caches. Each missing lead is, in turn, the
// attribute of the most fetch cells (a proxy for hash table sizes) among
// the fetch sets that contain no lead yet. Domain sizes only: the plan
// does not depend on the data.
func (sn *Snapshot) chooseLeads(conns []*pgx.Conn, fetch [][]int) []int {
	leads := make([]int, len(conns))
	for i, c := range conns {
		lead, ok := sn.coded[c]
		if !ok {
			lead = -2 // to choose
		}
		leads[i] = lead
	}
	for i := range leads {
		if leads[i] != -2 {
			continue
		}
		weight := make([]float64, sn.dom.Len())
	sets:
		for _, f := range fetch {
			for _, l := range leads {
				if l >= 0 && slices.Contains(f, l) {
					continue sets
				}
			}
			for _, a := range f {
				weight[a] += float64(sn.dom.Cells(f))
			}
		}
		leads[i] = -1
		for a, w := range weight {
			if w > 0 && (leads[i] < 0 || w > weight[leads[i]]) {
				leads[i] = a
			}
		}
	}
	return leads
}

// queues hands out fetch sets to the workers (one per connection): each
// first takes those that contain its lead (a set with several leads goes
// to the largest lead's), largest first, then those
// that contain no lead, then steals the smallest left of another's.
type queues struct {
	mu  sync.Mutex
	own [][]int // per worker, then the shared queue last
}

func newQueues(dom *pgm.Domain, fetch [][]int, leads []int) *queues {
	q := &queues{own: make([][]int, len(leads)+1)}
	load := make([]float64, len(leads))
	order := make([]int, len(fetch))
	for i := range order {
		order[i] = i
	}
	cells := func(k int) float64 { return float64(dom.Cells(fetch[k])) }
	slices.SortStableFunc(order, func(i, j int) int { return cmp.Compare(cells(j), cells(i)) })
	for _, k := range order {
		// The worker whose lead divides the set's hot cells the most (as
		// coverSets assumed), the least loaded of those; the load is the
		// number of scans, which dominate since leads allow large sets.
		w := len(leads) // shared
		for i, l := range leads {
			if l < 0 || !slices.Contains(fetch[k], l) {
				continue
			}
			if w == len(leads) || dom.Size(l) > dom.Size(leads[w]) || dom.Size(l) == dom.Size(leads[w]) && load[i] < load[w] {
				w = i
			}
		}
		if w < len(leads) {
			load[w]++
		}
		q.own[w] = append(q.own[w], k)
	}
	return q
}

// next returns worker w's next fetch set, or -1 when none is left.
func (q *queues) next(w int) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, i := range []int{w, len(q.own) - 1} {
		if len(q.own[i]) > 0 {
			k := q.own[i][0]
			q.own[i] = q.own[i][1:]
			return k
		}
	}
	longest := -1
	for i := range len(q.own) - 1 {
		if len(q.own[i]) > 0 && (longest < 0 || len(q.own[i]) > len(q.own[longest])) {
			longest = i
		}
	}
	if longest < 0 {
		return -1
	}
	k := q.own[longest][len(q.own[longest])-1]
	q.own[longest] = q.own[longest][:len(q.own[longest])-1]
	return k
}

// readOnly makes the rest of a PostgreSQL transaction read-only.
const readOnly = "SET LOCAL transaction_read_only = on"

// errNoTemp says the remote user may not create temporary tables.
var errNoTemp = errors.New("federated: no TEMP privilege")

// pgCovered answers the marginals over sets (sorted attribute lists) from
// the codes table: one plain GROUP BY per fetch set (coverSets), spread
// over the snapshot's connections: begin(set) for each set a fetch set
// covers before its scan, every result row added into each of them by
// fn(set, codes by attribute, count), done(set) after. fellBack reports that
// the codes table could not be created; the caller then uses batches of
// GROUPING SETS on the source table.
func (sn *Snapshot) pgCovered(ctx context.Context, sets [][]int, begin func(set int), fn func(set int, codes []int32, n float64), done func(set int) error) (fellBack bool, err error) {
	// The leads come from the plain cover (the attributes of its largest
	// hash tables), the fetch sets from the cover that knows them.
	plain, _ := coverSets(sn.dom, sets, sn.cover, sn.cover, nil)
	conns, err := sn.workers(ctx, len(plain))
	if err != nil {
		return false, err
	}
	sn.touched = true
	leads := sn.chooseLeads(conns, plain)
	fetch, of := coverSets(sn.dom, sets, sn.cover, max(sn.cover, maxFetchCells), leads)
	covered := make([][]int, len(fetch))
	for i, f := range of {
		covered[f] = append(covered[f], i)
	}
	// The missing codes tables are built at once, one per connection (a
	// build is a scan of the source, most of a connection's first tenth
	// of the run; one after the other, the second connection would start
	// its queries a build late). Without the TEMP privilege nothing else
	// is tried.
	if fellBack, err := sn.buildAll(ctx, conns, leads); err != nil || fellBack {
		return fellBack, err
	}
	// Every worker owns one connection.
	q := newQueues(sn.dom, fetch, leads)
	bctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, len(fetch))
	perr := par.For(bctx, len(conns), len(conns), func(w int) {
		for bctx.Err() == nil {
			k := q.next(w)
			if k < 0 {
				return
			}
			for _, s := range covered[k] {
				begin(s)
			}
			errs[k] = sn.pgGroup(bctx, conns[w], fetch[k], covered[k], fn)
			for _, s := range covered[k] {
				if errs[k] != nil {
					break
				}
				errs[k] = done(s)
			}
			if errs[k] != nil {
				cancel()
				return
			}
		}
	})
	if err = errors.Join(errs...); err == nil && perr != nil {
		err = perr
	}
	switch {
	case err == nil:
		return false, nil
	case ctx.Err() != nil:
		return false, sn.src.newError("marginal query", ErrQuery, ctx.Err())
	}
	// The first failure; the others are its cancellations.
	for _, e := range errs {
		if e != nil && !errors.Is(e, context.Canceled) {
			return false, e
		}
	}
	return false, err
}

// buildAll builds the codes table of every connection that has none,
// all at once, each sorted by its lead. fellBack reports that the remote
// user may not create temporary tables: the snapshot then answers by
// GROUPING SETS (noTemp), every transaction read-only.
func (sn *Snapshot) buildAll(ctx context.Context, conns []*pgx.Conn, leads []int) (fellBack bool, err error) {
	var todo []int
	for w, c := range conns {
		if _, ok := sn.coded[c]; !ok {
			todo = append(todo, w)
		}
	}
	bctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make([]error, len(todo))
	perr := par.For(bctx, len(todo), len(todo), func(k int) {
		// A missing privilege is the same on every connection: no need to
		// stop the others' builds, each rolls back by itself.
		if errs[k] = sn.buildCodes(bctx, conns[todo[k]], leads[todo[k]]); errs[k] != nil && !errors.Is(errs[k], errNoTemp) {
			cancel()
		}
	})
	for k, w := range todo {
		if errs[k] == nil {
			sn.coded[conns[w]] = leads[w]
		}
	}
	switch {
	case ctx.Err() != nil:
		return false, sn.src.newError("marginal query", ErrQuery, ctx.Err())
	case perr != nil:
		return false, perr
	}
	// The first failure; the others are its cancellations.
	noTemp := false
	for _, e := range errs {
		switch {
		case errors.Is(e, errNoTemp):
			noTemp = true
		case e != nil && !errors.Is(e, context.Canceled):
			return false, e
		}
	}
	if err := errors.Join(errs...); err != nil && !noTemp {
		return false, err
	}
	if !noTemp {
		return false, nil
	}
	sn.noTemp = true
	for _, c := range conns {
		if _, err := c.Exec(ctx, readOnly); err != nil {
			return false, sn.src.queryError(ctx, "marginal query", err)
		}
	}
	return true, nil
}

// pgGroup runs the GROUP BY of fetch set attrs over the codes table and
// adds every result row into the sets it covers.
func (sn *Snapshot) pgGroup(ctx context.Context, conn *pgx.Conn, attrs []int, covers []int, fn func(set int, codes []int32, n float64)) error {
	names := make([]string, len(attrs))
	for i, a := range attrs {
		names[i] = "a" + strconv.Itoa(a)
	}
	cols := strings.Join(names, ", ")
	// Each group comes back as one int8, the mixed-radix index of its
	// codes (last attribute fastest; -1 if a code is outside its domain,
	// which the encoding never produces), computed once per group: two
	// columns per result row instead of one per attribute, less to send
	// and to decode. A fetch set of 2^62 cells or more (never the
	// default cover's) comes back column by column.
	packed := sn.dom.Cells(attrs) < 1<<62 && sn.dom.Cells(attrs) > 0
	sel := cols
	if packed {
		key := "0::int8"
		ok := make([]string, len(attrs))
		for i, a := range attrs {
			key = fmt.Sprintf("(%s * %d + %s)", key, sn.dom.Size(a), names[i])
			ok[i] = fmt.Sprintf("%s BETWEEN 0 AND %d", names[i], sn.dom.Size(a)-1)
		}
		sel = fmt.Sprintf("CASE WHEN %s THEN %s ELSE -1 END", strings.Join(ok, " AND "), key)
	}
	q := fmt.Sprintf("SELECT %s, COUNT(*) FROM %s GROUP BY %s", sel, codesTable, cols)
	start := time.Now()
	var cells int64
	defer func() {
		sn.statsMu.Lock()
		sn.stats.Queries++
		sn.stats.Cells += cells
		sn.stats.RemoteTime += time.Since(start)
		sn.statsMu.Unlock()
	}()
	rows, err := conn.Query(ctx, q)
	if err != nil {
		return sn.src.queryError(ctx, "marginal query", err)
	}
	defer rows.Close()
	codes := make([]int32, sn.dom.Len())
	vals := make([]int32, len(attrs))
	var key, count int64
	ptrs := []any{&key, &count}
	if !packed {
		ptrs = make([]any, len(attrs)+1)
		for i := range attrs {
			ptrs[i] = &vals[i]
		}
		ptrs[len(attrs)] = &count
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return sn.src.queryError(ctx, "marginal query", err)
		}
		cells++
		if packed {
			if key < 0 {
				return fmt.Errorf("federated: remote code outside its domain in the marginal of %v", attrs)
			}
			for i := len(attrs) - 1; i >= 0; i-- {
				size := int64(sn.dom.Size(attrs[i]))
				vals[i] = int32(key % size)
				key /= size
			}
		}
		for i, a := range attrs {
			if vals[i] < 0 || int(vals[i]) >= sn.dom.Size(a) {
				return fmt.Errorf("federated: remote code %d of attribute %d outside [0, %d)", vals[i], a, sn.dom.Size(a))
			}
			codes[a] = vals[i]
		}
		for _, s := range covers {
			fn(s, codes, float64(count))
		}
	}
	if err := rows.Err(); err != nil {
		return sn.src.queryError(ctx, "marginal query", err)
	}
	return nil
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
