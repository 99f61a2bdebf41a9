package catalog

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"

	"github.com/dpsql/dpsql/catalog/domain"
)

func TestSyntheticRecords(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir)
	ctx := context.Background()
	if err := s.Update(ctx, func(tx *Tx) error { return tx.CreateDatabase("syn") }); err != nil {
		t.Fatal(err)
	}
	col, err := domain.NewIntRange("a", 0, 3, false)
	if err != nil {
		t.Fatal(err)
	}
	sch := sql.NewPrimaryKeySchema(sql.Schema{{Name: "a", Type: types.Int64}})
	seed := int64(7)
	create := func(name string) *Synthetic {
		t.Helper()
		want := &Synthetic{
			DB: "syn", Name: name, SourceID: 3, SourceDB: "raw", SourceName: "t",
			Mechanism: "aim", Output: "synthetic data",
			Options: []SyntheticOption{{Name: "ROUNDS", Value: "5"}}, Seed: &seed,
			Epsilon: 1, Delta: 1e-9, Rho: 0.015, RhoUsed: 0.015, LedgerEntry: 2,
			Rows: 2, Rounds: 5, ModelSize: 0.5,
			CreatedAt: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC), User: "u@%",
			Statement: "CREATE SYNTHETIC TABLE ...",
			Domain:    domain.Table{Columns: []domain.Column{col}},
			Workload:  []SyntheticQuery{{Text: "SELECT a, COUNT(*) FROM t GROUP BY a", Weight: 2, Attrs: []int{0}}},
		}
		id, err := s.CreateTableWithRows(ctx, "syn", name, sch, []sql.Row{{int64(1)}, {int64(2)}}, func(tx *Tx) error {
			id, ok := tx.TableID("syn", name)
			if !ok {
				return errors.New("new table not visible in its own transaction")
			}
			want.TableID = id
			return tx.PutSynthetic(want, []byte("model-"+name), []byte("release-"+name))
		})
		if err != nil {
			t.Fatal(err)
		}
		if id != want.TableID {
			t.Fatalf("ID %d, record says %d", id, want.TableID)
		}
		want.Version = SyntheticVersion
		return want
	}
	a, b := create("a"), create("b")

	// Records survive a reopen unchanged.
	closeChecked(t, s)
	s = mustOpen(t, dir)
	err = s.View(ctx, func(tx *Tx) error {
		for _, want := range []*Synthetic{a, b} {
			got, ok, err := tx.Synthetic(want.TableID)
			if err != nil || !ok {
				t.Fatalf("Synthetic(%d) = %v, %v", want.TableID, ok, err)
			}
			if !reflect.DeepEqual(got.Domain.Sizes(), want.Domain.Sizes()) {
				t.Errorf("domain sizes %v, want %v", got.Domain.Sizes(), want.Domain.Sizes())
			}
			got.Domain, want.Domain = domain.Table{}, domain.Table{}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("record\n got %+v\nwant %+v", got, want)
			}
			if m, _ := tx.SyntheticModel(want.TableID); string(m) != "model-"+want.Name {
				t.Errorf("model = %q", m)
			}
			if r, _ := tx.SyntheticRelease(want.TableID); string(r) != "release-"+want.Name {
				t.Errorf("release = %q", r)
			}
			if !tx.SyntheticLive(got) {
				t.Errorf("%s not live", want.Name)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	// Rename moves the record with the table; drop + delete removes it.
	err = s.Update(ctx, func(tx *Tx) error {
		if err := tx.RenameTable("syn", "a", "a2"); err != nil {
			return err
		}
		if err := tx.RenameSynthetic(a.TableID, "syn", "a2"); err != nil {
			return err
		}
		if err := tx.DropTable("syn", "b"); err != nil {
			return err
		}
		return tx.DeleteSynthetic(b.TableID)
	})
	if err != nil {
		t.Fatal(err)
	}
	names := listSynthetic(t, s)
	if want := []string{"a2"}; !reflect.DeepEqual(names, want) {
		t.Fatalf("records after rename and drop = %v, want %v", names, want)
	}
	err = s.View(ctx, func(tx *Tx) error {
		if m, _ := tx.SyntheticModel(b.TableID); m != nil {
			t.Error("model of a dropped table kept")
		}
		if r, _ := tx.SyntheticRelease(b.TableID); r != nil {
			t.Error("release of a dropped table kept")
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}

	// A table dropped without its records (DROP DATABASE) leaves an orphan
	// that SweepSynthetic removes; a live table is kept.
	c := create("c")
	if err := s.Update(ctx, func(tx *Tx) error { return tx.DropTable("syn", "c") }); err != nil {
		t.Fatal(err)
	}
	var swept int
	err = s.Update(ctx, func(tx *Tx) error {
		rec, ok, err := tx.Synthetic(c.TableID)
		if err != nil || !ok || tx.SyntheticLive(rec) {
			t.Errorf("orphan: ok=%v live=%v err=%v", ok, ok && tx.SyntheticLive(rec), err)
		}
		swept, err = tx.SweepSynthetic()
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if names := listSynthetic(t, s); swept != 1 || !reflect.DeepEqual(names, []string{"a2"}) {
		t.Fatalf("sweep removed %d, left %v; want 1 and [a2]", swept, names)
	}
}

func listSynthetic(t *testing.T, s *Store) []string {
	t.Helper()
	var names []string
	err := s.View(context.Background(), func(tx *Tx) error {
		return tx.ForEachSynthetic(func(r *Synthetic) error { names = append(names, r.Name); return nil })
	})
	if err != nil {
		t.Fatal(err)
	}
	return names
}

func TestSyntheticRecordVersion(t *testing.T) {
	s := mustOpen(t, "")
	ctx := context.Background()
	err := s.Update(ctx, func(tx *Tx) error {
		return tx.Put(BucketSynthetic, syntheticKey(9), []byte(`{"version": 99}`))
	})
	if err != nil {
		t.Fatal(err)
	}
	err = s.View(ctx, func(tx *Tx) error {
		_, _, err := tx.Synthetic(9)
		return err
	})
	if !errors.Is(err, ErrSyntheticVersion) {
		t.Fatalf("err = %v, want ErrSyntheticVersion", err)
	}
	err = s.Update(ctx, func(tx *Tx) error {
		return tx.PutSynthetic(&Synthetic{DB: "x", Name: "y"}, nil, nil)
	})
	if err == nil {
		t.Fatal("PutSynthetic accepted a record without a table ID")
	}
}
