package catalog

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"

	"go.etcd.io/bbolt"

	"github.com/dpsql/dpsql/internal/seal"
)

// Large values (blobs).
//
// bbolt writes every value a transaction puts into pages allocated for the
// commit, all of them before the first is written to the file. A value of
// a hundred megabytes (an AIM model and its release at a large ε) is then
// held twice at the commit: by the caller and in those pages. StageBlob
// writes such a value ahead of the transaction that records it, in chunks
// of blobChunk bytes, each in a transaction of its own, and returns a
// small reference that the recording transaction stores in the value's
// place (from format version 3). Readers of records that may be staged
// (SyntheticModel, SyntheticRelease) resolve references transparently;
// deleting such a record deletes its chunks.
//
// A crash or an error between the chunks and the transaction that
// references them leaves chunks no record points to: Open deletes them,
// and the engine drops a staged blob whose record it could not write.
// Blob IDs come from the bucket's sequence and are never reused, so a
// reference can never point at a later blob.

// BucketBlob is the metadata bucket of blob chunks, keyed by the blob's
// ID (8 bytes, big-endian) and the chunk's index (4 bytes, big-endian).
// Each chunk is the one value, under the same key, of a bucket of its own:
// bbolt rewrites a whole leaf, values and all, when a key is added to it,
// so chunks side by side in one leaf would each be read back (through the
// file's mapping) and written again when the next one is added.
const BucketBlob = "blob"

// blobChunk is the size of a chunk, and blobInline the size below which
// StageBlob keeps a value as it is (variables for tests). A value of
// blobCollect bytes or more is written with a collection after each
// chunk: bbolt allocates each commit's pages afresh, and without one that
// garbage would accumulate up to the collector's target, twice the heap
// that holds the value.
var (
	blobChunk   = 4 << 20
	blobInline  = 1 << 20
	blobCollect = 16 << 20
)

// blobRefMagic starts a blob reference; no encoded model or release (nor
// any JSON record) starts with a NUL byte.
var blobRefMagic = []byte("\x00dpsql blob ref\x01")

// blobRefLen is the length of a reference: magic, ID, length.
var blobRefLen = len(blobRefMagic) + 8 + 8

func blobRef(id uint64, n int) []byte {
	ref := append(make([]byte, 0, blobRefLen+seal.Size), blobRefMagic...)
	ref = binary.BigEndian.AppendUint64(ref, id)
	return binary.BigEndian.AppendUint64(ref, uint64(n))
}

// parseBlobRef returns the blob a value refers to, or ok false if v is a
// value of its own.
func parseBlobRef(v []byte) (id uint64, n int, ok bool) {
	if len(v) != blobRefLen || !bytes.HasPrefix(v, blobRefMagic) {
		return 0, 0, false
	}
	p := v[len(blobRefMagic):]
	return binary.BigEndian.Uint64(p), int(binary.BigEndian.Uint64(p[8:])), true
}

// IsBlobRef reports whether v is a reference StageBlob returned.
func IsBlobRef(v []byte) bool {
	_, _, ok := parseBlobRef(v)
	return ok
}

// sealedBlobRef is parseBlobRef for a value as stored under key k (sealed),
// without copying or checksumming a value that cannot be a reference (an
// inline model of megabytes). A reference whose seal fails is not one: the
// checks of seals report it.
func sealedBlobRef(k, v []byte) (id uint64, n int, ok bool) {
	if len(v) != blobRefLen+seal.Size || !bytes.HasPrefix(v, blobRefMagic) {
		return 0, 0, false
	}
	p, ok := seal.Open(k, v)
	if !ok {
		return 0, 0, false
	}
	return parseBlobRef(p)
}

func blobKey(id uint64, chunk int) []byte {
	return binary.BigEndian.AppendUint32(binary.BigEndian.AppendUint64(make([]byte, 0, 12), id), uint32(chunk))
}

// StageBlob writes v in chunks, each committed on its own, and returns the
// reference to store in its place; a value of less than blobInline bytes
// is returned as it is. The caller may drop v once StageBlob returns, and
// must store the reference in one record (or DropBlob it): until a record
// refers to it, the next Open deletes it, and deleting a record deletes
// the blob it refers to. On an error nothing of v is left behind,
// except after a crash (again for Open to delete).
func (s *Store) StageBlob(ctx context.Context, v []byte) ([]byte, error) {
	if len(v) < blobInline {
		return v, nil
	}
	w := s.newBlobWriter(ctx)
	w.n, w.collect = len(v), len(v) >= blobCollect
	for off := 0; off < len(v); off += blobChunk {
		if err := w.commit(v[off:min(off+blobChunk, len(v))]); err != nil {
			return nil, err
		}
	}
	return blobRef(w.id, len(v)), nil
}

