package engine

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/analyzer"
	"github.com/dolthub/go-mysql-server/sql/types"

	"github.com/dpsql/dpsql/catalog"
	"github.com/dpsql/dpsql/engine/dpparse"
	"github.com/dpsql/dpsql/planner"
	"github.com/dpsql/dpsql/sqlfuncs"
	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/bounds"
	"github.com/dpsql/dpsql/synth/hdmm"
	"github.com/dpsql/dpsql/synth/pgm"
)

// Answers from models (issue 5).
//
// A COUNT query on a synthetic table is answered from the table's fitted
// model rather than its rows when the session's dpsql_answer_source is
// 'model' (the default) and planner.RouteSelect accepts it: expected counts,
// without the sampling noise of the rows, at no privacy cost (the model is
// already released). The parser routes such a SELECT to a ModelAnswer node
// (answer_route.go); every other statement runs on the rows as usual.
//
// The engine keeps one synTable per synthetic table it has met, keyed by
// the table's stable ID: its record, and, once needed, its decoded model
// with a planner.ModelCache of marginals and its bounds.Analysis (SHOW ERROR
// BOUNDS, dp_marginal). A table ID is never reused and a table's synthetic
// record is written in the transaction that creates it, so an ID's entry
// never goes stale; the entries of dropped tables are evicted on the next
// lookup after a DROP or RENAME statement, or when a new synthetic table is
// met.

// answerSourceVar is the session variable that chooses where COUNT queries
// on synthetic tables are answered: 'model' or 'rows'.
const answerSourceVar = "dpsql_answer_source"

// The values of answerSourceVar.
const (
	sourceModel = "model"
	sourceRows  = "rows"
)

// maxPlainIDs bounds the set of table IDs remembered as not synthetic.
const maxPlainIDs = 1 << 16

// maxCachedTables bounds the synthetic tables (and so the decoded models)
// kept in memory; the least recently used is dropped first and decoded
// again when next used.
const maxCachedTables = 32

var registerAnswerVars sync.Once

// initAnswers sets up answering from models: the session variable, the
// per-engine caches and the dp_marginal table function served by pro.
func (e *Engine) initAnswers(pro *provider) {
	registerAnswerVars.Do(func() {
		sql.SystemVariables.AddSystemVariables([]sql.SystemVariable{&sql.MysqlSystemVariable{
			Name:    answerSourceVar,
			Scope:   sql.GetMysqlScope(sql.SystemVariableScope_Both),
			Dynamic: true,
			Type:    types.NewSystemEnumType(answerSourceVar, sourceModel, sourceRows),
			Default: sourceModel,
		}})
	})
	e.answers = &answerState{e: e, tables: map[uint64]*synTable{}, plain: map[uint64]bool{}}
	for _, b := range e.sqle.Analyzer.Batches {
		if b.Desc == "once-before" {
			b.Rules = append(b.Rules, analyzer.Rule{Id: ruleRowsNotes, Apply: e.emitRowsNotes})
		}
	}
	pro.tableFunctions = map[string]sql.TableFunction{
		sqlfuncs.MarginalName: sqlfuncs.NewMarginal(marginalSource{e}),
	}
}

// answerSource returns the session's dpsql_answer_source.
func answerSource(ctx *sql.Context) string {
	v, err := ctx.GetSessionVariable(ctx, answerSourceVar)
	if err != nil {
		return sourceModel
	}
	if s, ok := v.(string); ok && strings.EqualFold(s, sourceRows) {
		return sourceRows
	}
	return sourceModel
}

// answerState is the engine's cache of synthetic tables.
type answerState struct {
	e *Engine

	mu     sync.Mutex
	tables map[uint64]*synTable // synthetic tables with a model, by ID
	plain  map[uint64]bool      // IDs of other tables
	dirty  bool                 // a DROP or RENAME was seen: sweep tables
	clock  uint64               // ticks at every lookup, for synTable.used

	notes rowsNotes // pending notes on answers from rows (answer_notes.go)
}

// synTable is a synthetic table with a model, or an answers-only table
// with its released noisy marginals.
type synTable struct {
	cat  *catalog.Store
	id   uint64
	rec  *catalog.Synthetic
	used uint64 // answerState.clock at the last lookup; under its mu
	// total scales model answers (planner.ExecOptions.Total): the table's
	// row count when its statement gave ROWS, else 0 (the model's total).
	total float64

	modelOnce sync.Once
	model     *pgm.Model
	cache     *planner.ModelCache
	modelErr  error

	boundsOnce sync.Once
	analysis   *bounds.Analysis
	boundsErr  error

	releasedOnce sync.Once
	measured     []planner.Measured // answers-only tables
	releasedErr  error
}

