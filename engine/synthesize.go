package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"

	"github.com/dpsql/dpsql/budget"
	"github.com/dpsql/dpsql/catalog"
	"github.com/dpsql/dpsql/catalog/domain"
	"github.com/dpsql/dpsql/engine/dpparse"
	"github.com/dpsql/dpsql/planner"
	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/hdmm"
	"github.com/dpsql/dpsql/synth/noise"
	"github.com/dpsql/dpsql/synth/pgm"
	"github.com/dpsql/dpsql/synth/registry"
)

// CREATE SYNTHETIC TABLE.
//
// The statement runs in three phases, and the privacy ledger records which
// one it reached:
//
//  1. Validation, touching neither the budget nor the data: access to the
//     source, the mechanism and its options, ε, δ, ROWS, SEED, the
//     source's public domain, the workload, the target's name and the
//     right to create it, and the conversion of (ε, δ) to ρ. Any failure
//     here spends nothing.
//  2. The reservation: ρ is charged to the source's budget, durably, in the
//     ledger (Ledger.Reserve), before any row is read. A failure before the
//     scan starts refunds it (Fail(false)); from the scan on, the charge
//     stays spent whatever happens (Fail(true)), including KILL QUERY.
//  3. Release: the reservation is committed, then the synthetic table, its
//     rows, its record, its model and its release are written in one
//     catalog transaction, so there is never a partial table or a table
//     without its model.
//
// The generic options EPSILON (required), DELTA (default: the source
// budget's δ), ROWS (default: the model's estimated total) and SEED (default:
// fresh noise) belong to the statement; every other option is the
// mechanism's, validated by its schema.

// maxSyntheticRows bounds ROWS: the rows of a synthetic table are built in
// memory before they are written in one transaction.
const maxSyntheticRows = synth.MaxRows

// The generic options of CREATE SYNTHETIC TABLE.
const (
	optEpsilon = "EPSILON"
	optDelta   = "DELTA"
	optRows    = "ROWS"
	optSeed    = "SEED"
	optPublic  = "PUBLIC"
)

var genericOptions = []string{optEpsilon, optDelta, optRows, optSeed, optPublic}

var _ sql.ExecSourceRel = (*CreateSynthetic)(nil)

// CreateSynthetic is the plan node of CREATE SYNTHETIC TABLE. It is
// immutable; all the work happens in RowIter.
type CreateSynthetic struct {
	e    *Engine
	stmt *dpparse.CreateSynthetic
}

func newCreateSynthetic(e *Engine, stmt *dpparse.CreateSynthetic) *CreateSynthetic {
	return &CreateSynthetic{e: e, stmt: stmt}
}

// Resolved implements sql.Node.
func (n *CreateSynthetic) Resolved() bool { return true }

// String implements sql.Node.
func (n *CreateSynthetic) String() string { return n.stmt.String() }

// Schema implements sql.Node: an OK packet with the number of rows made.
func (n *CreateSynthetic) Schema() sql.Schema { return types.OkResultSchema }

// Children implements sql.Node.
func (n *CreateSynthetic) Children() []sql.Node { return nil }

// WithChildren implements sql.Node.
func (n *CreateSynthetic) WithChildren(children ...sql.Node) (sql.Node, error) {
	if len(children) != 0 {
		return nil, sql.ErrInvalidChildrenNumber.New(n, len(children), 0)
	}
	return n, nil
}

// IsReadOnly implements sql.Node.
func (n *CreateSynthetic) IsReadOnly() bool { return false }

// WithResolvedChildren implements the parser's Injectable.
func (n *CreateSynthetic) WithResolvedChildren(children []any) (any, error) {
	if len(children) != 0 {
		return nil, sql.ErrInvalidChildrenNumber.New(n, len(children), 0)
	}
	return n, nil
}

// RowIter implements sql.ExecSourceRel.
func (n *CreateSynthetic) RowIter(ctx *sql.Context, _ sql.Row) (sql.RowIter, error) {
	out, err := n.e.createSynthetic(ctx, n.stmt)
	if err != nil {
		return nil, SQLError(err)
	}
	return sql.RowsToRowIter(sql.Row{types.NewOkResult(int(out.Rows))}), nil
}

// synthRequest is a validated CREATE SYNTHETIC TABLE: everything phase 1
// established.
type synthRequest struct {
	stmt   *dpparse.CreateSynthetic
	src    tableRef
	target dpparse.TableName // DB resolved
	mech   synth.Mechanism
	runner synth.Runner
	// mechOpts are the mechanism's options as stated, for the record.
	mechOpts []catalog.SyntheticOption

	releaseOptions
	rho  float64
	rows int // 0: the model's estimate

	dom      *domain.Table
	pos      []int // source column of every attribute
	serial   []int // source columns filled with row numbers
	workload *planner.Workload
	margs    []synth.Marginal
	user     string

	// remote is the snapshot of a FEDERATED source, opened in phase 1
	// (openRemoteData); nil for a local table.
	remote *remoteData

	// public is the PUBLIC = db.t option (zero if absent); publicData its
	// rows, encoded over dom in phase 1 (public.go).
	public     dpparse.TableName
	publicData *pgm.Dataset

	// unit is the source's privacy unit if the source is a unit's child
	// (units.go): the charge goes to the unit's ledger and the mechanism
	// runs at ρ/K².
	unit *unitLink
}

