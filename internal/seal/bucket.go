package seal

import (
	"bytes"
	"fmt"

	"go.etcd.io/bbolt"
)

// SealBucket seals, in place, every value of bucket b and of the buckets
// nested in it: the migration of a file written before values were sealed.
// It rewrites values in chunks, never while a cursor is on the page.
func SealBucket(b *bbolt.Bucket) error {
	const chunk = 4096
	var (
		subs  [][]byte
		after []byte // last key handled; nil before the first
	)
	type kv struct{ k, v []byte }
	for {
		var batch []kv
		c := b.Cursor()
		var k, v []byte
		if after == nil {
			k, v = c.First()
		} else {
			k, v = c.Seek(after)
			if k != nil && bytes.Equal(k, after) {
				k, v = c.Next()
			}
		}
		for ; k != nil && len(batch) < chunk; k, v = c.Next() {
			after = bytes.Clone(k)
			if v == nil && b.Bucket(k) != nil {
				subs = append(subs, after)
				continue
			}
			batch = append(batch, kv{after, Seal(k, v)})
		}
		for _, e := range batch {
			if err := b.Put(e.k, e.v); err != nil {
				return err
			}
		}
		if k == nil {
			break
		}
	}
	for _, name := range subs {
		if err := SealBucket(b.Bucket(name)); err != nil {
			return fmt.Errorf("bucket %x: %w", name, err)
		}
	}
	return nil
}