// StageFrom stages the value that write writes, as StageBlob stages a
// whole one, with the same chunks, reference and inline rule, committing
// each chunk as it fills: an encoder (an AIM model or release of tens of
// megabytes) never holds its whole encoding. On an error from write or a
// commit, nothing written is left behind.
func (s *Store) StageFrom(ctx context.Context, write func(io.Writer) (int64, error)) ([]byte, error) {
	w := s.newBlobWriter(ctx)
	if _, err := write(w); err != nil {
		w.abort()
		return nil, err
	}
	return w.close()
}

// blobWriter stages a value written piece by piece (StageFrom). close
// returns what StageBlob would have; after an error, or to give up, abort
// deletes the chunks committed so far.
type blobWriter struct {
	s       *Store
	ctx     context.Context
	buf     []byte // written and not committed
	sealed  []byte // the chunk being committed, sealed; reused after each commit
	id      uint64
	n       int // bytes written
	chunks  int // chunks committed
	collect bool
	err     error
}

func (s *Store) newBlobWriter(ctx context.Context) *blobWriter {
	return &blobWriter{s: s, ctx: ctx}
}

// Write appends p to the value, committing every chunk that fills once the
// value is too long to be kept as it is. It holds at most a chunk of p.
func (w *blobWriter) Write(p []byte) (int, error) {
	if w.err != nil {
		return 0, w.err
	}
	written := len(p)
	for len(p) > 0 {
		k := len(p)
		if room := blobChunk - len(w.buf); room > 0 && k > room {
			k = room
		}
		w.buf = append(w.buf, p[:k]...)
		w.n += k
		p = p[k:]
		w.collect = w.collect || w.n >= blobCollect
		for w.n >= blobInline && len(w.buf) >= blobChunk {
			if err := w.commit(w.buf[:blobChunk]); err != nil {
				return 0, err
			}
			w.buf = w.buf[:copy(w.buf, w.buf[blobChunk:])]
		}
	}
	return written, nil
}

// close commits the last chunk and returns the reference to the value, or
// the value itself if it is shorter than blobInline.
func (w *blobWriter) close() ([]byte, error) {
	if w.err != nil {
		return nil, w.err
	}
	if w.chunks == 0 && w.n < blobInline {
		return w.buf, nil
	}
	if len(w.buf) > 0 {
		if err := w.commit(w.buf); err != nil {
			return nil, err
		}
	}
	w.buf = nil
	return blobRef(w.id, w.n), nil
}

// abort deletes the chunks committed so far (the value will not be used).
func (w *blobWriter) abort() {
	if w.chunks > 0 {
		_ = w.s.DropBlob(context.WithoutCancel(w.ctx), blobRef(w.id, w.n))
		w.chunks = 0
	}
	w.buf = nil
	if w.err == nil {
		w.err = errBlobAborted
	}
}

var errBlobAborted = errors.New("catalog: blob writer aborted")

// commit writes chunk as the next chunk of the blob in a transaction of
// its own. On an error the chunks committed before are deleted and the
// writer fails from then on.
func (w *blobWriter) commit(chunk []byte) error {
	name, err := metaBucketName(BucketBlob)
	if err == nil {
		err = w.ctx.Err()
	}
	i := w.chunks
	if err == nil {
		err = guard(w.s.path, func() error {
			return w.s.db.Update(func(tx *bbolt.Tx) error {
				b, err := tx.CreateBucketIfNotExists(name)
				if err != nil {
					return err
				}
				if i == 0 {
					if w.id, err = b.NextSequence(); err != nil {
						return err
					}
				}
				key := blobKey(w.id, i)
				cb, err := b.CreateBucket(key)
				if err != nil {
					return err
				}
				// bbolt holds the value until the commit; sealed is
				// reused only after it.
				w.sealed = seal.Append(w.sealed[:0], key, chunk)
				return cb.Put(key, w.sealed)
			})
		})
		if err == nil && w.collect {
			runtime.GC()
		}
	}
	if err != nil {
		w.abort()
		w.err = fmt.Errorf("catalog: writing a value of %d bytes (chunk %d): %w", w.n, i, err)
		return w.err
	}
	w.chunks++
	return nil
}

// DropBlob deletes the chunks of the blob ref refers to (nothing if ref is
// not a reference): for a staged blob whose record was not written.
func (s *Store) DropBlob(ctx context.Context, ref []byte) error {
	if !IsBlobRef(ref) {
		return nil
	}
	return s.Update(ctx, func(tx *Tx) error { return tx.dropBlob(ref) })
}

// dropBlob deletes the chunks of the blob ref refers to, if it is one.
func (tx *Tx) dropBlob(ref []byte) error {
	id, _, ok := parseBlobRef(ref)
	if !ok {
		return nil
	}
	return tx.dropBlobID(id)
}