// createSynthetic runs CREATE SYNTHETIC TABLE and returns the record of the
// table it made (or, with IF NOT EXISTS and an existing target, a record
// with no rows and nothing spent).
func (e *Engine) createSynthetic(ctx *sql.Context, stmt *dpparse.CreateSynthetic) (*catalog.Synthetic, error) {
	if err := e.needCatalog("CREATE SYNTHETIC TABLE"); err != nil {
		return nil, err
	}
	req, exists, err := e.validateSynthetic(ctx, stmt)
	if err != nil {
		return nil, err
	}
	if exists {
		ctx.Warn(1050, "Table '%s' already exists", req.target.Name)
		return &catalog.Synthetic{DB: req.target.DB, Name: req.target.Name}, nil
	}
	if req.src.Table.Federated() {
		// Last step of phase 1: connect and open the snapshot. A failure
		// here charges nothing.
		if req.remote, err = e.openRemoteData(ctx, req); err != nil {
			return nil, err
		}
		defer req.remote.Close()
	}
	rec, err := e.runSynthetic(ctx, req)
	if err == nil {
		// The run's model, snapshots and release buffers are garbage now.
		synth.ReleaseAfter(rec.ModelSize)
	}
	return rec, err
}

// validateSynthetic is phase 1. exists reports an existing target under IF
// NOT EXISTS, in which case nothing else is done.
func (e *Engine) validateSynthetic(ctx *sql.Context, stmt *dpparse.CreateSynthetic) (req *synthRequest, exists bool, err error) {
	src, err := e.resolveTable(ctx, stmt.Source)
	if err != nil {
		return nil, false, err
	}
	if err := e.requireSynthesize(ctx, src); err != nil {
		return nil, false, err
	}
	req = &synthRequest{stmt: stmt, src: src, user: e.ledgerUser(ctx)}
	if req.unit, err = e.privacyUnitOf(ctx, src); err != nil {
		return nil, false, err
	}
	if err := e.refuseHostUnits(ctx, src); err != nil {
		return nil, false, err // extension.go
	}

	req.mech, err = registry.Lookup(stmt.Mechanism)
	if err != nil {
		return nil, false, ErrMechanism.New("unknown mechanism %s (available: %s)", quoteIdent(stmt.Mechanism), mechanismNames())
	}
	if err := req.parseOptions(stmt.Options); err != nil {
		return nil, false, err
	}
	switch use := synth.PublicUseOf(req.mech); {
	case use == synth.PublicNone && !req.public.IsZero():
		return nil, false, ErrBadParameter.New("mechanism %s takes no public data: drop PUBLIC = %s, or use a public-data mechanism (%s)", req.mech.Name(), req.public, publicMechanismNames())
	case use == synth.PublicRequired && req.public.IsZero():
		return nil, false, ErrBadParameter.New("mechanism %s needs public data: add PUBLIC = db.t, a table its owner declared public with ALTER TABLE db.t SET PUBLIC", req.mech.Name())
	}
	if src.Table.Federated() {
		if why := needsRecords(req.mech, req.runner); why != "" {
			return nil, false, ErrUnsupported.New("mechanism %s cannot synthesize from the FEDERATED table %s: %s; a federated source only answers marginals (import the rows into a local table to use %s)",
				req.mech.Name(), src, why, req.mech.Name())
		}
	}

	if err := e.synthesisDomain(ctx, req); err != nil {
		return nil, false, err
	}
	if !req.public.IsZero() {
		if req.publicData, err = e.publicData(ctx, req); err != nil {
			return nil, false, err
		}
	}
	if _, err := releaseSchema(req); err != nil {
		return nil, false, err
	}
	if err := req.compileWorkload(); err != nil {
		return nil, false, err
	}

	exists, err = e.checkTarget(ctx, req)
	if err != nil || exists {
		return req, exists, err
	}

	if err := req.resolveBudget(e.dp.ledger); err != nil {
		return nil, false, e.ledgerError(err)
	}
	if err := req.preflight(); err != nil {
		return nil, false, err
	}
	return req, false, nil
}

