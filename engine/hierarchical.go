package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"

	"github.com/dpsql/dpsql/budget"
	"github.com/dpsql/dpsql/catalog"
	"github.com/dpsql/dpsql/catalog/domain"
	"github.com/dpsql/dpsql/engine/dpparse"
	"github.com/dpsql/dpsql/synth/hpd"
	"github.com/dpsql/dpsql/synth/noise"
)

// Hierarchical synthesis:
//
//	CREATE SYNTHETIC TABLES syn.households, syn.persons
//	    FROM census.households, census.persons USING hpd_fixed
//	    WITH EPSILON = 1 [, DELTA = d, SEED = s, HOUSEHOLDS = n, <method options>]
//	    [WORKLOAD ALL k-WAY | WORKLOAD (SELECT …, …)]
//
// The sources are a privacy unit and its child (ALTER TABLE … SET PRIVACY
// UNIT), in either order; the targets follow the sources' order. The
// mechanism is one of synth/hpd's (hpd_fixed, hpd_gen, mwem). It reads the
// households through hpd.Source only: household-level encoded records,
// each household truncated to its first K persons. The synthesis is
// charged once to the unit's ledger before anything is released, and both
// tables are created in one catalog transaction. Key columns (the unit's
// primary key, the child's link and primary key) are not attributes: the
// synthetic tables number households 1, 2, … and persons 1, 2, … and link
// each person to its synthetic household.

// optHouseholds is the number of synthetic households (default: the noisy
// count).
const optHouseholds = "HOUSEHOLDS"

// optRelationship names the child's relationship column (values 'head',
// 'spouse', 'child'): households are then typed (seed 003 §6).
const optRelationship = "RELATIONSHIP"

// hierRequest is a validated CREATE SYNTHETIC TABLES.
type hierRequest struct {
	stmt          *dpparse.CreateSyntheticTables
	unit, child   tableRef
	unitT, childT dpparse.TableName // targets, DB resolved
	link          *unitLink
	method        hpd.Method
	runner        *hpd.Runner
	releaseOptions
	rho        float64
	households int
	user       string
	relCol     string // RELATIONSHIP = col: typed households

	unitDom, childDom *domain.Table
	unitPos, childPos []int // source column of each attribute
	unitKey           int   // column of the unit's key
	childLink         int   // column of the child's link
	childKeys         []int // the child's key columns (link and primary key)
	domain            *hpd.Domain
	workload          []hpd.QuerySet
	workloadText      string
	mechOpts          []catalog.SyntheticOption // the method's own options, as given
}

// hierOutput is the Output of the synthetic-table records of a
// hierarchical release: plain rows (queries read them, see answer.go),
// listed by SHOW SYNTHETIC TABLES with the other table of the pair.
const hierOutput = "hierarchical rows"

// hierRelease is the release stored with both tables of a hierarchical
// synthesis: what the mechanism released besides the rows.
type hierRelease struct {
	Unit, Child     string // the two synthetic tables, db.name, at creation
	NoisyHouseholds float64
	Measurements    []hpd.Measurement
	Workload        string
}

func (e *Engine) createSyntheticTablesNode(s *dpparse.CreateSyntheticTables) *dpNode {
	return &dpNode{stmt: s, schema: types.OkResultSchema, run: func(ctx *sql.Context) ([]sql.Row, error) {
		n, err := e.createSyntheticTables(ctx, s)
		if err != nil {
			return nil, err
		}
		return []sql.Row{{types.NewOkResult(n)}}, nil
	}}
}

func (e *Engine) createSyntheticTables(ctx *sql.Context, s *dpparse.CreateSyntheticTables) (int, error) {
	if err := e.needCatalog("CREATE SYNTHETIC TABLES"); err != nil {
		return 0, err
	}
	r, err := e.validateHier(ctx, s)
	if err != nil {
		return 0, err
	}
	return e.runHier(ctx, r)
}

