package budget

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/bbolt"

	"github.com/dpsql/dpsql/internal/seal"
)

// Bucket names. They carry the budget_/ledger_ prefixes so they cannot clash
// with the catalog's buckets in the same file.
var (
	metaBucket    = []byte("budget_meta")
	tablesBucket  = []byte("budget_tables")
	entriesBucket = []byte("ledger_entries") // one nested bucket per table ID

	formatKey = []byte("format")
)

// formatVersion is the ledger's on-disk format. Format "1" stored records
// as they are; format "2" seals every value (the format record included)
// with a CRC-32C checksum (internal/seal), checked on every read, so a
// damaged budget or entry is reported as ErrCorrupt instead of being
// trusted. OpenLedger migrates a format "1" ledger in one transaction.
const (
	formatVersion = "2"
	formatLegacy  = "1"
)

// Notes written by Reservation.Fail.
const (
	noteRefunded = "cancelled before data access, refunded"
	noteFailed   = "failed after data access, budget stays spent"
)

// Options configures a Ledger. A nil *Options means the defaults.
type Options struct {
	// Now returns the time recorded in entries; nil means time.Now.
	Now func() time.Time

	// StrictMode runs Check inside every write transaction and rolls the
	// write back if an invariant would be broken. It reads the whole ledger
	// on every write; use it in tests and audits.
	StrictMode bool

	// AfterReserve, if set, is called after a reservation's debit has
	// committed and before Reserve returns: a failpoint for crash tests.
	AfterReserve func(table string, id uint64)
}

// Ledger is the durable per-table privacy budget ledger. It is safe for
// concurrent use.
type Ledger struct {
	db           *bbolt.DB
	now          func() time.Time
	strict       bool
	afterReserve func(table string, id uint64)
	// legacy: a format "1" ledger in a read-only database, which cannot be
	// migrated; its records carry no checksums.
	legacy bool
}

// OpenLedger opens the ledger kept in db, creating its buckets if needed
// and migrating a format "1" ledger to the current format. On a read-only
// database (bbolt's Options.ReadOnly) it creates and migrates nothing: the
// ledger can then only be read and checked.
func OpenLedger(db *bbolt.DB) (*Ledger, error) { return OpenLedgerOptions(db, nil) }

// OpenLedgerOptions is OpenLedger with options.
func OpenLedgerOptions(db *bbolt.DB, opts *Options) (*Ledger, error) {
	if db.NoSync {
		return nil, errors.New("budget: open ledger: the database has NoSync set; debits would not be durable")
	}
	l := &Ledger{db: db, now: time.Now}
	if opts != nil {
		if opts.Now != nil {
			l.now = opts.Now
		}
		l.strict = opts.StrictMode
		l.afterReserve = opts.AfterReserve
	}
	if db.IsReadOnly() {
		err := db.View(func(tx *bbolt.Tx) error {
			meta := tx.Bucket(metaBucket)
			if meta == nil || tx.Bucket(tablesBucket) == nil || tx.Bucket(entriesBucket) == nil {
				return ErrNoLedger
			}
			format, err := readFormat(meta.Get(formatKey))
			l.legacy = format == formatLegacy
			return err
		})
		if err != nil {
			return nil, fmt.Errorf("budget: open ledger: %w", err)
		}
		return l, nil
	}
	err := db.Update(func(tx *bbolt.Tx) error {
		meta, err := tx.CreateBucketIfNotExists(metaBucket)
		if err != nil {
			return err
		}
		tables, err := tx.CreateBucketIfNotExists(tablesBucket)
		if err != nil {
			return err
		}
		entries, err := tx.CreateBucketIfNotExists(entriesBucket)
		if err != nil {
			return err
		}
		v := meta.Get(formatKey)
		if v == nil {
			return meta.Put(formatKey, seal.Seal(formatKey, []byte(formatVersion)))
		}
		format, err := readFormat(v)
		if err != nil || format == formatVersion {
			return err
		}
		// Format "1": seal every record, then record the new format.
		for _, b := range []*bbolt.Bucket{tables, entries} {
			if err := seal.SealBucket(b); err != nil {
				return fmt.Errorf("migrating from format %q: %w", formatLegacy, err)
			}
		}
		return meta.Put(formatKey, seal.Seal(formatKey, []byte(formatVersion)))
	})
	if err != nil {
		return nil, fmt.Errorf("budget: open ledger: %w", err)
	}
	return l, nil
}