// preflight lets the mechanism reject the request before any budget is
// spent: it runs it on an empty table over the same public domain, with
// the same options, workload and ρ, under a context that is already
// cancelled. A mechanism validates its input (option combinations that
// depend on the domain or workload, such as AIM's ROUNDS against the number
// of 1-way marginals) before its first cancellation check, so a request it
// would refuse fails here; one it accepts stops at that first check. No
// data is involved, and the noise drawn is thrown away.
func (r *synthRequest) preflight() error {
	pd, err := pgmDomain(r.dom)
	if err != nil {
		return ErrDomain.Wrap(err, "domain of %s", r.src)
	}
	empty, err := pgm.NewDataset(pd, make([][]uint16, len(r.dom.Columns)))
	if err != nil {
		return ErrDomain.Wrap(err, "domain of %s", r.src)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	in := &synth.Input{Data: empty, Workload: r.margs, Rho: r.mechRho(r.rho), Noise: noise.NewSource(), Rows: r.rows, Public: r.publicData}
	if _, err := r.runner.Run(ctx, in); err != nil && !errors.Is(err, context.Canceled) {
		return ErrBadParameter.Wrap(err, "this request cannot run")
	}
	return nil
}

// synthesisDomain sets the public domain the source is synthesized over:
// every column's (e.tableDomain), except that an AUTO_INCREMENT column
// without a declared domain is a surrogate key, not an attribute: it is not
// read, and the synthetic table numbers its rows 1, 2, ... in it (a public
// sequence that says nothing about the source).
func (e *Engine) synthesisDomain(ctx *sql.Context, r *synthRequest) error {
	if r.unit != nil {
		return e.unitChildDomain(ctx, r)
	}
	sch := r.src.Table.Schema()
	dom, err := e.tableDomain(ctx, r.src)
	if err != nil {
		var serial []int
		declared, derr := e.declaredDomains(ctx, r.src)
		if derr != nil {
			return derr
		}
		var attrs sql.Schema
		for i, c := range sch {
			if c.AutoIncrement && !declaredCI(declared, c.Name) {
				serial = append(serial, i)
				continue
			}
			attrs = append(attrs, c)
		}
		if len(serial) == 0 || len(attrs) == 0 {
			return err
		}
		checks, cerr := r.src.Table.GetChecks(ctx)
		if cerr != nil {
			return err
		}
		texts := make([]string, len(checks))
		for i, c := range checks {
			texts[i] = c.CheckExpression
		}
		d, errs := domain.FromSchema(attrs, texts, declared)
		if len(errs) > 0 || len(d.Columns) != len(attrs) {
			return err // the full error names every column without a domain
		}
		dom, r.serial = &d, serial
	}
	r.dom = dom
	if r.pos, err = columnMap(sch, dom); err != nil {
		return ErrDomain.Wrap(err, "domain of %s", r.src)
	}
	return nil
}

// declaredCI reports whether declared has a domain for column name,
// compared case-insensitively.
func declaredCI(declared map[string]domain.Column, name string) bool {
	for k := range declared {
		if strings.EqualFold(k, name) {
			return true
		}
	}
	return false
}

// publicMechanismNames lists the registry's public-data mechanisms.
func publicMechanismNames() string {
	var names []string
	for _, m := range registry.All() {
		if synth.PublicUseOf(m) != synth.PublicNone {
			names = append(names, m.Name())
		}
	}
	if len(names) == 0 {
		return "none is installed"
	}
	return strings.Join(names, ", ")
}

// mechanismNames lists the registry's mechanisms for error messages.
func mechanismNames() string {
	var names []string
	for _, m := range registry.All() {
		names = append(names, m.Name())
	}
	return strings.Join(names, ", ")
}

// parseOptions splits the statement's options into the generic ones and
// the mechanism's, and validates both.
func (r *synthRequest) parseOptions(opts []dpparse.Option) error {
	own := func(name string, o dpparse.Option) (bool, error) {
		switch name {
		case optRows:
			n, err := rowCount(o)
			r.rows = n
			return true, err
		case optPublic:
			if o.Value.Kind != dpparse.ValueTable {
				return true, ErrBadParameter.New("PUBLIC = %s: name a table (PUBLIC = db.t)", o.Value)
			}
			r.public = o.Value.Table
			r.mechOpts = append(r.mechOpts, catalog.SyntheticOption{Name: name, Value: o.Value.Text})
			return true, nil
		}
		return false, nil
	}
	mechOpts, err := splitOptions(opts, "CREATE SYNTHETIC TABLE", &r.releaseOptions, own, &r.mechOpts)
	if err != nil {
		return err
	}
	runner, err := r.mech.New(mechOpts)
	if err != nil {
		return mechanismOptionError(err, r.mech.Name(), genericOptions, r.mech.Schema().Names())
	}
	r.runner = runner
	return nil
}

// releaseOptions are the options every synthesis statement shares.
type releaseOptions struct {
	epsilon, delta float64
	seed           *int64 // post-processing seed, if given
}

// splitOptions walks a synthesis statement's options once: a repeated name is
// refused, EPSILON/DELTA/SEED are parsed into rel, own takes the statement's
// other engine options (saying whether it did), and the rest are returned for
// the mechanism, recorded as stated in stored.
func splitOptions(opts []dpparse.Option, stmt string, rel *releaseOptions,
	own func(name string, o dpparse.Option) (bool, error), stored *[]catalog.SyntheticOption) ([]synth.Option, error) {
	seen := map[string]bool{}
	var mech []synth.Option
	for _, o := range opts {
		name := strings.ToUpper(o.Name)
		if seen[name] {
			return nil, ErrBadParameter.New("option %s given twice", name)
		}
		seen[name] = true
		switch name {
		case optEpsilon, optDelta, optSeed:
			if err := parseReleaseOption(name, o, &rel.epsilon, &rel.delta, &rel.seed); err != nil {
				return nil, err
			}
			continue
		}
		if took, err := own(name, o); err != nil || took {
			if err != nil {
				return nil, err
			}
			continue
		}
		mech = append(mech, synth.Option{Name: o.Name, Value: o.Value.Text})
		*stored = append(*stored, catalog.SyntheticOption{Name: name, Value: o.Value.Text})
	}
	if !seen[optEpsilon] {
		return nil, ErrBadParameter.New("%s needs WITH EPSILON = <ε>", stmt)
	}
	return mech, nil
}

// mechanismOptionError turns a mechanism's refusal of its options into the
// user's error; an unknown name lists every option the statement accepts.
func mechanismOptionError(err error, mechanism string, generic, own []string) error {
	var oe *synth.OptionError
	if errors.As(err, &oe) && errors.Is(err, synth.ErrUnknownOption) {
		valid := append(append([]string(nil), generic...), own...)
		return ErrBadParameter.New("unknown option %s for mechanism %s (valid options: %s)",
			strings.ToUpper(oe.Name), mechanism, strings.Join(valid, ", "))
	}
	return ErrBadParameter.Wrap(err, "mechanism options")
}

// rowCount reads ROWS or HOUSEHOLDS: a number of synthetic records.
func rowCount(o dpparse.Option) (int, error) {
	n, err := integer(o)
	if err != nil {
		return 0, err
	}
	if n <= 0 || n > maxSyntheticRows {
		return 0, ErrBadParameter.New("%s = %s: must be between 1 and %d", strings.ToUpper(o.Name), o.Value, maxSyntheticRows)
	}
	return int(n), nil
}

// parseReleaseOption reads one of the options every synthesis statement
// shares: EPSILON (positive), DELTA (in (0, 1)) or SEED (an integer).
func parseReleaseOption(name string, o dpparse.Option, epsilon, delta *float64, seed **int64) error {
	switch name {
	case optEpsilon:
		x, err := positiveFinite(o)
		if err != nil {
			return err
		}
		*epsilon = x
	case optDelta:
		x, err := number(o)
		if err != nil {
			return err
		}
		if !(x > 0 && x < 1) {
			return ErrBadParameter.New("DELTA = %s: δ must be in (0, 1)", o.Value)
		}
		*delta = x
	case optSeed:
		n, err := integer(o)
		if err != nil {
			return err
		}
		*seed = &n
	}
	return nil
}

// number reads a numeric option.
func number(o dpparse.Option) (float64, error) {
	x, err := o.Value.Float64()
	if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
		return 0, ErrBadParameter.New("%s = %s: not a finite number", strings.ToUpper(o.Name), o.Value)
	}
	return x, nil
}

