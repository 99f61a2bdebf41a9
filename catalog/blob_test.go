package catalog

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"go.etcd.io/bbolt"

	"github.com/dpsql/dpsql/catalog/domain"
	"github.com/dpsql/dpsql/internal/seal"
)

// smallBlobs makes blobs of more than 100 bytes staged in chunks of 1000
// for the test, with a collection after each chunk from 5000.
func smallBlobs(t *testing.T) {
	chunk, inline, collect := blobChunk, blobInline, blobCollect
	blobChunk, blobInline, blobCollect = 1000, 100, 5000
	t.Cleanup(func() { blobChunk, blobInline, blobCollect = chunk, inline, collect })
}

func randomBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// blobChunks counts the chunks in the store, by blob ID.
func blobChunks(t *testing.T, s *Store) map[uint64]int {
	t.Helper()
	n := map[uint64]int{}
	err := s.db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket([]byte(metaPrefix + BucketBlob))
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, _ []byte) error {
			n[binary.BigEndian.Uint64(k)]++
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// createSynthetic creates table syn.name with a synthetic record whose
// model and release are as given (values or references).
func createSynthetic(t *testing.T, s *Store, name string, model, release []byte) uint64 {
	t.Helper()
	ctx := context.Background()
	_ = s.Update(ctx, func(tx *Tx) error { return tx.CreateDatabase("syn") })
	col, err := domain.NewIntRange("a", 0, 3, false)
	if err != nil {
		t.Fatal(err)
	}
	sch := sql.NewPrimaryKeySchema(sql.Schema{{Name: "a", Type: types.Int64}})
	rec := &Synthetic{DB: "syn", Name: name, Mechanism: "aim", Output: "synthetic data", Domain: domain.Table{Columns: []domain.Column{col}}}
	id, err := s.CreateTableWithRows(ctx, "syn", name, sch, []sql.Row{{int64(1)}}, func(tx *Tx) error {
		id, _ := tx.TableID("syn", name)
		rec.TableID = id
		return tx.PutSynthetic(rec, model, release)
	})
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestStageBlob: large values staged in chunks read back whole through the
// records that refer to them, across a reopen; small ones stay inline;
// dropping the table's records deletes the chunks; chunks no record
// refers to are deleted at the next Open.
func TestStageBlob(t *testing.T) {
	smallBlobs(t)
	rng := rand.New(rand.NewPCG(1, 2))
	dir := t.TempDir()
	s := mustOpen(t, dir)
	ctx := context.Background()

	for _, n := range []int{0, 99} {
		v := randomBytes(rng, n)
		ref, err := s.StageBlob(ctx, v)
		if err != nil || !bytes.Equal(ref, v) || IsBlobRef(ref) {
			t.Fatalf("%d bytes: staged as %d bytes (reference %v), %v; want the value itself", n, len(ref), IsBlobRef(ref), err)
		}
	}
	if got := blobChunks(t, s); len(got) != 0 {
		t.Fatalf("small values wrote chunks: %v", got)
	}

	sizes := []int{100, 1000, 1001, 5500}
	vals := make([][]byte, len(sizes))
	refs := make([][]byte, len(sizes))
	for i, n := range sizes {
		vals[i] = randomBytes(rng, n)
		ref, err := s.StageBlob(ctx, vals[i])
		if err != nil {
			t.Fatal(err)
		}
		if !IsBlobRef(ref) {
			t.Fatalf("%d bytes: not staged", n)
		}
		refs[i] = ref
	}
	got := blobChunks(t, s)
	for i, n := range sizes {
		id, _, _ := parseBlobRef(refs[i])
		if want := (n + 999) / 1000; got[id] != want {
			t.Errorf("%d bytes in %d chunks, want %d", n, got[id], want)
		}
	}

	// Blobs 0 and 1 are the model and release of a, 2 of b; 3 is staged
	// and never referenced.
	a := createSynthetic(t, s, "a", refs[0], refs[1])
	b := createSynthetic(t, s, "b", nil, refs[2])
	closeChecked(t, s)
	s = mustOpen(t, dir)
	err := s.View(ctx, func(tx *Tx) error {
		for _, c := range []struct {
			read func(uint64) ([]byte, error)
			id   uint64
			want []byte
		}{{tx.SyntheticModel, a, vals[0]}, {tx.SyntheticRelease, a, vals[1]}, {tx.SyntheticRelease, b, vals[2]}, {tx.SyntheticModel, b, nil}} {
			v, err := c.read(c.id)
			if err != nil || !bytes.Equal(v, c.want) {
				t.Errorf("table %d: read %d bytes (%v), want %d", c.id, len(v), err, len(c.want))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	id3, _, _ := parseBlobRef(refs[3])
	if got := blobChunks(t, s); got[id3] != 0 || len(got) != 3 {
		t.Fatalf("after reopen: chunks %v; want blob %d swept and the three referenced ones kept", got, id3)
	}
	if problems, err := s.Verify(); err != nil || len(problems) > 0 {
		t.Fatalf("Verify: %v %v", problems, err)
	}

	// Dropping a's records deletes its chunks, not b's.
	if err := s.Update(ctx, func(tx *Tx) error { return tx.DeleteSynthetic(a) }); err != nil {
		t.Fatal(err)
	}
	idB, _, _ := parseBlobRef(refs[2])
	if got := blobChunks(t, s); len(got) != 1 || got[idB] != 2 {
		t.Fatalf("after dropping a: chunks %v, want only blob %d's", got, idB)
	}

	// DropBlob of a staged, unreferenced blob; IDs are never reused.
	ref, err := s.StageBlob(ctx, randomBytes(rng, 2500))
	if err != nil {
		t.Fatal(err)
	}
	if id, _, _ := parseBlobRef(ref); id <= id3 {
		t.Errorf("blob ID %d reused (last was %d)", id, id3)
	}
	if err := s.DropBlob(ctx, ref); err != nil {
		t.Fatal(err)
	}
	if got := blobChunks(t, s); len(got) != 1 {
		t.Fatalf("after DropBlob: chunks %v", got)
	}
}

// TestStageBlobCancelled: a cancelled write leaves no chunk behind.
func TestStageBlobCancelled(t *testing.T) {
	smallBlobs(t)
	s := mustOpen(t, "")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.StageBlob(ctx, make([]byte, 3000)); !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled StageBlob: %v", err)
	}
	if got := blobChunks(t, s); len(got) != 0 {
		t.Fatalf("chunks left: %v", got)
	}
}

// TestStageFrom: a value written in pieces of any size is staged as
// StageBlob stages it whole (the same chunks, read back the same through a
// record); a short one comes back as it is; a failed, cancelled or aborted
// write leaves no chunk behind.
func TestStageFrom(t *testing.T) {
	smallBlobs(t)
	rng := rand.New(rand.NewPCG(3, 4))
	s := mustOpen(t, "")
	ctx := context.Background()
	write := func(ctx context.Context, v []byte, piece int) ([]byte, error) {
		return s.StageFrom(ctx, func(w io.Writer) (int64, error) {
			for off := 0; off < len(v); off += piece {
				if _, err := w.Write(v[off:min(off+piece, len(v))]); err != nil {
					return int64(off), err
				}
			}
			return int64(len(v)), nil
		})
	}
	for _, tt := range []struct{ n, piece int }{
		{0, 1}, {99, 7}, {99, 1000}, {100, 1}, {999, 333}, {1000, 1000}, {1001, 1}, {5500, 64}, {5500, 5500}, {7321, 2999},
	} {
		v := randomBytes(rng, tt.n)
		ref, err := write(ctx, v, tt.piece)
		if err != nil {
			t.Fatalf("%d bytes in pieces of %d: %v", tt.n, tt.piece, err)
		}
		if tt.n < 100 {
			if !bytes.Equal(ref, v) || IsBlobRef(ref) {
				t.Fatalf("%d bytes: %d bytes back (reference %v), want the value itself", tt.n, len(ref), IsBlobRef(ref))
			}
			continue
		}
		id, n, ok := parseBlobRef(ref)
		if !ok || n != tt.n {
			t.Fatalf("%d bytes in pieces of %d: reference %v to %d bytes", tt.n, tt.piece, ok, n)
		}
		if got, want := blobChunks(t, s)[id], (tt.n+999)/1000; got != want {
			t.Errorf("%d bytes in pieces of %d: %d chunks, want %d", tt.n, tt.piece, got, want)
		}
		name := fmt.Sprintf("w%d_%d", tt.n, tt.piece)
		table := createSynthetic(t, s, name, ref, nil)
		err = s.View(ctx, func(tx *Tx) error {
			got, err := tx.SyntheticModel(table)
			if err != nil || !bytes.Equal(got, v) {
				t.Errorf("%s: read %d bytes back (%v), want the %d written", name, len(got), err, len(v))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Update(ctx, func(tx *Tx) error { return tx.DeleteSynthetic(table) }); err != nil {
			t.Fatal(err)
		}
	}
	if got := blobChunks(t, s); len(got) != 0 {
		t.Fatalf("chunks left after the records were deleted: %v", got)
	}

	// The encoder fails after two chunks: StageFrom returns its error and
	// deletes them.
	errEncoder := errors.New("encoder failed")
	if _, err := s.StageFrom(ctx, func(w io.Writer) (int64, error) {
		n, err := w.Write(randomBytes(rng, 2500))
		if err == nil && len(blobChunks(t, s)) != 1 {
			t.Errorf("after 2500 bytes: chunks %v, want two of one blob", blobChunks(t, s))
		}
		return int64(n), errors.Join(err, errEncoder)
	}); !errors.Is(err, errEncoder) {
		t.Fatalf("StageFrom with a failing encoder: %v", err)
	}
	if got := blobChunks(t, s); len(got) != 0 {
		t.Fatalf("a failed encoder left chunks: %v", got)
	}

	// Cancelled after two chunks: the write fails, abort deletes them.
	cctx, cancel := context.WithCancel(ctx)
	w := s.newBlobWriter(cctx)
	if _, err := w.Write(randomBytes(rng, 2500)); err != nil {
		t.Fatal(err)
	}
	if got := blobChunks(t, s); len(got) != 1 {
		t.Fatalf("after 2500 bytes: chunks %v, want two of one blob", got)
	}
	cancel()
	if _, err := w.Write(randomBytes(rng, 1000)); !errors.Is(err, context.Canceled) {
		t.Fatalf("write after cancel: %v", err)
	}
	if _, err := w.close(); !errors.Is(err, context.Canceled) {
		t.Fatalf("close after a failed write: %v", err)
	}
	w.abort()
	if got := blobChunks(t, s); len(got) != 0 {
		t.Fatalf("cancelled writer left chunks: %v", got)
	}

	// Aborted by its caller.
	w = s.newBlobWriter(ctx)
	if _, err := w.Write(randomBytes(rng, 3500)); err != nil {
		t.Fatal(err)
	}
	w.abort()
	if got := blobChunks(t, s); len(got) != 0 {
		t.Fatalf("aborted writer left chunks: %v", got)
	}
	if _, err := w.close(); err == nil {
		t.Fatal("close after abort succeeded")
	}
}

// TestBlobDamage: a changed or missing chunk fails the read with
// ErrCorrupt and is reported by Verify; it is never served.
func TestBlobDamage(t *testing.T) {
	smallBlobs(t)
	rng := rand.New(rand.NewPCG(3, 4))
	for _, damage := range []string{"changed", "missing", "extra"} {
		t.Run(damage, func(t *testing.T) {
			s := mustOpen(t, "")
			ctx := context.Background()
			v := randomBytes(rng, 3500)
			ref, err := s.StageBlob(ctx, v)
			if err != nil {
				t.Fatal(err)
			}
			id := createSynthetic(t, s, "a", nil, ref)
			blobID, _, _ := parseBlobRef(ref)
			err = s.db.Update(func(tx *bbolt.Tx) error {
				b := tx.Bucket([]byte(metaPrefix + BucketBlob))
				switch damage {
				case "changed":
					k := blobKey(blobID, 2)
					cb := b.Bucket(k)
					c := bytes.Clone(cb.Get(k))
					c[17] ^= 4
					return cb.Put(k, c)
				case "missing":
					return b.DeleteBucket(blobKey(blobID, 1))
				default:
					k := blobKey(blobID, 4)
					cb, err := b.CreateBucket(k)
					if err != nil {
						return err
					}
					return cb.Put(k, seal.Seal(k, []byte("more")))
				}
			})
			if err != nil {
				t.Fatal(err)
			}
			err = s.View(ctx, func(tx *Tx) error {
				got, err := tx.SyntheticRelease(id)
				if got != nil || !errors.Is(err, ErrCorrupt) {
					t.Errorf("read %d bytes, error %v; want nothing and ErrCorrupt", len(got), err)
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			problems, err := s.Verify()
			if err != nil || len(problems) == 0 || !strings.Contains(strings.Join(problems, "\n"), "blob") {
				t.Errorf("Verify: %q %v; want a problem with the blob", problems, err)
			}
			// Repair for the cleanup's check: drop the table's records.
			if err := s.Update(ctx, func(tx *Tx) error { return tx.DeleteSynthetic(id) }); err != nil {
				t.Fatal(err)
			}
		})
	}
}
