package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/dpsql/dpsql/catalog/domain"
)

// Synthetic tables.
//
// A synthetic table is an ordinary table plus three metadata records, all
// keyed by the table's stable ID (8 bytes, big-endian) and written in the
// transaction that creates the table (CreateTableWithRows' extra):
//
//   - meta_synthetic: the Synthetic record (JSON);
//   - meta_synthetic_model: the fitted model (synth/pgm's binary encoding),
//     absent for answers-only releases;
//   - meta_synthetic_release: the mechanism's release (synth's versioned
//     encoding: measurements, rounds, snapshots).
//
// The model and the release may be blob references (blob.go): the engine
// stages large ones with StageBlob before the transaction, and
// SyntheticModel and SyntheticRelease return the values they refer to.
//
// DeleteSynthetic removes the three records; the engine calls it in the
// transaction that drops the table. A table ID is never reused, so a record
// left behind by a crash between a drop and its cleanup can never be
// mistaken for a later table: SyntheticLive tells such orphans apart.

// Metadata buckets of synthetic tables (each under the "meta_" prefix).
const (
	BucketSynthetic        = "synthetic"
	BucketSyntheticModel   = "synthetic_model"
	BucketSyntheticRelease = "synthetic_release"
)

// SyntheticVersion is the version of the Synthetic record written by this
// build.
const SyntheticVersion = 1

// ErrSyntheticVersion is returned for a synthetic-table record written by a
// newer dpsql.
var ErrSyntheticVersion = errors.New("catalog: synthetic table record has an unknown version")

// Synthetic describes a synthetic table: where it came from, how it was
// made and what it cost. Everything in it is public to whoever may read the
// table: it is a function of the statement and of differentially private
// releases only.
type Synthetic struct {
	Version int `json:"version"`

	// The synthetic table.
	TableID uint64 `json:"table_id"`
	DB      string `json:"db"`
	Name    string `json:"name"`

	// The source table.
	SourceID   uint64 `json:"source_id"`
	SourceDB   string `json:"source_db"`
	SourceName string `json:"source_name"`

	Mechanism string `json:"mechanism"`
	// Output is the mechanism's output kind: "synthetic data" or
	// "answers only".
	Output string `json:"output"`
	// Options are the mechanism's own options as given (generic ones such
	// as EPSILON are fields of their own).
	Options []SyntheticOption `json:"options,omitempty"`
	// Seed is the statement's SEED, if it had one.
	Seed *int64 `json:"seed,omitempty"`

	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
	// Rho is the zCDP budget charged to the source table (after the
	// ledger's rounding up); RhoUsed is what the mechanism consumed.
	Rho     float64 `json:"rho"`
	RhoUsed float64 `json:"rho_used"`
	// LedgerEntry is the ID of the charge in the source table's ledger.
	LedgerEntry uint64 `json:"ledger_entry"`

	// Rows is the number of rows of the table.
	Rows   int64 `json:"rows"`
	Rounds int   `json:"rounds"`
	// ModelSize is the size in MB of the fitted model (0 without one).
	ModelSize float64 `json:"model_size"`

	CreatedAt time.Time `json:"created_at"`
	// User is the account that ran the statement (user@host).
	User      string `json:"user"`
	Statement string `json:"statement"`

	// Domain is the public domain the data was encoded with; attribute i
	// of the model is Domain.Columns[i].
	Domain domain.Table `json:"domain"`
	// Workload is the compiled workload the mechanism was given.
	Workload []SyntheticQuery `json:"workload"`
}

// SyntheticOption is one mechanism option as stated.
type SyntheticOption struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// SyntheticQuery is one compiled workload query: its text (empty for the
// generated k-way workloads), weight and the model attributes it counts.
type SyntheticQuery struct {
	Text   string  `json:"text,omitempty"`
	Weight float64 `json:"weight"`
	Attrs  []int   `json:"attrs"`
}

// syntheticKey is the record key of table id.
func syntheticKey(id uint64) []byte { return u64(id) }

// PutSynthetic stores the records of the synthetic table rec.TableID: rec
// itself, the model (nil for none) and the release. Call it in the
// transaction that creates the table. model and release are the values or
// references StageBlob returned for them. It takes them over (PutOwned):
// the caller must not use them, or memory past their length, afterwards.
func (tx *Tx) PutSynthetic(rec *Synthetic, model, release []byte) error {
	if rec.TableID == 0 {
		return fmt.Errorf("catalog: synthetic table %s.%s has no table ID", rec.DB, rec.Name)
	}
	r := *rec
	r.Version = SyntheticVersion
	enc, err := json.Marshal(&r)
	if err != nil {
		return fmt.Errorf("catalog: encoding synthetic table %s.%s: %w", rec.DB, rec.Name, err)
	}
	key := syntheticKey(rec.TableID)
	if err := tx.Put(BucketSynthetic, key, enc); err != nil {
		return err
	}
	if model != nil {
		if err := tx.PutOwned(BucketSyntheticModel, key, model); err != nil {
			return err
		}
	}
	return tx.PutOwned(BucketSyntheticRelease, key, release)
}

