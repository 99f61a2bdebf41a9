package budget

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"

	"go.etcd.io/bbolt"

	"github.com/dpsql/dpsql/internal/format1"
	"github.com/dpsql/dpsql/internal/seal"
)

// format1File is a data file written by the last dpsql whose ledger had
// format "1" (unsealed records): raw.people (table ID 1) has a budget and
// three entries.
func format1File(t *testing.T) string {
	t.Helper()
	b, err := format1.File()
	if err != nil {
		t.Fatal(err)
	}
	path := tempPath(t)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// allSealed reports the ledger values of db that are not sealed.
func allSealed(t *testing.T, db *bbolt.DB) []string {
	t.Helper()
	var bad []string
	var walk func(name string, b *bbolt.Bucket)
	walk = func(name string, b *bbolt.Bucket) {
		b.ForEach(func(k, v []byte) error {
			if v == nil {
				walk(name+"/"+string(k), b.Bucket(k))
			} else if _, ok := seal.Open(k, v); !ok {
				bad = append(bad, name+"/"+string(k))
			}
			return nil
		})
	}
	db.View(func(tx *bbolt.Tx) error {
		for _, n := range [][]byte{metaBucket, tablesBucket, entriesBucket} {
			walk(string(n), tx.Bucket(n))
		}
		return nil
	})
	return bad
}

// TestMigrateFormat1 opens a format "1" ledger: read-only it is read as
// is; read-write it is migrated, every record sealed, with the same
// budgets and entries, and it keeps working.
func TestMigrateFormat1(t *testing.T) {
	path := format1File(t)
	ro, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	l, err := OpenLedger(ro)
	if err != nil {
		t.Fatalf("read-only OpenLedger: %v", err)
	}
	if err := l.Check(); err != nil {
		t.Errorf("Check of the format 1 ledger: %v", err)
	}
	before, err := l.Entries("", "")
	if err != nil {
		t.Fatal(err)
	}
	budgets, err := l.Budgets()
	if err != nil {
		t.Fatal(err)
	}
	ro.Close()
	if len(before) != 3 || len(budgets) != 1 || budgets[0].Name != "raw.people" {
		t.Fatalf("format 1 ledger: %d entries, budgets %+v", len(before), budgets)
	}

	db, l := mustOpen(t, path)
	if bad := allSealed(t, db); len(bad) > 0 {
		t.Errorf("unsealed after migration: %v", bad)
	}
	after, err := l.Entries("", "")
	if err != nil {
		t.Fatal(err)
	}
	if len(after) != len(before) {
		t.Fatalf("%d entries after migration, %d before", len(after), len(before))
	}
	for i := range after {
		if after[i] != before[i] {
			t.Errorf("entry %d: %+v, was %+v", i, after[i], before[i])
		}
	}
	if b2, err := l.Budgets(); err != nil || len(b2) != 1 || b2[0] != budgets[0] {
		t.Errorf("budgets after migration: %+v, %v; was %+v", b2, err, budgets)
	}
	mustReserve(t, l, budgets[0].Table, "bob@%", 0.001).Commit("")
	if n, _ := l.Entries(budgets[0].Table, ""); len(n) != 4 {
		t.Errorf("%d entries after a new charge", len(n))
	}
}

// TestCorruptRecordsAreRefused damages a budget and a ledger entry in the
// file: reads fail with ErrCorrupt naming the record, Check reports it,
// and nothing is charged against a damaged budget.
func TestCorruptRecordsAreRefused(t *testing.T) {
	path := tempPath(t)
	db := openDB(t, path)
	l, err := OpenLedger(db)
	if err != nil {
		t.Fatal(err)
	}
	mustSet(t, l, "7", 1, 1e-9)
	mustReserve(t, l, "7", "ann@%", 0.004).Commit("first release marker")
	mustSet(t, l, "8", 2, 1e-9)
	db.Close()

	file, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	damage := func(marker string) string {
		d := bytes.Clone(file)
		n := 0
		for off := 0; ; n++ {
			i := bytes.Index(d[off:], []byte(marker))
			if i < 0 {
				break
			}
			d[off+i+len(marker)/2] ^= 0x01
			off += i + len(marker)
		}
		if n == 0 {
			t.Fatalf("%q not in the file", marker)
		}
		p := tempPath(t)
		if err := os.WriteFile(p, d, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}

	t.Run("entry", func(t *testing.T) {
		db := openDB(t, damage("first release marker"))
		defer db.Close()
		l, err := OpenLedger(db)
		if err != nil {
			t.Fatal(err)
		}
		_, err = l.Entries("7", "")
		if !errors.Is(err, ErrCorrupt) || !errors.Is(err, seal.ErrChecksum) {
			t.Fatalf("Entries: %v, want ErrCorrupt", err)
		}
		for _, want := range []string{"ledger entry 2 of table 7", "dpsql check", "dpsql backup"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%q lacks %q", err, want)
			}
		}
		if err := l.Check(); !errors.Is(err, ErrCorrupt) {
			t.Errorf("Check: %v", err)
		}
		if _, err := l.Entries("8", ""); err != nil {
			t.Errorf("an intact ledger: %v", err)
		}
	})
	t.Run("budget", func(t *testing.T) {
		db := openDB(t, damage(`"name of 8"`))
		defer db.Close()
		l, err := OpenLedger(db)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Budget("8"); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "privacy budget of table 8") {
			t.Errorf("Budget: %v", err)
		}
		if _, err := l.Budgets(); !errors.Is(err, ErrCorrupt) {
			t.Errorf("Budgets: %v", err)
		}
		if _, err := l.SetBudget(t.Context(), "8", "x", "owner", "s", 3, 1e-9); !errors.Is(err, ErrCorrupt) {
			t.Errorf("SetBudget over a damaged budget: %v", err)
		}
		if bi, err := l.Budget("7"); err != nil || bi.EpsilonTotal != 1 {
			t.Errorf("an intact budget: %+v, %v", bi, err)
		}
	})
	t.Run("format", func(t *testing.T) {
		p := tempPath(t)
		db := openDB(t, p)
		if _, err := OpenLedger(db); err != nil {
			t.Fatal(err)
		}
		db.Update(func(tx *bbolt.Tx) error {
			v := bytes.Clone(tx.Bucket(metaBucket).Get(formatKey))
			v[0] ^= 0x01
			return tx.Bucket(metaBucket).Put(formatKey, v)
		})
		if _, err := OpenLedger(db); !errors.Is(err, ErrCorrupt) {
			t.Errorf("OpenLedger with a damaged format record: %v", err)
		}
		db.Close()
	})
}