// positiveFinite reads a numeric option that must be > 0.
func positiveFinite(o dpparse.Option) (float64, error) {
	x, err := number(o)
	if err != nil {
		return 0, err
	}
	if x <= 0 {
		return 0, ErrBadParameter.New("%s = %s: must be positive", strings.ToUpper(o.Name), o.Value)
	}
	return x, nil
}

// integer reads an integral option.
func integer(o dpparse.Option) (int64, error) {
	n, err := o.Value.Int64()
	if err != nil {
		return 0, ErrBadParameter.New("%s = %s: not an integer", strings.ToUpper(o.Name), o.Value)
	}
	return n, nil
}

// compileWorkload compiles the WORKLOAD clause (or the default, all 2-way
// marginals) over the source's domain.
func (r *synthRequest) compileWorkload() error {
	w := r.stmt.Workload
	var err error
	switch {
	case len(w.Queries) > 0:
		qs := make([]planner.WorkloadQuery, len(w.Queries))
		for i, q := range w.Queries {
			qs[i] = planner.WorkloadQuery{Text: q.Text, Select: q.Select, Weight: q.Weight}
		}
		names := make([]string, len(r.src.Table.Schema()))
		for i, c := range r.src.Table.Schema() {
			names[i] = c.Name
		}
		ref := planner.TableRef{DB: r.src.DB, Name: r.src.Name, Columns: names}
		r.workload, err = planner.Compile(qs, ref, r.dom)
	case w.AllKWay > 0:
		if w.AllKWay > len(r.dom.Columns) {
			return ErrWorkload.New("WORKLOAD ALL %d-WAY: the source has only %d columns", w.AllKWay, len(r.dom.Columns))
		}
		r.workload, err = planner.AllKWay(r.dom, w.AllKWay)
	default:
		r.workload, err = planner.DefaultWorkload(r.dom)
	}
	if err != nil {
		return ErrWorkload.Wrap(err, "")
	}
	for _, m := range r.workload.Marginals() {
		r.margs = append(r.margs, synth.Marginal{Attrs: m.Attrs, Weight: m.Weight, Kron: m.Kron})
	}
	if len(r.margs) == 0 {
		return ErrWorkload.New("the workload counts no column (only total counts): give at least one query with GROUP BY or WHERE")
	}
	if _, err := synth.CanonicalWorkload(len(r.dom.Columns), r.margs); err != nil {
		return ErrWorkload.Wrap(err, "workload")
	}
	return nil
}

// checkTarget resolves the target's database, checks the right to create
// it and whether it exists. exists is true only under IF NOT EXISTS; an
// existing target is an error otherwise.
//
// Rules: the target's name follows MySQL's identifier rules
// (checkNewTable); the user needs CREATE on the target database; the target may be
// in the source's database only for an owner of the source (so that raw
// tables and their synthetic copies need not share a database an analyst
// can read).
func (e *Engine) checkTarget(ctx *sql.Context, r *synthRequest) (exists bool, err error) {
	t := r.stmt.Table
	if err := checkNewTable(t); err != nil {
		return false, err
	}
	if t.DB == "" {
		t.DB = ctx.GetCurrentDatabase()
	}
	if t.DB == "" {
		return false, ErrBadParameter.New("no database selected for the synthetic table %s: qualify it as db.table", quoteIdent(t.Name))
	}
	pro := e.sqle.Analyzer.Catalog.DbProvider
	if !pro.HasDatabase(ctx, t.DB) {
		return false, sql.ErrDatabaseNotFound.New(t.DB)
	}
	// Use the database's stored spelling.
	if db, err := pro.Database(ctx, t.DB); err == nil {
		t.DB = db.Name()
	}
	r.target = t
	mdb := e.sqle.Analyzer.Catalog.MySQLDb
	if strings.EqualFold(t.DB, r.src.DB) && !e.isOwner(ctx, r.src) {
		return false, ErrAccessDenied.New("only an owner of %s may create synthetic tables in its database %s; create it in another database (e.g. CREATE SYNTHETIC TABLE mydb.%s ...)",
			r.src, quoteIdent(t.DB), quoteIdent(t.Name))
	}
	if !mdb.UserHasPrivileges(ctx, sql.NewPrivilegedOperation(sql.PrivilegeCheckSubject{Database: t.DB, Table: t.Name}, sql.PrivilegeType_Create)) {
		user, host := e.sessionAccount(ctx)
		return false, ErrAccessDenied.New("CREATE command denied to user '%s'@'%s' for table %s.%s", user, host, quoteIdent(t.DB), quoteIdent(t.Name))
	}
	_, found, err := e.dp.cat.TableID(t.DB, t.Name)
	if err != nil {
		return false, ErrInternal.Wrap(err, "looking up %s.%s", quoteIdent(t.DB), quoteIdent(t.Name))
	}
	if found {
		if r.stmt.IfNotExists {
			return true, nil
		}
		return false, ErrExists.New("Table '%s' already exists", t.Name)
	}
	return false, nil
}