// dropBlobOf deletes the chunks of the blob that the record under key in
// metadata bucket bucket refers to, if it is a reference.
func (tx *Tx) dropBlobOf(bucket string, key []byte) error {
	b, err := tx.metaBucket(bucket)
	if b == nil {
		return err
	}
	id, _, ok := sealedBlobRef(key, b.Get(key))
	if !ok {
		return nil
	}
	return tx.dropBlobID(id)
}

// dropBlobID deletes the chunks of blob id.
func (tx *Tx) dropBlobID(id uint64) error {
	b, err := tx.metaBucket(BucketBlob)
	if b == nil {
		return err
	}
	var keys [][]byte
	prefix := binary.BigEndian.AppendUint64(nil, id)
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		keys = append(keys, bytes.Clone(k))
	}
	return deleteChunks(b, keys)
}

// deleteChunks deletes the chunks under keys of bucket b (meta_blob).
func deleteChunks(b *bbolt.Bucket, keys [][]byte) error {
	for _, k := range keys {
		var err error
		if b.Bucket(k) != nil {
			err = b.DeleteBucket(k)
		} else {
			err = b.Delete(k)
		}
		if err != nil {
			return fmt.Errorf("catalog: deleting blob chunk %x: %w", k, err)
		}
	}
	return nil
}

// getResolved is Get for a record that may be a blob reference: it
// returns the value, its chunks checked and joined.
func (tx *Tx) getResolved(bucket string, key []byte) ([]byte, error) {
	v, err := tx.Get(bucket, key)
	if err != nil || v == nil {
		return v, err
	}
	id, n, ok := parseBlobRef(v)
	if !ok {
		return v, nil
	}
	out := make([]byte, 0, n)
	if err := tx.blobChunks(id, n, func(p []byte) { out = append(out, p...) }); err != nil {
		return nil, fmt.Errorf("catalog: %s/%s: %w", bucket, showKey(key), err)
	}
	return out, nil
}

// blobChunks calls fn with each chunk of the n bytes of blob id, in order,
// each checked against its seal (valid during the call only), and fails if
// a chunk is missing or the lengths do not add up to n.
func (tx *Tx) blobChunks(id uint64, n int, fn func(p []byte)) error {
	b, err := tx.metaBucket(BucketBlob)
	if err != nil {
		return err
	}
	got, chunks := 0, 0
	if b != nil {
		prefix := binary.BigEndian.AppendUint64(nil, id)
		c := b.Cursor()
		for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
			cb := b.Bucket(k)
			if len(k) != 12 || int(binary.BigEndian.Uint32(k[8:])) != chunks || cb == nil {
				return corrupt(fmt.Sprintf("blob %d (chunk %d missing)", id, chunks))
			}
			p, err := openV(k, cb.Get(k), func() string { return fmt.Sprintf("chunk %d of blob %d", chunks, id) })
			if err != nil {
				return err
			}
			if got += len(p); got > n {
				break
			}
			fn(p)
			chunks++
		}
	}
	if got != n {
		return corrupt(fmt.Sprintf("blob %d (%d bytes in %d chunks, its reference says %d)", id, got, chunks, n))
	}
	return nil
}

// blobRefs calls fn with every blob reference stored in a metadata
// bucket, and where it is.
func blobRefs(tx *bbolt.Tx, fn func(bucket, key []byte, id uint64, n int)) {
	_ = tx.ForEach(func(name []byte, b *bbolt.Bucket) error {
		if !bytes.HasPrefix(name, []byte(metaPrefix)) || bytes.Equal(name, []byte(metaPrefix+BucketBlob)) {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			if id, n, ok := sealedBlobRef(k, v); ok {
				fn(name, k, id, n)
			}
			return nil
		})
	})
}

// sweepBlobs deletes the chunks of blobs no record refers to (left by a
// crash or a failed write between StageBlob and the record), in Open's
// transaction.
func sweepBlobs(tx *bbolt.Tx) error {
	b := tx.Bucket([]byte(metaPrefix + BucketBlob))
	if b == nil {
		return nil
	}
	live := map[uint64]bool{}
	blobRefs(tx, func(_, _ []byte, id uint64, _ int) { live[id] = true })
	var dead [][]byte
	c := b.Cursor()
	for k, _ := c.First(); k != nil; k, _ = c.Next() {
		if len(k) >= 8 && !live[binary.BigEndian.Uint64(k)] {
			dead = append(dead, bytes.Clone(k))
		}
	}
	return deleteChunks(b, dead)
}

// verifyBlobRefs checks that every blob reference resolves: all its
// chunks present and of the length it says (their seals are checked with
// every other value's).
func verifyBlobRefs(tx *bbolt.Tx, s *Store, problems *[]string) {
	t := &Tx{s: s, tx: tx}
	blobRefs(tx, func(bucket, key []byte, id uint64, n int) {
		if err := t.blobChunks(id, n, func([]byte) {}); err != nil && len(*problems) < maxProblems {
			*problems = append(*problems, fmt.Sprintf("record %s/%s: %v", bucket, showKey(key), err))
		}
	})
}