// answersOnly reports whether the table holds noisy answers, not rows
// sampled from a model.
func (t *synTable) answersOnly() bool { return t.rec.Output == synth.AnswersOnly.String() }

// released returns the noisy marginals an answers-only table released, in
// workload order, read from its stored release the first time.
func (t *synTable) released(ctx context.Context) ([]planner.Measured, error) {
	t.releasedOnce.Do(func() {
		res, err := t.release(ctx)
		if err != nil {
			t.releasedErr = err
			return
		}
		// hdmm_lls's Kronecker measurements answer through their
		// least-squares marginals.
		ms, err := hdmm.LeastSquares(res.Measurements, t.rec.Domain.Sizes())
		if err != nil {
			t.releasedErr = fmt.Errorf("%s: %w", t, err)
			return
		}
		for _, m := range ms {
			if m.Query != nil || m.Coarse != nil {
				t.releasedErr = fmt.Errorf("%s: a released answer is not a plain marginal", t)
				return
			}
			t.measured = append(t.measured, planner.Measured{Attrs: m.Attrs, Y: m.Y, Sigma: m.Sigma})
		}
	})
	return t.measured, t.releasedErr
}

// release reads and decodes the table's stored release.
func (t *synTable) release(ctx context.Context) (*synth.Result, error) {
	var blob []byte
	err := t.cat.View(context.WithoutCancel(ctx), func(tx *catalog.Tx) error {
		var err error
		blob, err = tx.SyntheticRelease(t.id)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("reading the release of %s: %w", t, err)
	}
	if blob == nil {
		return nil, fmt.Errorf("%s has no stored release", t)
	}
	res, err := synth.UnmarshalRelease(blob)
	if err != nil {
		return nil, fmt.Errorf("decoding the release of %s: %w", t, err)
	}
	return res, nil
}

// invalidate makes the next lookup evict the entries of dropped tables.
func (a *answerState) invalidate() {
	a.mu.Lock()
	a.dirty = true
	a.mu.Unlock()
}

// lookup returns the synthetic table db.name if it exists and has a model
// or is answers-only, nil otherwise. It does not check access.
func (a *answerState) lookup(ctx context.Context, db, name string) (*synTable, error) {
	if err := a.sweepIfDirty(ctx); err != nil {
		return nil, err
	}
	id, ok, err := a.e.dp.cat.TableID(db, name)
	if err != nil || !ok {
		return nil, err
	}
	return a.byID(ctx, id)
}

// byID returns the synthetic table id if it has a model or is answers-only,
// nil otherwise.
func (a *answerState) byID(ctx context.Context, id uint64) (*synTable, error) {
	if err := a.sweepIfDirty(ctx); err != nil {
		return nil, err
	}
	a.mu.Lock()
	t, known := a.tables[id]
	plain := a.plain[id]
	if known {
		a.clock++
		t.used = a.clock
	}
	a.mu.Unlock()
	if known || plain {
		return t, nil
	}

	var rec *catalog.Synthetic
	err := a.e.dp.cat.View(ctx, func(tx *catalog.Tx) error {
		r, ok, err := tx.Synthetic(id)
		if ok && err == nil {
			rec = r
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("reading the record of synthetic table %d: %w", id, err)
	}
	if rec == nil || rec.Output != synth.SyntheticData.String() && rec.Output != synth.AnswersOnly.String() {
		a.mu.Lock()
		if len(a.plain) >= maxPlainIDs {
			clear(a.plain)
		}
		a.plain[id] = true
		a.mu.Unlock()
		return nil, nil
	}
	t = &synTable{cat: a.e.dp.cat, id: id, rec: rec}
	if rowsGiven(rec.Statement) {
		t.total = float64(rec.Rows)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if old, ok := a.tables[id]; ok {
		return old, nil
	}
	if len(a.tables) >= maxCachedTables {
		var lru *synTable
		for _, c := range a.tables {
			if lru == nil || c.used < lru.used {
				lru = c
			}
		}
		delete(a.tables, lru.id)
	}
	a.clock++
	t.used = a.clock
	a.tables[id] = t
	a.dirty = true // a new synthetic table: look for dropped ones
	return t, nil
}

// sweepIfDirty evicts the tables whose records are gone (dropped tables)
// if a DROP or RENAME was seen or a new table met since the last sweep.
func (a *answerState) sweepIfDirty(ctx context.Context) error {
	a.mu.Lock()
	if !a.dirty {
		a.mu.Unlock()
		return nil
	}
	ids := make([]uint64, 0, len(a.tables))
	for id := range a.tables {
		ids = append(ids, id)
	}
	a.dirty = false
	a.mu.Unlock()
	gone := ids[:0]
	err := a.e.dp.cat.View(ctx, func(tx *catalog.Tx) error {
		for _, id := range ids {
			_, ok, err := tx.Synthetic(id)
			if err != nil {
				return err
			}
			if !ok {
				gone = append(gone, id)
			}
		}
		return nil
	})
	if err != nil {
		a.invalidate()
		return fmt.Errorf("sweeping dropped synthetic tables: %w", err)
	}
	a.mu.Lock()
	for _, id := range gone {
		delete(a.tables, id)
	}
	a.mu.Unlock()
	return nil
}

// rowsGiven reports whether a CREATE SYNTHETIC TABLE statement sets ROWS.
func rowsGiven(statement string) bool {
	stmt, _, ok, err := dpparse.Parse(statement)
	cs, isCreate := stmt.(*dpparse.CreateSynthetic)
	if !ok || err != nil || !isCreate {
		return false
	}
	for _, o := range cs.Options {
		if strings.EqualFold(o.Name, optRows) {
			return true
		}
	}
	return false
}

// source returns the table's model with its marginal cache, decoding the
// model the first time.
func (t *synTable) source(ctx context.Context) (*planner.ModelCache, error) {
	t.modelOnce.Do(func() { t.model, t.modelErr = t.loadModel(ctx) })
	if t.modelErr != nil {
		return nil, t.modelErr
	}
	return t.cache, nil
}

// loadModel reads and decodes the stored model. It runs once; the context
// is not cancellable here, so a cancelled statement does not leave the
// table without a model.
func (t *synTable) loadModel(ctx context.Context) (*pgm.Model, error) {
	var blob []byte
	err := t.cat.View(context.WithoutCancel(ctx), func(tx *catalog.Tx) error {
		var err error
		blob, err = tx.SyntheticModel(t.id)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("reading the model of %s: %w", t, err)
	}
	if blob == nil {
		return nil, fmt.Errorf("%s has no stored model", t)
	}
	m, err := pgm.UnmarshalModel(blob)
	if err != nil {
		return nil, fmt.Errorf("decoding the model of %s: %w", t, err)
	}
	if got, want := m.Domain().Len(), len(t.rec.Domain.Columns); got != want {
		return nil, fmt.Errorf("the model of %s has %d attributes, its domain %d", t, got, want)
	}
	t.cache = planner.NewModelCache(m, t.rec.Domain.Sizes(), 0)
	return m, nil
}

// String is the table's name as its record gives it.
func (t *synTable) String() string { return quoteIdent(t.rec.DB) + "." + quoteIdent(t.rec.Name) }

// bounds returns the table's bounds analysis, computed the first time:
// the model, the stored release and the workload make a bounds.Release.
// It fails with an error wrapping bounds.ErrNoBounds for tables made by
// mechanisms without bounds.
func (t *synTable) bounds(ctx context.Context) (*bounds.Analysis, error) {
	t.boundsOnce.Do(func() { t.analysis, t.boundsErr = t.analyze(ctx) })
	return t.analysis, t.boundsErr
}

func (t *synTable) analyze(ctx context.Context) (*bounds.Analysis, error) {
	// Ask bounds first whether the mechanism has bounds at all, so that
	// its error names the mechanism before anything is read or decoded.
	if _, err := bounds.Analyze(&bounds.Release{Mechanism: t.rec.Mechanism}); errors.Is(err, bounds.ErrNoBounds) {
		return nil, err
	}
	if _, err := t.source(ctx); err != nil {
		return nil, err
	}
	res, err := t.release(ctx)
	if err != nil {
		return nil, err
	}
	res.Model = t.model
	a, err := bounds.Analyze(bounds.FromResult(t.rec.Mechanism, res, t.workload()))
	if err != nil {
		return nil, fmt.Errorf("error bounds of %s: %w", t, err)
	}
	return a, nil
}

// workload is the workload the mechanism was given: the record's queries
// merged by attribute set, without total counts (planner.Workload.Marginals).
func (t *synTable) workload() []synth.Marginal {
	var out []synth.Marginal
	index := map[string]int{}
	for _, q := range t.rec.Workload {
		if len(q.Attrs) == 0 {
			continue
		}
		k := synth.Key(q.Attrs)
		if i, ok := index[k]; ok {
			out[i].Weight += q.Weight
			continue
		}
		index[k] = len(out)
		out = append(out, synth.Marginal{Attrs: q.Attrs, Weight: q.Weight})
	}
	return out
}