// resolveBudget sets δ (default: the table budget's) and ρ, and checks that
// the table has a budget.
func (r *synthRequest) resolveBudget(l *budget.Ledger) error {
	info, err := l.Budget(r.ledgerKey())
	if errors.Is(err, budget.ErrNoBudget) {
		return ErrNoBudget.New("%s has no privacy budget: ask its owner to run SET PRIVACY BUDGET FOR %s WITH EPSILON = <ε>, DELTA = <δ>", r.src, r.src)
	}
	if err != nil {
		return err
	}
	switch {
	case r.delta == 0:
		r.delta = info.Delta
	case r.delta > info.Delta:
		// A larger δ makes the same ε stand for a much larger ρ (ε = 0.1 at
		// δ ≈ 1 is ρ ≈ 19.5: near-exact data under the label "ε = 0.1").
		return ErrBadParameter.New("DELTA = %g exceeds the privacy budget's δ = %g of %s: a request may use at most the budget's δ (omit DELTA to use it)", r.delta, info.Delta, r.src)
	}
	rho, err := budget.RhoFromEpsilonDelta(r.epsilon, r.delta)
	if err != nil {
		return ErrBadParameter.New("EPSILON = %g, DELTA = %g: %s", r.epsilon, r.delta, budget.Reason(err))
	}
	if !(rho > 0) {
		return ErrBadParameter.New("EPSILON = %g at DELTA = %g gives no privacy budget to spend (ρ = %g)", r.epsilon, r.delta, rho)
	}
	r.rho = rho
	return nil
}

// releaseRandomness returns the sources of one release: mech carries the
// mechanism's privacy noise and is always fresh (a new crypto/rand key for
// every ledger entry), whatever the statement says, so that no two releases
// share or correlate noise; post and decode drive the post-processing of the
// released model (sampling rows, drawing values inside bins). Only these
// two follow SEED: the same SEED then reproduces the same post-processing
// of the same model, which reveals nothing the model does not.
func (e *Engine) releaseRandomness(r *synthRequest) (mech, post, decode *noise.Source) {
	mech = noise.NewSource()
	if r.seed == nil {
		return mech, noise.NewSource(), noise.NewSource()
	}
	secret := e.dp.cat.Secret()
	return mech,
		noise.Derive(secret, *r.seed, "create-synthetic/v2", "sample"),
		noise.Derive(secret, *r.seed, "create-synthetic/v2", "decode")
}