// readFormat returns the ledger format stored in v: formatVersion,
// sealed, or formatLegacy, stored as is; any other format is ErrVersion.
func readFormat(v []byte) (string, error) {
	format := ""
	if p, ok := seal.Open(formatKey, v); ok && v != nil {
		format = string(p)
	} else if string(v) == formatLegacy {
		format = formatLegacy
	} else if !isDigits(v) {
		return "", corrupt("the ledger's format record")
	} else {
		return "", fmt.Errorf("format %q: %w", v, ErrVersion)
	}
	if format != formatVersion && format != formatLegacy {
		return "", fmt.Errorf("format %q: %w", format, ErrVersion)
	}
	return format, nil
}

func isDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return len(b) > 0
}

// update runs fn in a write transaction, followed in strict mode by the
// invariant check.
func (l *Ledger) update(fn func(tx *bbolt.Tx) error) error {
	return l.db.Update(func(tx *bbolt.Tx) error {
		if err := fn(tx); err != nil {
			return err
		}
		if l.strict {
			return checkTx(tx)
		}
		return nil
	})
}

// SetBudget sets the total (ε, δ) budget of a table, creating it if needed,
// and records the change in the ledger. The total may be raised, or lowered
// down to the ρ already spent, but never below it (ErrBelowSpent). name is
// the table's display name and is updated on every call.
func (l *Ledger) SetBudget(ctx context.Context, table, name, user, statement string, epsilon, delta float64) (BudgetInfo, error) {
	if err := ctx.Err(); err != nil {
		return BudgetInfo{}, fmt.Errorf("budget: set budget for %s: %w", name, err)
	}
	if table == "" {
		return BudgetInfo{}, invalidParam("set budget: empty table ID")
	}
	if err := checkBudgetDelta(delta); err != nil {
		return BudgetInfo{}, fmt.Errorf("budget: set budget for %s: %w", name, err)
	}
	rho, err := RhoFromEpsilonDelta(epsilon, delta)
	if err != nil {
		return BudgetInfo{}, fmt.Errorf("budget: set budget for %s: %w", name, err)
	}
	total, err := floorUnits(rho)
	if err != nil {
		return BudgetInfo{}, fmt.Errorf("budget: set budget for %s: %w", name, err)
	}
	var rec tableRecord
	err = l.update(func(tx *bbolt.Tx) error {
		old, found, err := getTable(tx, table)
		if err != nil {
			return err
		}
		if found && total < old.Spent {
			return fmt.Errorf("new total ρ=%.6g is below ρ=%.6g spent: %w", total.rho(), old.Spent.rho(), ErrBelowSpent)
		}
		rec = tableRecord{Name: name, Epsilon: epsilon, Delta: delta, Total: total, Spent: old.Spent}
		if err := putTable(tx, table, &rec); err != nil {
			return err
		}
		now := l.now().UTC()
		_, err = appendEntry(tx, table, &entryRecord{
			Time: now, Updated: now, User: user, Statement: statement,
			Status: StatusBudgetSet, Epsilon: epsilon, Delta: delta, Total: total,
		})
		return err
	})
	if err != nil {
		return BudgetInfo{}, fmt.Errorf("budget: set budget for %s: %w", name, err)
	}
	return info(table, &rec), nil
}

// SetName changes the display name of a table that has a budget, e.g. after
// RENAME TABLE; the stable ID and the ledger are unchanged.
func (l *Ledger) SetName(ctx context.Context, table, name string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("budget: rename %s: %w", table, err)
	}
	err := l.update(func(tx *bbolt.Tx) error {
		rec, found, err := getTable(tx, table)
		if err != nil {
			return err
		}
		if !found {
			return ErrNoBudget
		}
		rec.Name = name
		return putTable(tx, table, &rec)
	})
	if err != nil {
		return fmt.Errorf("budget: rename %s: %w", table, err)
	}
	return nil
}

// Charge describes what a reservation spends and on whose behalf.
type Charge struct {
	User      string
	Statement string
	Mechanism string
	// Rho is the zCDP cost; it is rounded up to the ledger's unit.
	Rho float64
	// Epsilon and Delta are the (ε, δ) the request was stated in, recorded
	// for display; zero means not stated. When stated, ε must be positive
	// and finite and δ in (0, 1).
	Epsilon, Delta float64
}