func (e *Engine) validateHier(ctx *sql.Context, s *dpparse.CreateSyntheticTables) (*hierRequest, error) {
	if len(s.Tables) != 2 || len(s.Sources) != 2 {
		return nil, ErrBadParameter.New("CREATE SYNTHETIC TABLES makes two tables from two sources (a privacy unit and its child table), got %d and %d", len(s.Tables), len(s.Sources))
	}
	if s.IfNotExists || !s.Table.IsZero() {
		return nil, ErrBadParameter.New("CREATE SYNTHETIC TABLES takes no IF NOT EXISTS")
	}
	var src [2]tableRef
	for i, tn := range s.Sources {
		t, err := e.resolveTable(ctx, tn)
		if err != nil {
			return nil, err
		}
		if err := e.requireSynthesize(ctx, t); err != nil {
			return nil, err
		}
		src[i] = t
	}
	r := &hierRequest{stmt: s, user: e.ledgerUser(ctx)}
	unitIdx := -1
	for i := range 2 {
		l, err := e.privacyUnitOf(ctx, src[i])
		if err != nil {
			return nil, err
		}
		if l != nil && l.unit.ID == src[1-i].ID {
			r.link, r.child, r.unit, unitIdx = l, src[i], src[1-i], 1-i
		}
	}
	if unitIdx < 0 {
		return nil, ErrBadParameter.New("neither %s nor %s is the privacy unit of the other: the owner links them with ALTER TABLE <persons> SET PRIVACY UNIT <households> ON <persons>.<link> = <households>.<key> MAX <k>", src[0], src[1])
	}
	var err error
	if r.method, err = hpd.Lookup(s.Mechanism); err != nil {
		return nil, ErrMechanism.New("unknown hierarchical mechanism %s (available: hpd_fixed, hpd_gen, mwem)", quoteIdent(s.Mechanism))
	}
	if err := r.parseOptions(s.Options); err != nil {
		return nil, err
	}
	if err := e.hierDomains(ctx, r); err != nil {
		return nil, err
	}
	if err := r.compileWorkload(); err != nil {
		return nil, err
	}
	// Targets: same rules as CREATE SYNTHETIC TABLE (checkTarget), each
	// against its own source.
	for i, tn := range s.Tables {
		srcRef := src[i]
		probe := &synthRequest{stmt: &dpparse.CreateSynthetic{Table: tn}, src: srcRef}
		if _, err := e.checkTarget(ctx, probe); err != nil {
			return nil, err
		}
		if i == unitIdx {
			r.unitT = probe.target
		} else {
			r.childT = probe.target
		}
	}
	if strings.EqualFold(r.unitT.DB, r.childT.DB) && strings.EqualFold(r.unitT.Name, r.childT.Name) {
		return nil, ErrBadParameter.New("the two synthetic tables need different names")
	}
	// Budget: the unit's ledger.
	info, err := e.dp.ledger.Budget(r.unit.LedgerKey())
	if errors.Is(err, budget.ErrNoBudget) {
		return nil, ErrNoBudget.New("the privacy unit %s has no privacy budget: ask its owner to run SET PRIVACY BUDGET FOR %s WITH EPSILON = <ε>, DELTA = <δ>", r.unit, r.unit)
	}
	if err != nil {
		return nil, e.ledgerError(err)
	}
	switch {
	case r.delta == 0:
		r.delta = info.Delta
	case r.delta > info.Delta:
		return nil, ErrBadParameter.New("DELTA = %g exceeds the privacy budget's δ = %g of %s", r.delta, info.Delta, r.unit)
	}
	if r.rho, err = budget.RhoFromEpsilonDelta(r.epsilon, r.delta); err != nil || !(r.rho > 0) {
		return nil, ErrBadParameter.New("EPSILON = %g, DELTA = %g gives no usable ρ", r.epsilon, r.delta)
	}
	// Preflight: everything the mechanism checks, before any charge.
	if err := r.runner.Check(&hpd.Input{Domain: r.domain, Data: hpd.RecordsSource{}, Workload: r.workload, Rho: r.rho, Households: r.households}); err != nil {
		return nil, ErrBadParameter.Wrap(err, "this request cannot run")
	}
	return r, nil
}