// runSynthetic is phases 2 and 3.
func (e *Engine) runSynthetic(ctx *sql.Context, r *synthRequest) (_ *catalog.Synthetic, err error) {
	target := quoteIdent(r.target.DB) + "." + quoteIdent(r.target.Name)
	log := e.log.With("statement", "CREATE SYNTHETIC TABLE", "target", r.target.DB+"."+r.target.Name,
		"source", r.src.DB+"."+r.src.Name, "mechanism", r.mech.Name(), "user", r.user)

	res, err := e.dp.ledger.Reserve(ctx, r.ledgerKey(), budget.Charge{
		User: r.user, Statement: r.stmt.String(), Mechanism: r.mech.Name(),
		Rho: r.rho, Epsilon: r.epsilon, Delta: r.delta,
	})
	if err != nil {
		return nil, e.ledgerError(err)
	}
	rounds := 0
	synthDone := e.metrics.synthesisStarted(r.mech.Name())
	defer func() { synthDone(rounds, err) }() // after recoverCharged has set err
	defer e.recoverCharged(res, &err)
	failpoint(failpointAfterReserve)
	log.Info("synthesis started", "rho", res.Rho(), "ledger_entry", res.ID())
	start := time.Now()
	prog := newSynthProgress(ctx, log, r.target.DB+"."+r.target.Name, res.Rho(), r.mech.Output() != synth.AnswersOnly)
	defer prog.done()

	// Before the scan: a cancelled statement is refunded.
	if err := ctx.Err(); err != nil {
		return nil, e.failReservation(res, false, "cancelled before reading the source", ErrCancelled.Wrap(err, "statement cancelled"))
	}
	// touched reports whether the source's data has been read: from then
	// on a failure keeps the charge. A local table is read whole here; a
	// federated one marginal by marginal, as the mechanism asks.
	var data synth.Data
	touched := func() bool { return true }
	why := func(what string) string { return what }
	if r.remote != nil {
		data = &remoteProgress{Data: r.remote.snap, prog: prog}
		touched = r.remote.snap.Touched
		why = r.remote.failure
	} else {
		var local *pgm.Dataset
		if r.unit != nil {
			local, err = e.encodeUnitChild(ctx, r)
		} else {
			local, err = encodeTable(ctx, e.dp.cat, r.src, r.dom)
		}
		if err == nil {
			// The table may have been dropped and re-created while it was read.
			if id, ok, _ := e.dp.cat.TableID(r.src.DB, r.src.Name); !isHostTable(r.src) && (!ok || id != r.src.ID) {
				err = fmt.Errorf("%s changed while it was read", r.src)
			}
		}
		if err != nil {
			return nil, e.failReservation(res, true, "reading the source failed", classify(ctx, err, ErrInternal))
		}
		data = local
		prog.set(synthState(prog.target, synth.Status{Phase: "init"}, prog.rho, prog.rows))
	}

	// The charge is ρ rounded up to the ledger's unit, or exactly what
	// remained when that was asked for; the mechanism runs at the requested
	// ρ, never above the charge.
	mechNoise, postNoise, decodeNoise := e.releaseRandomness(r)
	in := &synth.Input{
		Data: synth.NewCache(data), Workload: r.margs, Rho: r.mechRho(min(r.rho, res.Rho())), Noise: mechNoise, PostNoise: postNoise, Rows: r.rows, Progress: prog.report,
		Public: r.publicData, TempDir: e.dataDir,
	}
	out, err := r.runner.Run(ctx, in)
	if testRunResult != nil && out != nil {
		testRunResult(out)
	}
	// A result may keep its input reachable; the source's marginals (the
	// cache holds the workload's) are not needed while the release is
	// written, so let them go.
	in.Data, in.Public = nil, nil
	if out != nil {
		rounds = len(out.Rounds)
	}
	if err != nil {
		if r.remote != nil {
			err = r.remote.error(ctx, err)
		}
		return nil, e.failReservation(res, touched(), why("mechanism failed"), classify(ctx, err, ErrMechanism))
	}
	prog.writing()
	rec, rows, sch, model, release, err := e.prepareRelease(ctx, r, out, decodeNoise)
	if err != nil {
		return nil, e.failReservation(res, touched(), why("preparing the release failed"), classify(ctx, err, ErrInternal))
	}
	unstage := func() { e.unstage(ctx, model, release) }
	rec.Rho, rec.LedgerEntry = res.Rho(), res.ID()
	// The model and the release are written: let the measurements and
	// the snapshots go before the table's transaction, and collect them.
	// The rows' codes stay (rows decodes them).
	out.Model, out.Measurements, out.Snapshots, out.Artifact = nil, nil, nil, nil
	synth.ReleaseAfter(rec.ModelSize)

	// Another statement may have created the target meanwhile: fail (the
	// data was read) rather than commit a charge for nothing.
	if _, found, _ := e.dp.cat.TableID(r.target.DB, r.target.Name); found {
		unstage()
		return nil, e.failReservation(res, touched(), why("target exists"), ErrExists.New("Table '%s' was created by another statement meanwhile", r.target.Name))
	}

	// Phase 3: commit the charge, then release. From here the statement
	// is no longer cancellable: the release either happens whole or not.
	wctx := context.WithoutCancel(ctx)
	note := fmt.Sprintf("created %s.%s: %d rows, %d rounds, ρ used %.6g", r.target.DB, r.target.Name, rec.Rows, rec.Rounds, out.RhoUsed)
	if r.publicData != nil {
		note += fmt.Sprintf("; public data %s (%d rows)", r.public, r.publicData.Rows())
	}
	if out.Note != "" {
		note += "; " + out.Note
	}
	note += r.unitNote()
	if r.remote != nil {
		note += "; " + r.remote.summary()
	}
	if err := res.Commit(note); err != nil {
		unstage()
		return nil, e.ledgerError(err)
	}
	id, err := e.dp.cat.CreateTableFrom(wctx, r.target.DB, r.target.Name, sql.NewPrimaryKeySchema(sch), syntheticComment(r), rows, func(tx *catalog.Tx) error {
		id, ok := tx.TableID(r.target.DB, r.target.Name)
		if !ok {
			return fmt.Errorf("new table %s not found in its own transaction", target)
		}
		rec.TableID = id
		if _, err := tx.SweepSynthetic(); err != nil {
			return err
		}
		return tx.PutSynthetic(rec, model, release)
	})
	if err != nil {
		// The charge is committed (spent) but nothing was released.
		log.Error("synthetic table not written after its budget was committed", "err", err)
		unstage()
		if sql.ErrTableAlreadyExists.Is(err) {
			return nil, ErrExists.Wrap(err, "%s was created by another statement meanwhile; the privacy budget of this statement stays spent", target)
		}
		return nil, ErrInternal.Wrap(err, "writing %s (the privacy budget of this statement stays spent)", target)
	}
	rec.TableID = id
	if err := e.grantCreatorRead(wctx, ctx, r); err != nil {
		log.Warn("could not grant the creator SELECT on the new table", "err", err)
	}
	logArgs := []any{"rows", rec.Rows, "rounds", rec.Rounds, "rho_used", out.RhoUsed,
		"model_mb", rec.ModelSize, "took", time.Since(start).Round(time.Millisecond)}
	if r.remote != nil {
		st := r.remote.snap.Stats()
		logArgs = append(logArgs, "remote_queries", st.Queries, "remote_scans", st.Scans,
			"remote_time", st.RemoteTime.Round(time.Millisecond), "remote_cells", st.Cells)
	}
	log.Info("synthetic table created", logArgs...)
	return rec, nil
}

// unstage deletes what prepareRelease staged for a table that was not
// created (values that were not staged are ignored).
func (e *Engine) unstage(ctx context.Context, staged ...[]byte) {
	for _, ref := range staged {
		if err := e.dp.cat.DropBlob(context.WithoutCancel(ctx), ref); err != nil {
			e.log.Warn("could not delete a staged model or release; the next start deletes it", "err", err)
		}
	}
}

// syntheticComment is the TABLE_COMMENT of the table r creates: what it
// is, e.g. "dpsql synthetic copy of demo.census (aim, epsilon=1,
// delta=1e-09)". Whoever may see the table may also learn its source and
// parameters from SHOW SYNTHETIC TABLES.
func syntheticComment(r *synthRequest) string {
	what := "synthetic copy"
	if r.mech.Output() == synth.AnswersOnly {
		what = "noisy answers"
	}
	return fmt.Sprintf("dpsql %s of %s.%s (%s, epsilon=%s, delta=%s)", what, r.src.DB, r.src.Name, r.mech.Name(),
		strconv.FormatFloat(r.epsilon, 'g', -1, 64), strconv.FormatFloat(r.delta, 'g', -1, 64))
}

