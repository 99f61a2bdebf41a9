package catalog

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"go.etcd.io/bbolt"
	bberrors "go.etcd.io/bbolt/errors"
)

// FileName is the name of the bbolt file inside the data directory.
const FileName = "dpsql.db"

// FormatVersion is the newest on-disk format this package reads and writes.
const FormatVersion uint32 = 1

// DefaultTimeout is how long Open waits for the data file lock when
// Options.Timeout is zero.
const DefaultTimeout = time.Second

// SecretSize is the length in bytes of the server secret.
const SecretSize = 32

const formatMagic = "dpsql-catalog\x00"

// Top-level bucket names. Every name used by this package starts with
// "dpsql_" or "meta_"; "budget_" and "ledger_" belong to the budget package.
var (
	bucketHeader = []byte("dpsql_header")
	bucketSecret = []byte("dpsql_secret")
	bucketGrants = []byte("dpsql_grants")
	bucketDBs    = []byte("dpsql_dbs")
	bucketTables = []byte("dpsql_tables")

	keyMagic   = []byte("magic")
	keyVersion = []byte("version")
	keySecret  = []byte("server")
	keyGrants  = []byte("mysql_db")
)

// Options configures Open. A nil *Options means the defaults.
type Options struct {
	// Timeout is how long Open waits for the exclusive lock on the data file
	// before failing with ErrLocked. Zero means DefaultTimeout; it is never
	// infinite.
	Timeout time.Duration
}

// Store is an open dpsql data directory. It is safe for concurrent use.
type Store struct {
	db     *bbolt.DB
	path   string
	secret []byte

	mu struct {
		sync.Mutex
		metas   map[uint64]cachedMeta // decoded schemas by table ID
		autoinc map[uint64]*autoIncState
	}
}

type cachedMeta struct {
	raw  []byte // stored JSON the meta was decoded from
	meta *tableMeta
}

// Open opens (creating if needed) the dpsql data directory dir.
//
// It fails with an error wrapping ErrLocked if the directory is held by
// another Store, with a *VersionError if the file was written by a newer
// format version, and with ErrNotCatalog if the file is not a dpsql catalog.
func Open(dir string, opts *Options) (*Store, error) {
	timeout := DefaultTimeout
	if opts != nil && opts.Timeout > 0 {
		timeout = opts.Timeout
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("catalog: create data directory %s: %w", dir, err)
	}
	path := filepath.Join(dir, FileName)
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: timeout})
	if err != nil {
		if errors.Is(err, bberrors.ErrTimeout) {
			return nil, fmt.Errorf("catalog: data directory %s is in use by another dpsql process (no lock after %v): %w",
				dir, timeout, ErrLocked)
		}
		return nil, fmt.Errorf("catalog: open data file %s: %w", path, err)
	}
	s := &Store{db: db, path: path}
	s.mu.metas = make(map[uint64]cachedMeta)
	s.mu.autoinc = make(map[uint64]*autoIncState)
	if err := db.Update(s.initLocked); err != nil {
		_ = db.Close()
		return nil, err
	}
	return s, nil
}

