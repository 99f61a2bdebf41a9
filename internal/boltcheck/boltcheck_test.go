package boltcheck

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"

	"go.etcd.io/bbolt"
)

// makeDB writes a bbolt file with nested, inline and large buckets, values
// spanning overflow pages and enough keys for branch pages, then deletes
// some keys so that the freelist is not empty. It returns the file's bytes.
func makeDB(t testing.TB) []byte {
	t.Helper()
	path := filepath.Join(t.TempDir(), "x.db")
	db, err := bbolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 1))
	err = db.Update(func(tx *bbolt.Tx) error {
		big, err := tx.CreateBucket([]byte("big"))
		if err != nil {
			return err
		}
		for i := range 3000 {
			v := make([]byte, rng.IntN(60))
			for j := range v {
				v[j] = byte(rng.IntN(256))
			}
			if err := big.Put(binary.BigEndian.AppendUint64(nil, uint64(i)), v); err != nil {
				return err
			}
		}
		nested, err := big.CreateBucket([]byte("nested"))
		if err != nil {
			return err
		}
		for i := range 40 {
			sub, err := nested.CreateBucket([]byte(fmt.Sprintf("sub%02d", i)))
			if err != nil {
				return err
			}
			if err := sub.Put([]byte("k"), []byte(strings.Repeat("v", i))); err != nil {
				return err
			}
		}
		blobs, err := tx.CreateBucket([]byte("blobs"))
		if err != nil {
			return err
		}
		if err := blobs.Put([]byte("model"), bytes.Repeat([]byte("0123456789"), 3000)); err != nil {
			return err
		}
		_, err = tx.CreateBucket([]byte("empty"))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bbolt.Tx) error {
		big := tx.Bucket([]byte("big"))
		for i := 0; i < 3000; i += 3 {
			if err := big.Delete(binary.BigEndian.AppendUint64(nil, uint64(i))); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func check(b []byte) *Result { return Check(bytes.NewReader(b), int64(len(b)), 20) }

func TestCheckAcceptsHealthyFile(t *testing.T) {
	b := makeDB(t)
	r := check(b)
	if !r.OK() {
		t.Fatalf("healthy file: %v", r.Problems)
	}
	if r.Active.PageSize == 0 || r.Pages < 10 {
		t.Errorf("result = %+v", r)
	}
}

func TestCheckRefusesTruncations(t *testing.T) {
	b := makeDB(t)
	r := check(b)
	ps := r.Active.PageSize
	used := int(r.Pages) * ps // bbolt may grow the file past what it uses
	if !check(b[:used]).OK() {
		t.Fatalf("the %d bytes in use do not pass", used)
	}
	for _, n := range []int{0, 1, 15, 100, ps - 1, ps, ps + 80, 2 * ps, 3*ps + 7, used / 2, used - ps, used - 1} {
		r := check(b[:n])
		if r.OK() {
			t.Errorf("file truncated to %d of %d bytes passed", n, used)
			continue
		}
		if n > 2*ps && !strings.Contains(r.Summary(), "truncated") {
			t.Errorf("truncated to %d: %q does not say truncated", n, r.Summary())
		}
	}
}

func TestCheckRefusesDamagedMeta(t *testing.T) {
	b := makeDB(t)
	ps := check(b).Active.PageSize
	for _, off := range []int{0, 8, 16, 20, 24, 40, 56, 64, 72, ps + 16, ps + 60} {
		d := bytes.Clone(b)
		d[off] ^= 0x40
		if r := check(d); r.OK() {
			t.Errorf("flip at byte %d passed", off)
		}
	}
}

// TestCheckFlipsNeverCrashBbolt flips random bytes: Check must not panic,
// and whenever it passes a file, bbolt must be able to open it, read every
// key and value and run Tx.Check without a fault or a panic.
func TestCheckFlipsNeverCrashBbolt(t *testing.T) {
	b := makeDB(t)
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(7, 7))
	rounds := 300
	if testing.Short() {
		rounds = 50
	}
	caught := 0
	for round := range rounds {
		d := bytes.Clone(b)
		flips := 1 + rng.IntN(2000)
		if round%3 == 0 {
			flips = 1 + rng.IntN(4)
		}
		for range flips {
			d[rng.IntN(len(d))] ^= byte(1 + rng.IntN(255))
		}
		r := check(d)
		if !r.OK() {
			caught++
			continue
		}
		path := filepath.Join(dir, fmt.Sprintf("r%d.db", round))
		if err := os.WriteFile(path, d, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := readAll(path); err != nil {
			t.Errorf("round %d (%d flips): Check passed but bbolt failed: %v", round, flips, err)
		}
	}
	if caught == 0 {
		t.Error("no damaged file was caught")
	}
}

// readAll opens path with bbolt and reads everything, turning faults and
// panics into errors.
func readAll(path string) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true})
	if err != nil {
		return nil // a refusal is fine; a crash is not
	}
	defer db.Close()
	return db.View(func(tx *bbolt.Tx) error {
		var walk func(b *bbolt.Bucket)
		walk = func(b *bbolt.Bucket) {
			_ = b.ForEach(func(k, v []byte) error {
				if v == nil {
					if sub := b.Bucket(k); sub != nil {
						walk(sub)
					}
				}
				return nil
			})
		}
		_ = tx.ForEach(func(_ []byte, b *bbolt.Bucket) error { walk(b); return nil })
		for range tx.Check() {
		}
		return nil
	})
}