// Synthetic returns the record of synthetic table id; ok is false when id
// is not a synthetic table.
func (tx *Tx) Synthetic(id uint64) (rec *Synthetic, ok bool, err error) {
	b, err := tx.Get(BucketSynthetic, syntheticKey(id))
	if err != nil || b == nil {
		return nil, false, err
	}
	rec, err = decodeSynthetic(b)
	if err != nil {
		return nil, false, err
	}
	return rec, true, nil
}

func decodeSynthetic(b []byte) (*Synthetic, error) {
	var rec Synthetic
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, fmt.Errorf("catalog: decoding synthetic table record: %w", err)
	}
	if rec.Version < 1 || rec.Version > SyntheticVersion {
		return nil, fmt.Errorf("%w: %d (this build reads up to %d)", ErrSyntheticVersion, rec.Version, SyntheticVersion)
	}
	return &rec, nil
}

// SyntheticModel returns the stored model of synthetic table id, or nil if
// it has none.
func (tx *Tx) SyntheticModel(id uint64) ([]byte, error) {
	return tx.getResolved(BucketSyntheticModel, syntheticKey(id))
}

// SyntheticRelease returns the stored release of synthetic table id, or nil
// if it has none.
func (tx *Tx) SyntheticRelease(id uint64) ([]byte, error) {
	return tx.getResolved(BucketSyntheticRelease, syntheticKey(id))
}

// ForEachSynthetic calls fn with every synthetic-table record, in table ID
// order (creation order), including orphans (see SyntheticLive).
func (tx *Tx) ForEachSynthetic(fn func(*Synthetic) error) error {
	return tx.ForEach(BucketSynthetic, func(_, v []byte) error {
		rec, err := decodeSynthetic(v)
		if err != nil {
			return err
		}
		return fn(rec)
	})
}

// SyntheticLive reports whether rec's table still exists under the name
// the record gives: false for the orphaned record of a dropped table.
func (tx *Tx) SyntheticLive(rec *Synthetic) bool {
	id, ok := tx.TableID(rec.DB, rec.Name)
	return ok && id == rec.TableID
}

// DeleteSynthetic removes the records of table id (nothing if it is not a
// synthetic table). It never touches any privacy ledger: dropping a
// synthetic table refunds nothing.
func (tx *Tx) DeleteSynthetic(id uint64) error {
	key := syntheticKey(id)
	for _, b := range []string{BucketSyntheticModel, BucketSyntheticRelease} {
		if err := tx.dropBlobOf(b, key); err != nil {
			return err
		}
	}
	for _, b := range []string{BucketSynthetic, BucketSyntheticModel, BucketSyntheticRelease} {
		if err := tx.Delete(b, key); err != nil {
			return err
		}
	}
	return nil
}

// RenameSynthetic records a new name for synthetic table id after RENAME
// TABLE (nothing if id is not a synthetic table).
func (tx *Tx) RenameSynthetic(id uint64, db, name string) error {
	rec, ok, err := tx.Synthetic(id)
	if err != nil || !ok {
		return err
	}
	rec.DB, rec.Name = db, name
	enc, err := json.Marshal(rec)
	if err != nil {
		return fmt.Errorf("catalog: encoding synthetic table %s.%s: %w", db, name, err)
	}
	return tx.Put(BucketSynthetic, syntheticKey(id), enc)
}

// SweepSynthetic deletes the records of every synthetic table that no
// longer exists (dropped with its database, or left by a crash) and
// returns how many it removed.
func (tx *Tx) SweepSynthetic() (int, error) {
	var dead []uint64
	err := tx.ForEachSynthetic(func(rec *Synthetic) error {
		if !tx.SyntheticLive(rec) {
			dead = append(dead, rec.TableID)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	for _, id := range dead {
		if err := tx.DeleteSynthetic(id); err != nil {
			return 0, err
		}
	}
	return len(dead), nil
}

// Store returns the store d belongs to, for callers that must write
// metadata in the transaction of a table operation (dropping a synthetic
// table together with its records).
func (d *Database) Store() *Store { return d.s }

// RenameTable renames table oldName of database db to newName, in tx, so
// that records keyed by its ID can be updated in the same transaction.
func (tx *Tx) RenameTable(db, oldName, newName string) error {
	return tx.s.renameTableTx(tx.tx, db, oldName, newName)
}