// Reserve charges c.Rho to a table's budget before any data is read. It
// refuses with an *ExhaustedError (wrapping ErrBudgetExhausted) if
// ρ_spent + ρ would exceed ρ_total, and with ErrNoBudget if the table has no
// budget. On success the charge is spent, durably, until the reservation is
// refunded by Fail(false, …).
//
// The ρ charged is c.Rho rounded up to the ledger's unit, except that a
// request for what remains (c.Rho within one unit or a relative 1e-9 of
// it) is charged exactly what remains; Reservation.Rho says which.
func (l *Ledger) Reserve(ctx context.Context, table string, c Charge) (*Reservation, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("budget: reserve on %s: %w", table, err)
	}
	rho := c.Rho
	if !(rho > 0) {
		return nil, invalidParam("reserve on %s: rho %v must be positive", table, rho)
	}
	if c.Epsilon != 0 || c.Delta != 0 {
		if err := checkEpsilon(c.Epsilon); err != nil {
			return nil, fmt.Errorf("budget: reserve on %s: %w", table, err)
		}
		if err := checkDelta(c.Delta); err != nil {
			return nil, fmt.Errorf("budget: reserve on %s: %w", table, err)
		}
	}
	cost, err := ceilUnits(rho)
	if err != nil {
		return nil, fmt.Errorf("budget: reserve on %s: %w", table, err)
	}
	var (
		rec       tableRecord
		id        uint64
		exhausted bool
	)
	err = l.update(func(tx *bbolt.Tx) error {
		var found bool
		var err error
		rec, found, err = getTable(tx, table)
		if err != nil {
			return err
		}
		if !found {
			return ErrNoBudget
		}
		if rem := rec.Total - rec.Spent; cost > rem { // Spent ≤ Total is an invariant
			if !spendsWhatRemains(rho, rem) {
				exhausted = true
				return nil
			}
			cost = rem
		}
		rec.Spent += cost
		if err := putTable(tx, table, &rec); err != nil {
			return err
		}
		now := l.now().UTC()
		id, err = appendEntry(tx, table, &entryRecord{
			Time: now, Updated: now, User: c.User, Statement: c.Statement,
			Mechanism: c.Mechanism, Rho: cost, Status: StatusReserved,
			Epsilon: c.Epsilon, Delta: c.Delta,
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("budget: reserve on %s: %w", table, err)
	}
	if exhausted {
		// The ε figures are computed outside the write transaction.
		e := &ExhaustedError{
			Table: table, Name: rec.Name, Delta: rec.Delta,
			Requested: cost.rho(), Remaining: (rec.Total - rec.Spent).rho(),
		}
		e.RequestedEpsilon, _ = EpsilonFromRhoDelta(e.Requested, rec.Delta)
		e.RemainingEpsilon, _ = EpsilonFromRhoDelta(e.Remaining, rec.Delta)
		return nil, e
	}
	if l.afterReserve != nil {
		l.afterReserve(table, id)
	}
	return &Reservation{l: l, table: table, id: id, cost: cost}, nil
}

// spendsWhatRemains reports whether a request for rho, which exceeds rem
// once rounded up, asks for what remains: within one unit, or within a
// relative 1e-9 (the precision of a round trip through the ε that SHOW
// PRIVACY BUDGET displays). Such a request is charged exactly rem, and
// Reservation.Rho tells the caller to run at that, so that the remaining
// budget a user is shown can be spent, to the last unit, without ever
// spending more than the total.
func spendsWhatRemains(rho float64, rem units) bool {
	if rem == 0 {
		return false
	}
	floor, err := floorUnits(rho)
	return err == nil && floor <= rem || rho <= rem.rho()*(1+1e-9)
}

// Reservation is a charge made by Reserve, to be closed by Commit or Fail.
// It is safe for concurrent use; only the first Commit or Fail takes effect.
type Reservation struct {
	l     *Ledger
	table string
	id    uint64
	cost  units

	mu struct {
		sync.Mutex
		closed bool
	}
}

// Table returns the table ID the reservation charges.
func (r *Reservation) Table() string { return r.table }

// ID returns the ledger entry ID of the reservation.
func (r *Reservation) ID() uint64 { return r.id }

// Rho returns the ρ charged: the request's rounded up to the ledger's unit,
// or what remained of the budget when the request asked for that (see
// Ledger.Reserve), which may be a little less than requested. The caller
// must not spend more than Rho.
func (r *Reservation) Rho() float64 { return r.cost.rho() }

// Commit marks the reservation's entry committed. Call it, and let it
// succeed, before releasing the result.
func (r *Reservation) Commit(note string) error {
	return r.close(StatusCommitted, note)
}

// Fail closes a reservation whose request did not complete. If touchedData
// is false no data was read, and the charge is refunded; otherwise the
// charge stays spent. reason is recorded in the entry's note.
func (r *Reservation) Fail(touchedData bool, reason string) error {
	if touchedData {
		return r.close(StatusFailed, joinNote(noteFailed, reason))
	}
	return r.close(StatusRefunded, joinNote(noteRefunded, reason))
}

func joinNote(fixed, reason string) string {
	if reason == "" {
		return fixed
	}
	return fixed + ": " + reason
}

func (r *Reservation) close(status Status, note string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.mu.closed {
		return fmt.Errorf("budget: close reservation %s/%d: %w", r.table, r.id, ErrReservationClosed)
	}
	err := r.l.update(func(tx *bbolt.Tx) error {
		e, err := getEntry(tx, r.table, r.id)
		if err != nil {
			return err
		}
		if e.Status != StatusReserved {
			return fmt.Errorf("entry is %v: %w", e.Status, ErrReservationClosed)
		}
		if status == StatusRefunded {
			rec, found, err := getTable(tx, r.table)
			if err != nil {
				return err
			}
			if !found || rec.Spent < e.Rho {
				return fmt.Errorf("refund of %d units exceeds spent: %w", e.Rho, ErrCorrupt)
			}
			rec.Spent -= e.Rho
			if err := putTable(tx, r.table, &rec); err != nil {
				return err
			}
		}
		e.Status = status
		e.Note = note
		e.Updated = r.l.now().UTC()
		return putEntry(tx, r.table, r.id, &e)
	})
	if err != nil {
		return fmt.Errorf("budget: close reservation %s/%d: %w", r.table, r.id, err)
	}
	r.mu.closed = true
	return nil
}

// Budget returns a table's budget, or ErrNoBudget.
func (l *Ledger) Budget(table string) (BudgetInfo, error) {
	var (
		rec   tableRecord
		found bool
	)
	err := l.db.View(func(tx *bbolt.Tx) error {
		var err error
		rec, found, err = getTable(tx, table)
		return err
	})
	if err != nil {
		return BudgetInfo{}, fmt.Errorf("budget: read budget of %s: %w", table, err)
	}
	if !found {
		return BudgetInfo{}, fmt.Errorf("budget: table %s: %w", table, ErrNoBudget)
	}
	return info(table, &rec), nil
}

// Budgets returns the budgets of all tables, ordered by table ID.
func (l *Ledger) Budgets() ([]BudgetInfo, error) {
	type row struct {
		id  string
		rec tableRecord
	}
	var rows []row
	err := l.db.View(func(tx *bbolt.Tx) error {
		return tx.Bucket(tablesBucket).ForEach(func(k, v []byte) error {
			rec, err := decodeTable(k, v, l.legacy)
			if err != nil {
				return err
			}
			rows = append(rows, row{string(k), rec})
			return nil
		})
	})
	if err != nil {
		return nil, fmt.Errorf("budget: read budgets: %w", err)
	}
	out := make([]BudgetInfo, len(rows))
	for i := range rows {
		out[i] = info(rows[i].id, &rows[i].rec)
	}
	return out, nil
}

// Entries returns a table's ledger entries in order, restricted to those of
// user unless user is empty. An empty table means every table, ordered by
// table ID. It returns ErrNoBudget for an unknown table.
func (l *Ledger) Entries(table, user string) ([]Entry, error) {
	var out []Entry
	err := l.db.View(func(tx *bbolt.Tx) error {
		root := tx.Bucket(entriesBucket)
		each := func(table string, b *bbolt.Bucket) error {
			return b.ForEach(func(k, v []byte) error {
				e, err := decodeEntry(table, k, v, l.legacy)
				if err != nil {
					return err
				}
				if user == "" || e.User == user {
					out = append(out, e.entry(table, binary.BigEndian.Uint64(k)))
				}
				return nil
			})
		}
		if table != "" {
			b := root.Bucket([]byte(table))
			if b == nil {
				return fmt.Errorf("table %s: %w", table, ErrNoBudget)
			}
			return each(table, b)
		}
		return root.ForEachBucket(func(k []byte) error {
			return each(string(k), root.Bucket(k))
		})
	})
	if err != nil {
		return nil, fmt.Errorf("budget: read ledger: %w", err)
	}
	return out, nil
}

// Check verifies the ledger's invariants: every table's total is
// consistent with its last budget entry, its spending entries sum to its
// ρ_spent and ρ_spent ≤ ρ_total. A violation is reported as ErrCorrupt.
func (l *Ledger) Check() error {
	if err := l.db.View(checkTx); err != nil {
		return fmt.Errorf("budget: check: %w", err)
	}
	return nil
}

func checkTx(tx *bbolt.Tx) error {
	format, err := readFormat(tx.Bucket(metaBucket).Get(formatKey))
	if err != nil {
		return err
	}
	legacy := format == formatLegacy
	tables := tx.Bucket(tablesBucket)
	root := tx.Bucket(entriesBucket)
	err = tables.ForEach(func(k, v []byte) error {
		rec, derr := decodeTable(k, v, legacy)
		if derr != nil {
			return derr
		}
		if rec.Spent > rec.Total || rec.Total > maxUnits {
			return fmt.Errorf("table %q: spent %d > total %d units: %w", k, rec.Spent, rec.Total, ErrCorrupt)
		}
		if checkDelta(rec.Delta) != nil || checkEpsilon(rec.Epsilon) != nil {
			return fmt.Errorf("table %q: invalid (ε, δ) = (%v, %v): %w", k, rec.Epsilon, rec.Delta, ErrCorrupt)
		}
		b := root.Bucket(k)
		if b == nil {
			return fmt.Errorf("table %q: no ledger: %w", k, ErrCorrupt)
		}
		var (
			sum, next uint64
			last      *entryRecord
		)
		err := b.ForEach(func(ek, ev []byte) error {
			next++
			if len(ek) != 8 || binary.BigEndian.Uint64(ek) != next {
				return fmt.Errorf("table %q: entry key %x out of sequence: %w", k, ek, ErrCorrupt)
			}
			e, err := decodeEntry(string(k), ek, ev, legacy)
			if err != nil {
				return err
			}
			switch {
			case !e.Status.valid():
				return fmt.Errorf("table %q entry %d: status %v: %w", k, next, e.Status, ErrCorrupt)
			case e.Status == StatusBudgetSet:
				if e.Rho != 0 {
					return fmt.Errorf("table %q entry %d: budget entry charges ρ: %w", k, next, ErrCorrupt)
				}
				last = &e
			case e.Rho == 0:
				return fmt.Errorf("table %q entry %d: charge of 0: %w", k, next, ErrCorrupt)
			case e.Status.spends():
				sum += uint64(e.Rho)
			}
			return nil
		})
		if err != nil {
			return err
		}
		if sum != uint64(rec.Spent) {
			return fmt.Errorf("table %q: entries sum to %d units, spent is %d: %w", k, sum, rec.Spent, ErrCorrupt)
		}
		if last == nil || last.Total != rec.Total || last.Epsilon != rec.Epsilon || last.Delta != rec.Delta {
			return fmt.Errorf("table %q: total does not match the last budget entry: %w", k, ErrCorrupt)
		}
		if b.Sequence() != next {
			return fmt.Errorf("table %q: sequence %d, %d entries: %w", k, b.Sequence(), next, ErrCorrupt)
		}
		return nil
	})
	if err != nil {
		return err
	}
	return root.ForEachBucket(func(k []byte) error {
		if tables.Get(k) == nil {
			return fmt.Errorf("ledger %q has no table: %w", k, ErrCorrupt)
		}
		return nil
	})
}

func info(table string, rec *tableRecord) BudgetInfo {
	bi := BudgetInfo{
		Table: table, Name: rec.Name,
		EpsilonTotal: rec.Epsilon, Delta: rec.Delta,
		RhoTotal: rec.Total.rho(), RhoSpent: rec.Spent.rho(),
		RhoRemaining: (rec.Total - rec.Spent).rho(),
	}
	// Inputs are validated on write, so the conversions cannot fail.
	bi.EpsilonSpent, _ = EpsilonFromRhoDelta(bi.RhoSpent, rec.Delta)
	bi.EpsilonRemaining, _ = EpsilonFromRhoDelta(bi.RhoRemaining, rec.Delta)
	if rec.Spent == 0 {
		// The total was rounded down to a unit; converting it back would
		// show 4.99999999999777 for 5. Nothing spent: all of ε remains.
		bi.EpsilonRemaining = rec.Epsilon
	}
	return bi
}

func getTable(tx *bbolt.Tx, table string) (tableRecord, bool, error) {
	var rec tableRecord
	v := tx.Bucket(tablesBucket).Get([]byte(table))
	if v == nil {
		return rec, false, nil
	}
	rec, err := decodeTable([]byte(table), v, false)
	if err != nil {
		return rec, false, err
	}
	// Every debit computes Total − Spent; never let it wrap around.
	if rec.Spent > rec.Total || rec.Total > maxUnits {
		return rec, false, fmt.Errorf("table %q: spent %d > total %d units: %w", table, rec.Spent, rec.Total, ErrCorrupt)
	}
	return rec, true, nil
}

func putTable(tx *bbolt.Tx, table string, rec *tableRecord) error {
	v, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	return tx.Bucket(tablesBucket).Put([]byte(table), seal.Seal([]byte(table), v))
}

// appendEntry stores e under the next sequence number of the table's ledger
// and returns that number.
func appendEntry(tx *bbolt.Tx, table string, e *entryRecord) (uint64, error) {
	b, err := tx.Bucket(entriesBucket).CreateBucketIfNotExists([]byte(table))
	if err != nil {
		return 0, err
	}
	id, err := b.NextSequence()
	if err != nil {
		return 0, err
	}
	return id, putEntry(tx, table, id, e)
}

func getEntry(tx *bbolt.Tx, table string, id uint64) (entryRecord, error) {
	var e entryRecord
	b := tx.Bucket(entriesBucket).Bucket([]byte(table))
	if b == nil {
		return e, fmt.Errorf("table %s: %w", table, ErrNoBudget)
	}
	k := entryKey(id)
	v := b.Get(k)
	if v == nil {
		return e, fmt.Errorf("entry %d missing: %w", id, ErrCorrupt)
	}
	return decodeEntry(table, k, v, false)
}

func putEntry(tx *bbolt.Tx, table string, id uint64, e *entryRecord) error {
	v, err := json.Marshal(e)
	if err != nil {
		return err
	}
	k := entryKey(id)
	return tx.Bucket(entriesBucket).Bucket([]byte(table)).Put(k, seal.Seal(k, v))
}

// decodeTable decodes the budget record v stored under table ID k,
// checking its checksum unless legacy (an unmigrated format "1" ledger).
func decodeTable(k, v []byte, legacy bool) (tableRecord, error) {
	var rec tableRecord
	p, ok := v, true
	if !legacy {
		p, ok = seal.Open(k, v)
	}
	if !ok {
		return rec, corrupt(fmt.Sprintf("the privacy budget of table %s", k))
	}
	if err := json.Unmarshal(p, &rec); err != nil {
		return rec, fmt.Errorf("table %q: %v: %w", k, err, ErrCorrupt)
	}
	return rec, nil
}

// decodeEntry decodes the ledger entry v stored under key k in the ledger
// of table, checking its checksum unless legacy.
func decodeEntry(table string, k, v []byte, legacy bool) (entryRecord, error) {
	var e entryRecord
	p, ok := v, true
	if !legacy {
		p, ok = seal.Open(k, v)
	}
	if !ok {
		return e, corrupt(fmt.Sprintf("privacy ledger entry %s of table %s", entryName(k), table))
	}
	if err := json.Unmarshal(p, &e); err != nil {
		return e, fmt.Errorf("table %q entry %s: %v: %w", table, entryName(k), err, ErrCorrupt)
	}
	return e, nil
}

func entryName(k []byte) string {
	if len(k) == 8 {
		return fmt.Sprint(binary.BigEndian.Uint64(k))
	}
	return fmt.Sprintf("%x", k)
}

// corrupt is the error for a record whose checksum fails.
func corrupt(what string) error {
	return &seal.Error{What: "budget: " + what, Kind: ErrCorrupt}
}

func entryKey(id uint64) []byte { return binary.BigEndian.AppendUint64(nil, id) }
