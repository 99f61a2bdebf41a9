package catalog

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"

	"go.etcd.io/bbolt"

	"github.com/dpsql/dpsql/internal/seal"
)

// Checksummed records.
//
// From format version 2 on, every value the catalog stores, in its own
// buckets ("dpsql_…") and in the metadata buckets ("meta_…"), is sealed:
// followed by the CRC-32C of its key and payload (internal/seal). Every
// read opens the value and fails with a *seal.Error, matching ErrCorrupt,
// if the checksum does not match, so damaged rows, schemas, grants,
// domains, models or releases are never served. The only unsealed values
// are the header's magic, and its version in files of format 1, which
// Open migrates: it seals every catalog value in one transaction and
// writes version 2, so no unchecked path remains. The budget package does
// the same for its own buckets.

// getV returns the payload stored under key in b, or nil if there is none;
// what names the record in the error if its checksum fails.
func getV(b *bbolt.Bucket, key []byte, what func() string) ([]byte, error) {
	p, ok := seal.Open(key, b.Get(key))
	if !ok {
		return nil, corrupt(what())
	}
	return p, nil
}

// putV stores payload, sealed, under key in b.
func putV(b *bbolt.Bucket, key, payload []byte) error {
	return b.Put(key, seal.Seal(key, payload))
}

// openV opens the sealed value v read under key k (from a cursor).
func openV(k, v []byte, what func() string) ([]byte, error) {
	p, ok := seal.Open(k, v)
	if !ok {
		return nil, corrupt(what())
	}
	return p, nil
}

// corrupt is the error for a record whose checksum fails.
func corrupt(what string) error {
	return &seal.Error{What: "catalog: " + what, Kind: ErrCorrupt}
}

// Descriptions of records, for corruption errors.

func rowWhat(m *tableMeta, k []byte) func() string {
	return func() string { return fmt.Sprintf("a row of table %s (id %d, key %s)", m.name, m.id, showKey(k)) }
}

func tableRecordWhat(id uint64, rec string) func() string {
	return func() string { return fmt.Sprintf("the %s of table id %d", rec, id) }
}

func metaWhat(bucket string, k []byte) func() string {
	return func() string { return fmt.Sprintf("metadata record %s/%s", bucket, showKey(k)) }
}

// ownBucket reports whether top-level bucket name holds catalog records.
func ownBucket(name []byte) bool {
	return bytes.HasPrefix(name, []byte("dpsql_")) || bytes.HasPrefix(name, []byte(metaPrefix))
}

// verifySeals checks the checksum of every value of b and its nested
// buckets, appending a problem for each that fails.
func verifySeals(b *bbolt.Bucket, path []string, problems *[]string, more *int) {
	var subs [][]byte
	_ = b.ForEach(func(k, v []byte) error {
		if v == nil && b.Bucket(k) != nil {
			subs = append(subs, bytes.Clone(k))
			return nil
		}
		if _, ok := seal.Open(k, v); !ok {
			if len(*problems) < maxProblems {
				*problems = append(*problems, fmt.Sprintf("catalog record %s/%s is corrupt (checksum mismatch)",
					strings.Join(path, "/"), showKey(k)))
			} else {
				*more++
			}
		}
		return nil
	})
	for _, name := range subs {
		verifySeals(b.Bucket(name), append(path[:len(path):len(path)], showKey(name)), problems, more)
	}
}

// showKey renders a key for messages: as text if printable, else as a
// number if it is 8 bytes (table IDs, sequence numbers), else in hex.
func showKey(k []byte) string {
	printable := len(k) > 0
	for _, b := range k {
		if b < 0x20 || b > 0x7e {
			printable = false
			break
		}
	}
	switch {
	case printable:
		return string(k)
	case len(k) == 8:
		return strconv.FormatUint(getU64(k), 10)
	case len(k) > 40:
		return fmt.Sprintf("0x%x…", k[:40])
	}
	return fmt.Sprintf("0x%x", k)
}

// getCounter returns the 8-byte counter (row count, AUTO_INCREMENT) stored
// under key in the bucket tb of table id; 0 if there is none.
func getCounter(tb *bbolt.Bucket, key []byte, id uint64) (uint64, error) {
	v, err := getV(tb, key, tableRecordWhat(id, counterName(key)))
	return getU64(v), err
}

// putCounter stores a counter read by getCounter.
func putCounter(tb *bbolt.Bucket, key []byte, v uint64) error { return putV(tb, key, u64(v)) }

func counterName(key []byte) string {
	if bytes.Equal(key, keyAutoInc) {
		return "AUTO_INCREMENT counter"
	}
	return "row count"
}

func uniqWhat(m *tableMeta, u *uniqIndex) func() string {
	return func() string {
		return fmt.Sprintf("an entry of unique index %s of table %s (id %d)", u.def.Name, m.name, m.id)
	}
}

func viewWhat(db string, key []byte) func() string {
	return func() string { return fmt.Sprintf("the definition of view %s in database %s", key, db) }
}