// recoverCharged turns a panic during a charged synthesis into a failed
// ledger entry (the data may have been read, so the charge stays spent) and
// an error to the client, never a dropped connection with its entry left
// reserved. The mechanisms' helper goroutines forward their panics to the
// goroutine that started them (internal/par), so they end up here too.
// Deferred by runSynthetic right after the reservation.
func (e *Engine) recoverCharged(res *budget.Reservation, err *error) {
	p := recover()
	if p == nil {
		return
	}
	e.log.Error("synthesis panicked", "ledger_entry", res.ID(), "panic", p, "stack", string(debug.Stack()))
	ierr := ErrInternal.New("internal error during the synthesis (%v); please report it with the server log", p)
	if ferr := res.Fail(true, ierr.Error()); ferr != nil && !errors.Is(ferr, budget.ErrReservationClosed) {
		e.log.Error("closing a failed reservation", "ledger_entry", res.ID(), "err", ferr)
	}
	*err = fmt.Errorf("%w (the privacy budget of this statement, ρ=%.6g, stays spent)", ierr, res.Rho())
}

// failReservation closes res as failed (touched: data was read, the charge
// stays spent; otherwise it is refunded) and returns err, or the ledger's
// error if closing failed.
func (e *Engine) failReservation(res *budget.Reservation, touched bool, why string, err error) error {
	reason := why + ": " + err.Error()
	if ferr := res.Fail(touched, reason); ferr != nil {
		e.log.Error("closing a failed reservation", "ledger_entry", res.ID(), "err", ferr)
		return errors.Join(err, e.ledgerError(ferr))
	}
	if touched {
		return fmt.Errorf("%w (the privacy budget of this statement, ρ=%.6g, stays spent)", err, res.Rho())
	}
	return err
}

// classify returns err as an engine error: ErrCancelled when ctx was
// cancelled, kind otherwise (unless err already has a kind).
func classify(ctx context.Context, err error, kind *Kind) error {
	if ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return ErrCancelled.Wrap(err, "statement cancelled")
	}
	var ee *Error
	if errors.As(err, &ee) {
		return err
	}
	return kind.Wrap(err, "synthesis")
}

// Test hooks, nil outside tests: testRunResult sees a mechanism's result
// as it returns, testEncodingRelease runs just before the release is
// encoded.
var (
	testRunResult       func(*synth.Result)
	testEncodingRelease func()
)

// prepareRelease turns a mechanism's result into what phase 3 writes: the
// record, the rows and schema of the table, the model and the release
// encodings. It is post-processing only.
//
// The rows of a model's or a rows-only mechanism's table are decoded while
// they are written (rows), not before: a decoded row costs about ten times
// its codes, and the transaction holds each row once, encoded. Their codes
// are checked here, before the charge is committed.
//
// Large encodings are written in chunks of their own transactions as they
// are encoded (catalog.Store.StageFrom), and model and release are what
// the table's transaction stores in their place: the model's encoding is
// let go before the release is encoded, and the table's commit copies
// references into bbolt's pages, not a second copy of both. On an error
// nothing is left staged; after a success the caller deletes what was
// staged (unstage) if it does not create the table.
func (e *Engine) prepareRelease(ctx context.Context, r *synthRequest, out *synth.Result, decodeNoise *noise.Source) (rec *catalog.Synthetic, rows catalog.RowSource, sch sql.Schema, model, release []byte, err error) {
	defer func() {
		if err != nil {
			e.unstage(ctx, model, release)
		}
	}()
	if sch, err = releaseSchema(r); err != nil {
		return
	}
	var modelMB float64 // the model's size, once it is encoded and let go
	var nrows int
	switch r.mech.Output() {
	case synth.AnswersOnly:
		// hdmm_lls releases Kronecker measurements: the table holds their
		// least-squares marginals.
		var ans []synth.Measurement
		if ans, err = hdmm.LeastSquares(out.Measurements, r.dom.Sizes()); err != nil {
			return
		}
		var all []sql.Row
		if all, err = answerRows(ctx, ans, r.dom, sch); err != nil {
			return
		}
		rows, nrows = catalog.SliceRows(all), len(all)
	case synth.RowsOnly:
		// No model: the table's rows are the release, and queries on it
		// read them (answer.go treats the table as a plain one).
		if rows, nrows, err = decodedRows(ctx, r, out, sch, decodeNoise); err != nil {
			return
		}
	default:
		if out.Model == nil {
			err = errors.New("mechanism returned no model")
			return
		}
		if rows, nrows, err = decodedRows(ctx, r, out, sch, decodeNoise); err != nil {
			return
		}
		// The model's encoding is staged as it is made, a chunk at a
		// time, so a large model is never held beside its encoding.
		// Encoded, the model is read no more: collected before the
		// release (its snapshots, as large as a few models at ε = 10)
		// is encoded.
		modelMB = out.Model.Size()
		if model, err = e.dp.cat.StageFrom(ctx, out.Model.WriteBinary); err != nil {
			err = fmt.Errorf("writing the model: %w", err)
			return
		}
		out.Model = nil
		synth.ReleaseAfter(modelMB)
	}
	if testEncodingRelease != nil {
		testEncodingRelease()
	}
	if release, err = e.dp.cat.StageFrom(ctx, func(w io.Writer) (int64, error) { return synth.WriteRelease(w, out) }); err != nil {
		err = fmt.Errorf("writing the release: %w", err)
		return
	}
	rec = &catalog.Synthetic{
		DB: r.target.DB, Name: r.target.Name,
		SourceID: r.src.ID, SourceDB: r.src.DB, SourceName: r.src.Name,
		Mechanism: r.mech.Name(), Output: r.mech.Output().String(), Options: r.mechOpts, Seed: r.seed,
		Epsilon: r.epsilon, Delta: r.delta, RhoUsed: out.RhoUsed,
		Rows: int64(nrows), Rounds: len(out.Rounds),
		CreatedAt: time.Now().UTC(), User: r.user, Statement: r.stmt.String(),
		Domain: *r.dom,
	}
	rec.ModelSize = modelMB
	for _, q := range r.workload.Queries {
		rec.Workload = append(rec.Workload, catalog.SyntheticQuery{Text: q.Text, Weight: q.Weight, Attrs: q.Attrs})
	}
	return rec, rows, sch, model, release, nil
}