func (r *hierRequest) parseOptions(opts []dpparse.Option) error {
	own := func(name string, o dpparse.Option) (bool, error) {
		switch name {
		case optRelationship:
			if o.Value.Kind != dpparse.ValueString && o.Value.Kind != dpparse.ValueIdent {
				return true, ErrBadParameter.New("RELATIONSHIP = %s: name the persons' relationship column", o.Value)
			}
			r.relCol = o.Value.Text
			return true, nil
		case optHouseholds:
			n, err := rowCount(o)
			r.households = n
			return true, err
		}
		return false, nil
	}
	mech, err := splitOptions(opts, "CREATE SYNTHETIC TABLES", &r.releaseOptions, own, &r.mechOpts)
	if err != nil {
		return err
	}
	runner, err := r.method.New(mech)
	if err != nil {
		return mechanismOptionError(err, r.method.Name(),
			[]string{optEpsilon, optDelta, optSeed, optHouseholds, optRelationship}, r.method.Schema().Names())
	}
	r.runner = runner
	return nil
}

// keyDomain returns the public domain of t's columns except keys, and the
// source column of each attribute.
func (e *Engine) keyDomain(ctx *sql.Context, t tableRef, keys []int) (*domain.Table, []int, error) {
	declared, err := e.declaredDomains(ctx, t)
	if err != nil {
		return nil, nil, err
	}
	sch := t.Table.Schema()
	var attrs sql.Schema
	for i, c := range sch {
		if !slices.Contains(keys, i) {
			attrs = append(attrs, c)
		}
	}
	checks, err := t.Table.GetChecks(ctx)
	if err != nil {
		return nil, nil, ErrInternal.Wrap(err, "reading the checks of %s", t)
	}
	texts := make([]string, len(checks))
	for i, c := range checks {
		texts[i] = c.CheckExpression
	}
	d, errs := domain.FromSchema(attrs, texts, declared)
	if len(errs) > 0 {
		msgs := make([]string, len(errs))
		for i, err := range errs {
			msgs[i] = err.Error()
		}
		return nil, nil, ErrDomain.New("table %s has attribute columns without a public domain: %s; declare them with ALTER TABLE %s SET DOMAIN …", t, strings.Join(msgs, "; "), t)
	}
	pos, err := columnMap(sch, &d)
	if err != nil {
		return nil, nil, ErrDomain.Wrap(err, "domain of %s", t)
	}
	return &d, pos, nil
}

// childKeys returns the key columns of a unit's child: its link column and
// its primary key.
func childKeys(child tableRef, link *unitLink) (linkCol int, keys []int) {
	sch := child.Table.Schema()
	linkCol = columnCI(sch, link.rec.ChildCol)
	keys = []int{linkCol}
	for i, c := range sch {
		if c.PrimaryKey && i != linkCol {
			keys = append(keys, i)
		}
	}
	return linkCol, keys
}

func (e *Engine) hierDomains(ctx *sql.Context, r *hierRequest) error {
	r.unitKey = columnCI(r.unit.Table.Schema(), r.link.rec.UnitCol)
	if r.unitKey < 0 {
		return ErrDomain.New("the unit %s lost its key column %s", r.unit, quoteIdent(r.link.rec.UnitCol))
	}
	r.childLink, r.childKeys = childKeys(r.child, r.link)
	if r.childLink < 0 {
		return ErrDomain.New("%s lost its link column %s", r.child, quoteIdent(r.link.rec.ChildCol))
	}
	var err error
	if r.unitDom, r.unitPos, err = e.keyDomain(ctx, r.unit, []int{r.unitKey}); err != nil {
		return err
	}
	if r.childDom, r.childPos, err = e.keyDomain(ctx, r.child, r.childKeys); err != nil {
		return err
	}
	if len(r.childDom.Columns) == 0 {
		return ErrDomain.New("%s has no attribute besides its keys", r.child)
	}
	d := &hpd.Domain{K: r.link.rec.K}
	for i := range r.unitDom.Columns {
		d.GroupNames = append(d.GroupNames, r.unitDom.Columns[i].Name())
		d.Group = append(d.Group, r.unitDom.Columns[i].Size())
	}
	for i := range r.childDom.Columns {
		d.IndivNames = append(d.IndivNames, r.childDom.Columns[i].Name())
		d.Indiv = append(d.Indiv, r.childDom.Columns[i].Size())
	}
	if r.relCol != "" {
		d.Typed, d.Rel = true, -1
		for i, n := range d.IndivNames {
			if strings.EqualFold(n, r.relCol) {
				d.Rel = i
			}
		}
		if d.Rel < 0 {
			return ErrBadParameter.New("RELATIONSHIP = %s: %s has no such attribute", r.relCol, r.child)
		}
		col := &r.childDom.Columns[d.Rel]
		for t, v := range []string{"head", "spouse", "child"} {
			code, st := col.Encode(v)
			if st != domain.InDomain {
				return ErrBadParameter.New("RELATIONSHIP = %s: its domain has no value '%s' (typed households need head, spouse and child)", r.relCol, v)
			}
			d.RelCodes[t] = code
		}
	}
	if err := d.Check(); err != nil {
		return ErrDomain.Wrap(err, "hierarchical domain")
	}
	r.domain = d
	return nil
}

