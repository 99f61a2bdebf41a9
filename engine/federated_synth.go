package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/dolthub/go-mysql-server/sql"

	"github.com/dpsql/dpsql/federated"
	"github.com/dpsql/dpsql/synth"
)

// Synthesis from a FEDERATED table.
//
// Phase 1 of CREATE SYNTHETIC TABLE ends, for a federated source, by
// connecting and opening a snapshot: one read-only transaction in which
// every marginal is one remote GROUP BY (openRemoteData). Nothing has been
// charged yet, so a source that cannot be reached costs nothing. After the
// reservation the mechanism reads the snapshot through the per-synthesis
// cache (synth.NewCache), so each marginal is fetched once; the process
// list shows "reading the source" while a fetch runs (remoteProgress). The
// charge is kept from the first data query on (the snapshot is touched):
// a failure after it leaves the charge spent, before it refunds it, and
// the ledger note says which. Remote errors reach the client through
// federated.Redact. Mechanisms that need the records themselves
// (synth.RecordMechanism) are refused in phase 1.

// needsRecords returns why the mechanism needs the records, or "".
func needsRecords(m synth.Mechanism, run synth.Runner) string {
	for _, x := range []any{m, run} {
		if rm, ok := x.(synth.RecordMechanism); ok {
			if why := rm.NeedsRecords(); why != "" {
				return why
			}
		}
	}
	return ""
}

// remoteData is the open source and snapshot of one synthesis.
type remoteData struct {
	log  *slog.Logger
	conn *federated.Conn
	src  remoteSource
	snap remoteSnapshot
}

// openRemoteData connects to r's federated source and opens its snapshot
// over r's domain. No data query is sent.
func (e *Engine) openRemoteData(ctx *sql.Context, r *synthRequest) (*remoteData, error) {
	table := r.src.String()
	conn, err := federated.ParseConnection(r.src.Table.Connection())
	if err != nil {
		return nil, ErrFederatedConnection.New("the stored connection of %s is invalid; nothing was charged", table)
	}
	cctx, cancel := context.WithTimeout(ctx, remoteConnectTimeout)
	defer cancel()
	src, err := e.remote(cctx, conn)
	if err != nil {
		e.log.Warn("federated source unreachable", "table", table, "source", sourceName(conn), "err", remoteDetail(conn, err))
		return nil, remoteError(ctx, table, conn, "cannot connect to the source "+sourceName(conn)+" (nothing was charged)", err, false)
	}
	cols := make([]federated.SnapshotColumn, len(r.dom.Columns))
	for i := range r.dom.Columns {
		cols[i] = federated.SnapshotColumn{Name: r.dom.Columns[i].Name(), Domain: &r.dom.Columns[i]}
	}
	// The snapshot's transaction lives as long as the statement: its
	// context is the statement's, so KILL QUERY ends it.
	snap, err := src.Snapshot(ctx, cols)
	if err != nil {
		src.Close()
		e.log.Warn("federated snapshot failed", "table", table, "source", sourceName(conn), "err", remoteDetail(conn, err))
		return nil, remoteError(ctx, table, conn, "cannot open a snapshot of the source "+sourceName(conn)+" (nothing was charged)", err, false)
	}
	d := &remoteData{log: e.log, conn: conn, src: src, snap: snap}
	want, err := pgmDomain(r.dom)
	if err == nil && !want.Equal(snap.Domain()) {
		err = fmt.Errorf("the snapshot's domain differs from the declared domain of %s", table)
	}
	if err != nil {
		d.Close()
		return nil, ErrInternal.Wrap(err, "federated source of %s (nothing was charged)", table)
	}
	return d, nil
}

// Close ends the snapshot and the connection.
func (d *remoteData) Close() error {
	return errors.Join(d.snap.Close(), d.src.Close())
}

// summary describes the remote reads, for the ledger note.
func (d *remoteData) summary() string {
	st := d.snap.Stats()
	return fmt.Sprintf("read from the federated source %s: %d remote queries (%d scans), %s in remote queries",
		sourceName(d.conn), st.Queries, st.Scans, st.RemoteTime.Round(time.Millisecond))
}

// failure is the ledger reason of a synthesis that failed in step what.
func (d *remoteData) failure(what string) string {
	if d.snap.Touched() {
		return what + " after data was read from the federated source: the charge is kept (" + d.summary() + ")"
	}
	return what + " before any data was read from the federated source: nothing is charged"
}

// error returns the client's error for a failed run: a failure of the
// source is redacted (the remote text may quote data).
func (d *remoteData) error(ctx context.Context, err error) error {
	var se *sourceError
	if ctx.Err() != nil || !errors.As(err, &se) {
		return err
	}
	d.log.Warn("federated source failed during a synthesis", "source", sourceName(d.conn), "err", remoteDetail(d.conn, se.err))
	return ErrFederatedSource.New("reading the source %s failed: %v", sourceName(d.conn), federated.Redact(se.err))
}

// sourceError marks an error of the federated source, as opposed to one
// of the mechanism.
type sourceError struct{ err error }

func (e *sourceError) Error() string { return e.err.Error() }
func (e *sourceError) Unwrap() error { return e.err }

// remoteProgress is the snapshot as the mechanism reads it (under the
// cache): while a fetch runs, the process list says "reading the source".
type remoteProgress struct {
	synth.Data
	prog *synthProgress
}

// Marginals implements synth.Data.
func (p *remoteProgress) Marginals(ctx context.Context, sets [][]int) ([][]float64, error) {
	defer p.prog.reading(len(sets))()
	out, err := p.Data.Marginals(ctx, sets)
	if err != nil {
		return nil, &sourceError{err}
	}
	return out, nil
}

// VisitMarginals implements synth.MarginalVisitor, so that the cache above
// compacts each marginal as the snapshot's scans complete it (a snapshot
// that cannot visit is read whole, then handed over: synth.Visit).
func (p *remoteProgress) VisitMarginals(ctx context.Context, sets [][]int, fn func(i int, x []float64) error) error {
	defer p.prog.reading(len(sets))()
	var fnErr error // an error of fn, not of the source
	err := synth.Visit(ctx, p.Data, sets, func(i int, x []float64) error {
		fnErr = fn(i, x)
		return fnErr
	})
	if err != nil && (fnErr == nil || !errors.Is(err, fnErr)) {
		return &sourceError{err}
	}
	return err
}