// decodedRows is the RowSource of out's synthetic rows, decoded into sch
// with decodeNoise's post-processing randomness, and their number.
func decodedRows(ctx context.Context, r *synthRequest, out *synth.Result, sch sql.Schema, decodeNoise *noise.Source) (catalog.RowSource, int, error) {
	d, err := newRowDecoder(ctx, out.Rows, r.dom, r.pos, r.serial, sch, decodeNoise.Rand())
	if err != nil {
		return nil, 0, err
	}
	return d.next, d.n, nil
}

// grantCreatorRead gives the creator SELECT on the new table when they
// could not read it otherwise (no SELECT on its database). Nothing else is
// granted.
func (e *Engine) grantCreatorRead(wctx context.Context, ctx *sql.Context, r *synthRequest) error {
	mdb := e.sqle.Analyzer.Catalog.MySQLDb
	op := sql.NewPrivilegedOperation(sql.PrivilegeCheckSubject{Database: r.target.DB, Table: r.target.Name}, sql.PrivilegeType_Select)
	if mdb.UserHasPrivileges(ctx, op) {
		return nil
	}
	user, host := e.sessionAccount(ctx)
	q := fmt.Sprintf("GRANT SELECT ON %s.%s TO %s@%s", quoteIdent(r.target.DB), quoteIdent(r.target.Name),
		dpparse.QuoteString(user), dpparse.QuoteString(host))
	_, _, err := e.QueryInternal(wctx, "", q)
	return err
}

// synthProgress shows a running synthesis in SHOW PROCESSLIST and
// information_schema.processlist (the State of the statement's thread, one
// line, see synthState) and in the server log, one line per round.
type synthProgress struct {
	mu     sync.Mutex // set may be called from the mechanism's goroutines
	ctx    *sql.Context
	log    interface{ Info(string, ...any) }
	target string // db.t
	rho    float64
	rows   bool   // the mechanism releases rows: sampling follows its final estimation
	name   string // the current progress entry
}

func newSynthProgress(ctx *sql.Context, log interface{ Info(string, ...any) }, target string, rho float64, rows bool) *synthProgress {
	p := &synthProgress{ctx: ctx, log: log, target: target, rho: rho, rows: rows}
	p.set(synthStatePrefix + target + ": reading the source")
	return p
}

// set replaces the statement's progress entry. The process list shows a
// progress entry whose name starts with synthStatePrefix as its name
// alone (processlist.go), so the name is the State.
func (p *synthProgress) set(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.setLocked(name)
}

// setLocked is set; the caller holds p.mu.
func (p *synthProgress) setLocked(name string) {
	pl := p.ctx.ProcessList
	if pl == nil || name == p.name {
		return
	}
	pid := p.ctx.Pid()
	if p.name != "" {
		pl.RemoveTableProgress(pid, p.name)
	}
	p.name = name
	pl.AddTableProgress(pid, name, -1)
}

// report is the mechanism's progress callback.
func (p *synthProgress) report(s synth.Status) {
	p.set(synthState(p.target, s, p.rho, p.rows))
	if s.Iters == 0 {
		p.log.Info("synthesis progress", "phase", s.Phase, "round", s.Round, "rho_used", s.RhoUsed, "rho", p.rho, "model_mb", s.ModelSize)
	}
}

// reading shows that n marginals are being read from a remote source,
// and returns the function that restores the previous state.
func (p *synthProgress) reading(n int) (restore func()) {
	p.mu.Lock()
	defer p.mu.Unlock()
	prev := p.name
	what := "1 marginal"
	if n != 1 {
		what = strconv.Itoa(n) + " marginals"
	}
	p.setLocked(synthStatePrefix + p.target + ": reading the source (" + what + ")")
	return func() {
		if prev != "" {
			p.set(prev)
		}
	}
}

// writing shows that the mechanism is done and the release is being
// written.
func (p *synthProgress) writing() { p.set(synthStatePrefix + p.target + ": writing the table") }

// done removes the progress entry.
func (p *synthProgress) done() {
	if p.ctx.ProcessList != nil && p.name != "" {
		p.ctx.ProcessList.RemoveTableProgress(p.ctx.Pid(), p.name)
	}
}

// synthStatePrefix starts the State of a thread running CREATE SYNTHETIC
// TABLE.
const synthStatePrefix = "synthesizing "

// synthState is the State of a synthesis into target (db.t) that reported
// s, with rho charged. One line, documented in README.md:
//
//	synthesizing db.t: round N, rho used x of y, model z MB
//	synthesizing db.t: final estimation, iteration i of n, rho used x of y, model z MB
//	synthesizing db.t: sampling rows, rho used x of y, model z MB
//
// Round 0 is the initial measurement, from the end of the scan to the first
// round. Before, the State says "reading the source", after the mechanism
// "writing the table".
func synthState(target string, s synth.Status, rho float64, rows bool) string {
	var what string
	switch {
	case s.Iters > 0:
		what = fmt.Sprintf("final estimation, iteration %d of %d", s.Iter, s.Iters)
	case s.Phase == "init" || s.Phase == "round":
		what = fmt.Sprintf("round %d", s.Round)
	case s.Phase == "final" && rows:
		what = "sampling rows"
	default:
		return synthStatePrefix + target + ": writing the table"
	}
	return fmt.Sprintf("%s%s: %s, rho used %s of %s, model %.2f MB", synthStatePrefix, target, what,
		strconv.FormatFloat(s.RhoUsed, 'g', 4, 64), strconv.FormatFloat(rho, 'g', 4, 64), s.ModelSize)
}