func (r *hierRequest) compileWorkload() error {
	w := r.stmt.Workload
	switch {
	case len(w.Queries) > 0:
		sets, err := compileHierWorkload(r, w.Queries)
		if err != nil {
			return err
		}
		r.workload = sets
		r.workloadText = w.String()
	case w.AllKWay > 0:
		r.workload = hpd.AllKWay(r.domain, w.AllKWay)
		if r.domain.Typed {
			r.workload = append(r.workload, hpd.AllRelations(r.domain)...)
		}
		r.workloadText = w.String()
	default:
		// Typed households add every relation (Q_R) to the 3-way sets.
		r.workload = hpd.DefaultWorkload(r.domain)
		r.workloadText = "WORKLOAD ALL 3-WAY (default)"
	}
	return nil
}

// hierSource reads the two tables into household records: households in
// the unit's key order, each with its first K persons in the child's key
// order; households without persons and persons without a household are
// not read.
type hierSource struct {
	e   *Engine
	r   *hierRequest
	got *hpd.Records
}

func (s *hierSource) Households(ctx context.Context) (*hpd.Records, error) {
	r := s.r
	cat := s.e.dp.cat
	index := map[string]int{}
	var gcodes [][]uint16
	encode := func(dom *domain.Table, pos []int, row sql.Row) []uint16 {
		out := make([]uint16, len(dom.Columns))
		for i := range dom.Columns {
			c := &dom.Columns[i]
			code, st := c.Encode(row[pos[i]])
			if st == domain.Invalid {
				code = max(c.NullCode(), 0)
			}
			out[i] = uint16(code)
		}
		return out
	}
	keyOf := func(v any) string { return fmt.Sprintf("%T:%v", v, v) }
	ukType := r.unit.Table.Schema()[r.unitKey].Type
	err := cat.ScanTable(ctx, r.unit.DB, r.unit.Name, func(row sql.Row) error {
		if len(row) != len(r.unit.Table.Schema()) {
			return catalog.ErrSchemaChanged
		}
		index[keyOf(row[r.unitKey])] = len(gcodes)
		gcodes = append(gcodes, encode(r.unitDom, r.unitPos, row))
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", r.unit, err)
	}
	members := make([][]uint16, len(gcodes))
	sizes := make([]int, len(gcodes))
	K := r.domain.K
	d := r.domain
	// Typed households keep, in key order, the first head, the first
	// spouse and the first K−2 children; other persons are not read.
	var typed [][3][]uint16
	var nchild []int
	if d.Typed {
		typed = make([][3][]uint16, len(gcodes))
		nchild = make([]int, len(gcodes))
	}
	sctx := sql.NewContext(ctx)
	err = cat.ScanTable(ctx, r.child.DB, r.child.Name, func(row sql.Row) error {
		if len(row) != len(r.child.Table.Schema()) {
			return catalog.ErrSchemaChanged
		}
		v := row[r.childLink]
		if v == nil {
			return nil
		}
		kv, _, err := ukType.Convert(sctx, v)
		if err != nil {
			return nil // matches no household
		}
		h, ok := index[keyOf(kv)]
		if !ok || sizes[h] >= K {
			return nil // no household, or truncated (the public MAX rule)
		}
		codes := encode(r.childDom, r.childPos, row)
		if d.Typed {
			t := slices.Index(d.RelCodes[:], int(codes[d.Rel]))
			switch {
			case t < 0, t != hpd.Child && typed[h][t] != nil, t == hpd.Child && nchild[h] >= K-2:
				return nil
			case t == hpd.Child:
				nchild[h]++
			}
			typed[h][t] = append(typed[h][t], codes...)
		}
		sizes[h]++
		members[h] = append(members[h], codes...)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", r.child, err)
	}
	rec := &hpd.Records{NG: len(r.domain.Group), NI: len(r.domain.Indiv), Off: []int32{0}}
	for h, g := range gcodes {
		if d.Typed {
			if typed[h][hpd.Head] == nil {
				continue // no head: not a valid typed household
			}
			members[h] = slices.Concat(typed[h][hpd.Head], typed[h][hpd.Spouse], typed[h][hpd.Child])
		}
		if sizes[h] == 0 {
			continue
		}
		rec.G = append(rec.G, g...)
		rec.P = append(rec.P, members[h]...)
		rec.Off = append(rec.Off, rec.Off[len(rec.Off)-1]+int32(sizes[h]))
	}
	s.got = rec
	return rec, nil
}

func (e *Engine) runHier(ctx *sql.Context, r *hierRequest) (_ int, err error) {
	targets := r.unitT.DB + "." + r.unitT.Name + ", " + r.childT.DB + "." + r.childT.Name
	log := e.log.With("statement", "CREATE SYNTHETIC TABLES", "targets", targets, "unit", r.unit.DB+"."+r.unit.Name,
		"child", r.child.DB+"."+r.child.Name, "mechanism", r.method.Name(), "user", r.user)
	res, err := e.dp.ledger.Reserve(ctx, r.unit.LedgerKey(), budget.Charge{
		User: r.user, Statement: r.stmt.String(), Mechanism: r.method.Name(),
		Rho: r.rho, Epsilon: r.epsilon, Delta: r.delta,
	})
	if err != nil {
		return 0, e.ledgerError(err)
	}
	defer e.recoverCharged(res, &err)
	log.Info("hierarchical synthesis started", "rho", res.Rho(), "ledger_entry", res.ID())
	start := time.Now()
	prog := newSynthProgress(ctx, log, targets, res.Rho(), true)
	defer prog.done()
	if err := ctx.Err(); err != nil {
		return 0, e.failReservation(res, false, "cancelled before reading the sources", ErrCancelled.Wrap(err, "statement cancelled"))
	}
	mech := noise.NewSource()
	post := noise.NewSource()
	if r.seed != nil {
		post = noise.Derive(e.dp.cat.Secret(), *r.seed, "create-synthetic-tables/v1", "sample")
	}
	src := &hierSource{e: e, r: r}
	in := &hpd.Input{Domain: r.domain, Data: src, Workload: r.workload, Rho: min(r.rho, res.Rho()),
		Noise: mech, PostNoise: post, Households: r.households, Progress: prog.report}
	out, err := r.runner.Run(ctx, in)
	if err != nil {
		return 0, e.failReservation(res, true, "mechanism failed", classify(ctx, err, ErrMechanism))
	}
	prog.writing()
	hrows, prows, hsch, psch, err := r.release(ctx, out.Households)
	if err != nil {
		return 0, e.failReservation(res, true, "preparing the release failed", classify(ctx, err, ErrInternal))
	}
	for _, t := range []dpparse.TableName{r.unitT, r.childT} {
		if _, found, _ := e.dp.cat.TableID(t.DB, t.Name); found {
			return 0, e.failReservation(res, true, "target exists", ErrExists.New("Table '%s' was created by another statement meanwhile", t.Name))
		}
	}
	wctx := context.WithoutCancel(ctx)
	note := fmt.Sprintf("created %s.%s (%d households) and %s.%s (%d persons): %s, %d rounds, ρ used %.6g; privacy unit %s, K = %d",
		r.unitT.DB, r.unitT.Name, len(hrows), r.childT.DB, r.childT.Name, len(prows), r.workloadText, len(out.Measurements), out.RhoUsed, r.unit, r.domain.K)
	if err := res.Commit(note); err != nil {
		return 0, e.ledgerError(err)
	}
	comment := func(src tableRef) string {
		return fmt.Sprintf("dpsql synthetic copy of %s.%s (%s over the privacy unit %s.%s, epsilon=%g, delta=%g)",
			src.DB, src.Name, r.method.Name(), r.unit.DB, r.unit.Name, r.epsilon, r.delta)
	}
	release, err := json.Marshal(hierRelease{Unit: r.unitT.String(), Child: r.childT.String(), NoisyHouseholds: out.NoisyHouseholds,
		Measurements: out.Measurements, Workload: r.workloadText})
	if err != nil {
		return 0, ErrInternal.Wrap(err, "encoding the release (the privacy budget of this statement stays spent)")
	}
	rounds := 0
	for _, m := range out.Measurements {
		rounds = max(rounds, m.Round)
	}
	created := time.Now().UTC()
	record := func(t dpparse.TableName, src tableRef, dom *domain.Table, rows int) *catalog.Synthetic {
		return &catalog.Synthetic{DB: t.DB, Name: t.Name, SourceID: src.ID, SourceDB: src.DB, SourceName: src.Name,
			Mechanism: r.method.Name(), Output: hierOutput, Options: r.mechOpts, Seed: r.seed,
			Epsilon: r.epsilon, Delta: r.delta, Rho: res.Rho(), RhoUsed: out.RhoUsed, LedgerEntry: res.ID(),
			Rows: int64(rows), Rounds: rounds, CreatedAt: created, User: r.user, Statement: r.stmt.String(), Domain: *dom}
	}
	err = e.dp.cat.Update(wctx, func(tx *catalog.Tx) error {
		if _, err := tx.SweepSynthetic(); err != nil {
			return err
		}
		for _, t := range []struct {
			name dpparse.TableName
			src  tableRef
			dom  *domain.Table
			sch  sql.Schema
			rows []sql.Row
		}{{r.unitT, r.unit, r.unitDom, hsch, hrows}, {r.childT, r.child, r.childDom, psch, prows}} {
			id, err := tx.CreateTable(t.name.DB, t.name.Name, sql.NewPrimaryKeySchema(t.sch), sql.Collation_Default, comment(t.src))
			if err != nil {
				return err
			}
			if err := tx.InsertRows(t.name.DB, t.name.Name, t.rows); err != nil {
				return err
			}
			rec := record(t.name, t.src, t.dom, len(t.rows))
			rec.TableID = id
			if err := tx.PutSynthetic(rec, nil, release); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		log.Error("synthetic tables not written after their budget was committed", "err", err)
		return 0, ErrInternal.Wrap(err, "writing %s (the privacy budget of this statement stays spent)", targets)
	}
	for _, t := range []dpparse.TableName{r.unitT, r.childT} {
		if err := e.grantCreatorRead(wctx, ctx, &synthRequest{target: t}); err != nil {
			log.Warn("could not grant the creator SELECT on a new table", "table", t.String(), "err", err)
		}
	}
	log.Info("synthetic tables created", "households", len(hrows), "persons", len(prows), "rho_used", out.RhoUsed,
		"took", time.Since(start).Round(time.Millisecond))
	return len(hrows) + len(prows), nil
}

// release decodes synthetic households into the rows of the two tables:
// fresh keys (households 1..n, persons 1..m), each person linked to its
// household.
func (r *hierRequest) release(ctx context.Context, syn *hpd.Records) (hrows, prows []sql.Row, hsch, psch sql.Schema, err error) {
	if hsch, err = syntheticSchema(r.unit.Table.Schema(), r.unitDom, r.unitPos, []int{r.unitKey}); err != nil {
		return
	}
	if psch, err = syntheticSchema(r.child.Table.Schema(), r.childDom, r.childPos, r.childKeys); err != nil {
		return
	}
	nh, np := syn.Households(), syn.Persons()
	hcodes := make([][]uint16, syn.NG)
	for a := range hcodes {
		hcodes[a] = make([]uint16, nh)
		for h := range nh {
			hcodes[a][h] = syn.G[h*syn.NG+a]
		}
	}
	pcodes := make([][]uint16, syn.NI)
	for b := range pcodes {
		pcodes[b] = make([]uint16, np)
		for p := range np {
			pcodes[b][p] = syn.P[p*syn.NI+b]
		}
	}
	rng := noise.NewSource().Rand() // bins' values: post-processing
	if hrows, err = decodeRows(ctx, hcodes, r.unitDom, r.unitPos, []int{r.unitKey}, hsch, rng); err != nil {
		return
	}
	if prows, err = decodeRows(ctx, pcodes, r.childDom, r.childPos, r.childKeys, psch, rng); err != nil {
		return
	}
	for h := range nh {
		for p := syn.Off[h]; p < syn.Off[h+1]; p++ {
			v, cerr := convertValue(ctx, psch[r.childLink], int64(h+1))
			if cerr != nil {
				err = cerr
				return
			}
			prows[p][r.childLink] = v
		}
	}
	return
}

// createSyntheticTablesProcedure is CALL dpsql_create_synthetic_tables('CREATE
// SYNTHETIC TABLES …'), the preparable twin of the statement: one row with
// the two new tables and their total number of rows.
func (e *Engine) createSyntheticTablesProcedure() sql.ExternalStoredProcedureDetails {
	return sql.ExternalStoredProcedureDetails{
		Name: "dpsql_create_synthetic_tables",
		Schema: sql.Schema{
			{Name: "Tables", Type: types.LongText},
			{Name: "Rows", Type: types.Int64},
		},
		Function: func(ctx *sql.Context, statement string) (sql.RowIter, error) {
			parsed, n, ok, err := dpparse.Parse(statement)
			stmt, isCreate := parsed.(*dpparse.CreateSyntheticTables)
			switch {
			case !ok || (err == nil && !isCreate):
				return nil, SQLError(ErrBadParameter.New("dpsql_create_synthetic_tables expects a CREATE SYNTHETIC TABLES statement"))
			case err != nil:
				return nil, SQLError(ErrSyntax.Wrap(err, ""))
			case !isBlank(statement[n:], ';'):
				return nil, SQLError(ErrSyntax.New("unexpected text after %s: %s", stmt, abbrev(statement[n:])))
			}
			rows, err := e.createSyntheticTables(ctx, stmt)
			if err != nil {
				return nil, SQLError(err)
			}
			names := make([]string, len(stmt.Tables))
			for i, t := range stmt.Tables {
				names[i] = t.String()
			}
			return sql.RowsToRowIter(sql.Row{strings.Join(names, ", "), int64(rows)}), nil
		},
	}
}

// hierPairs maps each live hierarchical record (by table ID) to the other
// table of its release: the records of one release share the ledger entry,
// the statement and the creation time.
func hierPairs(tx *catalog.Tx) map[uint64]*catalog.Synthetic {
	type key struct {
		entry uint64
		stmt  string
		at    time.Time
	}
	groups := map[key][]*catalog.Synthetic{}
	_ = tx.ForEachSynthetic(func(r *catalog.Synthetic) error {
		if r.Output == hierOutput && tx.SyntheticLive(r) {
			k := key{r.LedgerEntry, r.Statement, r.CreatedAt}
			groups[k] = append(groups[k], r)
		}
		return nil
	})
	out := map[uint64]*catalog.Synthetic{}
	for _, g := range groups {
		if len(g) == 2 {
			out[g[0].TableID], out[g[1].TableID] = g[1], g[0]
		}
	}
	return out
}

// hierOutputText is SHOW SYNTHETIC TABLES' Output of a hierarchical table:
// which side of the release it is and the other table (if not dropped).
func hierOutputText(r *catalog.Synthetic, pairs map[uint64]*catalog.Synthetic) string {
	other, ok := pairs[r.TableID]
	if !ok {
		return hierOutput + " (the other table was dropped)"
	}
	return fmt.Sprintf("%s, linked with %s.%s", hierOutput, other.DB, other.Name)
}

// hierNoBounds explains why a table of a hierarchical release has no error
// bounds ("" if t is not one).
func (e *Engine) hierNoBounds(ctx *sql.Context, t tableRef) string {
	var rec *catalog.Synthetic
	_ = e.dp.cat.View(ctx, func(tx *catalog.Tx) error {
		if r, ok, err := tx.Synthetic(t.ID); ok && err == nil && r.Output == hierOutput {
			rec = r
		}
		return nil
	})
	if rec == nil {
		return ""
	}
	return fmt.Sprintf("%s is one of the two tables of a hierarchical release (%s, from %s.%s): its rows are households "+
		"and persons sampled from a model fitted to noisy household- and person-level counts, which gives no "+
		"per-marginal error bounds; queries on it read its rows", t, rec.Mechanism, rec.SourceDB, rec.SourceName)
}