// initLocked validates or writes the format header, loads or creates the
// server secret and creates the catalog buckets. It runs in Open's write tx.
func (s *Store) initLocked(tx *bbolt.Tx) error {
	hdr := tx.Bucket(bucketHeader)
	if hdr == nil {
		empty := true
		_ = tx.ForEach(func([]byte, *bbolt.Bucket) error { empty = false; return nil })
		if !empty {
			return fmt.Errorf("%s: %w", s.path, ErrNotCatalog)
		}
		var err error
		if hdr, err = tx.CreateBucket(bucketHeader); err != nil {
			return fmt.Errorf("catalog: create header: %w", err)
		}
		if err := hdr.Put(keyMagic, []byte(formatMagic)); err != nil {
			return fmt.Errorf("catalog: write header: %w", err)
		}
		if err := hdr.Put(keyVersion, binary.BigEndian.AppendUint32(nil, FormatVersion)); err != nil {
			return fmt.Errorf("catalog: write header: %w", err)
		}
	}
	// Validate in bbolt's order: magic, then version.
	if !bytes.Equal(hdr.Get(keyMagic), []byte(formatMagic)) {
		return fmt.Errorf("%s: bad magic: %w", s.path, ErrNotCatalog)
	}
	v := hdr.Get(keyVersion)
	if len(v) != 4 {
		return fmt.Errorf("%s: malformed format version: %w", s.path, ErrNotCatalog)
	}
	if found := binary.BigEndian.Uint32(v); found != FormatVersion {
		return &VersionError{Path: s.path, Found: found, Want: FormatVersion}
	}

	sb, err := tx.CreateBucketIfNotExists(bucketSecret)
	if err != nil {
		return fmt.Errorf("catalog: create secret bucket: %w", err)
	}
	if sec := sb.Get(keySecret); len(sec) == SecretSize {
		s.secret = bytes.Clone(sec)
	} else {
		s.secret = make([]byte, SecretSize)
		if _, err := rand.Read(s.secret); err != nil {
			return fmt.Errorf("catalog: generate server secret: %w", err)
		}
		if err := sb.Put(keySecret, s.secret); err != nil {
			return fmt.Errorf("catalog: store server secret: %w", err)
		}
	}
	for _, name := range [][]byte{bucketGrants, bucketDBs, bucketTables} {
		if _, err := tx.CreateBucketIfNotExists(name); err != nil {
			return fmt.Errorf("catalog: create bucket %s: %w", name, err)
		}
	}
	return nil
}

// Close releases the data file and its lock.
func (s *Store) Close() error {
	if err := s.db.Close(); err != nil {
		return fmt.Errorf("catalog: close %s: %w", s.path, err)
	}
	return nil
}

// DB returns the underlying bbolt database, for packages (such as the budget
// ledger) that keep their own buckets in the same file. They must use bucket
// names starting with "budget_" or "ledger_".
func (s *Store) DB() *bbolt.DB { return s.db }

// Path returns the path of the data file.
func (s *Store) Path() string { return s.path }

// Secret returns a copy of the 32-byte server secret, created from
// crypto/rand when the data directory was first opened. It keys DP noise
// seeds and must never be exposed through SQL.
func (s *Store) Secret() []byte { return bytes.Clone(s.secret) }

// Check runs bbolt's consistency check on the data file and returns the first
// problem found, if any.
func (s *Store) Check() error {
	return s.db.View(func(tx *bbolt.Tx) error {
		var errs []error
		for err := range tx.Check() { // drain: Check's goroutine must finish
			errs = append(errs, err)
		}
		if len(errs) > 0 {
			return fmt.Errorf("catalog: consistency check: %w", errors.Join(errs...))
		}
		return nil
	})
}

// LoadGrants returns the grants blob last stored by the GrantsPersister, or
// nil if there is none.
func (s *Store) LoadGrants() ([]byte, error) {
	var out []byte
	err := s.db.View(func(tx *bbolt.Tx) error {
		b := tx.Bucket(bucketGrants)
		if b == nil {
			return nil
		}
		if v := b.Get(keyGrants); v != nil {
			out = bytes.Clone(v)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("catalog: load grants: %w", err)
	}
	return out, nil
}

// StoreGrants atomically replaces the stored grants blob.
func (s *Store) StoreGrants(ctx context.Context, data []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	err := s.db.Update(func(tx *bbolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketGrants)
		if err != nil {
			return err
		}
		return b.Put(keyGrants, bytes.Clone(data))
	})
	if err != nil {
		return fmt.Errorf("catalog: store grants: %w", err)
	}
	return nil
}

// TableID returns the stable ID of table in database db (names are matched
// case-insensitively). ok is false if there is no such table.
func (s *Store) TableID(db, table string) (id uint64, ok bool, err error) {
	err = s.db.View(func(tx *bbolt.Tx) error {
		id, ok = lookupTableID(tx, db, table)
		return nil
	})
	if err != nil {
		return 0, false, fmt.Errorf("catalog: table id of %s.%s: %w", db, table, err)
	}
	return id, ok, nil
}
