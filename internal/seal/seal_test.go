package seal

import (
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"testing"

	"go.etcd.io/bbolt"
)

func TestSealOpen(t *testing.T) {
	for _, payload := range [][]byte{{}, []byte("x"), bytes.Repeat([]byte("abc"), 1000)} {
		s := Seal([]byte("key"), payload)
		if len(s) != len(payload)+Size {
			t.Fatalf("sealed length %d", len(s))
		}
		got, ok := Open([]byte("key"), s)
		if !ok || !bytes.Equal(got, payload) {
			t.Fatalf("Open = %q, %v", got, ok)
		}
		if _, ok := Open([]byte("kez"), s); ok {
			t.Error("a value opened under another key")
		}
		if in := InPlace([]byte("key"), bytes.Clone(payload)); !bytes.Equal(in, s) {
			t.Fatalf("InPlace = %q, want %q", in, s)
		}
		// Append seals after what dst holds, leaving it intact.
		a := Append([]byte("head"), []byte("key"), payload)
		if !bytes.Equal(a[:4], []byte("head")) || !bytes.Equal(a[4:], s) {
			t.Fatalf("Append = %q, want head + %q", a, s)
		}
		for i := range s {
			d := bytes.Clone(s)
			d[i] ^= 1
			if _, ok := Open([]byte("key"), d); ok {
				t.Fatalf("flip at byte %d of %d not detected", i, len(s))
			}
		}
	}
	if p, ok := Open([]byte("k"), nil); p != nil || !ok {
		t.Error("a missing value does not open to nil")
	}
	for _, short := range [][]byte{{}, {1, 2, 3}} {
		if _, ok := Open([]byte("k"), short); ok {
			t.Errorf("%d-byte value opened", len(short))
		}
	}
}

func TestErrorMatches(t *testing.T) {
	kind := errors.New("pkg: corrupt")
	err := error(&Error{What: "ledger entry 3", Kind: kind})
	if !errors.Is(err, ErrChecksum) || !errors.Is(err, kind) {
		t.Errorf("%v does not match its sentinels", err)
	}
	for _, want := range []string{"ledger entry 3", "dpsql check", "dpsql backup"} {
		if !bytes.Contains([]byte(err.Error()), []byte(want)) {
			t.Errorf("%q lacks %q", err, want)
		}
	}
}

func TestSealBucket(t *testing.T) {
	db, err := bbolt.Open(filepath.Join(t.TempDir(), "x.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	want := map[string]string{}
	err = db.Update(func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucket([]byte("b"))
		if err != nil {
			return err
		}
		for i := range 10000 { // more than one chunk
			k, v := fmt.Sprintf("k%05d", i), fmt.Sprintf("value %d", i)
			want[k] = v
			if err := b.Put([]byte(k), []byte(v)); err != nil {
				return err
			}
		}
		sub, err := b.CreateBucket([]byte("k05000x"))
		if err != nil {
			return err
		}
		if err := sub.Put([]byte("nested"), []byte{}); err != nil {
			return err
		}
		return SealBucket(b)
	})
	if err != nil {
		t.Fatal(err)
	}
	err = db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte("b"))
		n := 0
		err := b.ForEach(func(k, v []byte) error {
			if v == nil {
				return nil
			}
			n++
			p, ok := Open(k, v)
			if !ok || string(p) != want[string(k)] {
				return fmt.Errorf("%s = %q, %v", k, p, ok)
			}
			return nil
		})
		if err != nil {
			return err
		}
		if n != 10000 {
			return fmt.Errorf("%d values", n)
		}
		if p, ok := Open([]byte("nested"), b.Bucket([]byte("k05000x")).Get([]byte("nested"))); !ok || len(p) != 0 {
			return fmt.Errorf("nested value %q, %v", p, ok)
		}
		return nil
	})
	if err != nil {
		t.Error(err)
	}
}
