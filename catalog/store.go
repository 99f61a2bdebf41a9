package catalog

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	"go.etcd.io/bbolt"

	"github.com/dpsql/dpsql/internal/seal"
)

// FileName is the name of the bbolt file inside the data directory.
const FileName = "dpsql.db"

// FormatVersion is the newest on-disk format this package reads and writes.
//
// Version 1 stored values as they are; version 2 seals every catalog value
// with a checksum (sealed.go); version 3 may store a large value as a
// reference to chunks written ahead of its record (blob.go), which an
// older build would read as the value itself. Open migrates a version 1
// file in place and marks a version 2 file as version 3 (it has no
// references yet).
const FormatVersion uint32 = 3

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
	format uint32 // format version of the file

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
// Only a missing data file means a new database. It fails with an error
// wrapping ErrLocked if the directory is held by another Store, with a
// *VersionError if the file was written by a newer format version, with
// ErrNotCatalog if the file is not a dpsql catalog, and with a
// *DamagedError (matching ErrDamaged) if it is empty, truncated or damaged;
// a damaged file is never changed. A file of format version 1 is migrated
// to the current version (every record sealed with a checksum) in one
// transaction.
func Open(dir string, opts *Options) (*Store, error) {
	timeout := DefaultTimeout
	if opts != nil && opts.Timeout > 0 {
		timeout = opts.Timeout
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("catalog: create data directory %s: %w", dir, err)
	}
	path := filepath.Join(dir, FileName)
	f, created, err := openLocked(path, false, timeout)
	if err != nil {
		if errors.Is(err, ErrLocked) {
			return nil, fmt.Errorf("catalog: data directory %s is in use by another dpsql process (no lock after %v): %w",
				dir, timeout, ErrLocked)
		}
		return nil, err
	}
	if !created {
		if err := checkFile(f, path); err != nil {
			f.Close()
			return nil, err
		}
	}
	db, err := openBolt(path, f, false, timeout)
	if err != nil {
		f.Close()
		if created {
			os.Remove(path)
		}
		return nil, err
	}
	s := newStore(db, path)
	if err := guard(path, func() error { return db.Update(s.initLocked) }); err != nil {
		_ = guard(path, db.Close)
		return nil, err
	}
	return s, nil
}

// OpenReadOnly opens the data file at path (any name) for reading only, to
// check it or a backup: it takes a shared lock, so it fails with ErrLocked
// while a server holds the file (and a server cannot start meanwhile), and
// it never changes the file: a file of format version 1 is not migrated,
// and only Verify, Check and FormatVersion may be used on it. It fails
// like Open for damaged, foreign and newer files.
func OpenReadOnly(path string, opts *Options) (*Store, error) {
	timeout := DefaultTimeout
	if opts != nil && opts.Timeout > 0 {
		timeout = opts.Timeout
	}
	f, _, err := openLocked(path, true, timeout)
	if err != nil {
		return nil, err
	}
	if err := checkFile(f, path); err != nil {
		f.Close()
		return nil, err
	}
	db, err := openBolt(path, f, true, timeout)
	if err != nil {
		f.Close()
		return nil, err
	}
	s := newStore(db, path)
	err = guard(path, func() error {
		return db.View(func(tx *bbolt.Tx) error {
			hdr := tx.Bucket(bucketHeader)
			if hdr == nil {
				return fmt.Errorf("%s: %w", path, ErrNotCatalog)
			}
			var err error
			s.format, err = s.readHeader(hdr)
			return err
		})
	})
	if err != nil {
		_ = guard(path, db.Close)
		return nil, err
	}
	return s, nil
}

func newStore(db *bbolt.DB, path string) *Store {
	s := &Store{db: db, path: path}
	s.mu.metas = make(map[uint64]cachedMeta)
	s.mu.autoinc = make(map[uint64]*autoIncState)
	return s
}

// readHeader validates the format header and returns the format version.
func (s *Store) readHeader(hdr *bbolt.Bucket) (uint32, error) {
	// Validate in bbolt's order: magic, then version.
	if !bytes.Equal(hdr.Get(keyMagic), []byte(formatMagic)) {
		return 0, fmt.Errorf("%s: bad magic (the file is damaged or not a dpsql data file): %w", s.path, ErrNotCatalog)
	}
	v := hdr.Get(keyVersion)
	if p, ok := seal.Open(keyVersion, v); ok && len(p) == 4 {
		found := binary.BigEndian.Uint32(p)
		if found > FormatVersion {
			return 0, &VersionError{Path: s.path, Found: found, Want: FormatVersion}
		}
		return found, nil
	}
	// Format 1 stored the version unsealed; a newer format stored that
	// way is still reported as newer.
	if len(v) == 4 {
		if found := binary.BigEndian.Uint32(v); found == 1 || found > FormatVersion {
			if found > FormatVersion {
				return 0, &VersionError{Path: s.path, Found: found, Want: FormatVersion}
			}
			return found, nil
		}
	}
	if v == nil {
		return 0, fmt.Errorf("%s: no format version: %w", s.path, ErrNotCatalog)
	}
	return 0, corrupt("the format version in the header")
}

// initLocked validates or writes the format header, migrates a format 1
// file, loads or creates the server secret and creates the catalog
// buckets. It runs in Open's write tx.
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
		if err := putV(hdr, keyVersion, binary.BigEndian.AppendUint32(nil, FormatVersion)); err != nil {
			return fmt.Errorf("catalog: write header: %w", err)
		}
	}
	found, err := s.readHeader(hdr)
	if err != nil {
		return err
	}
	if found < FormatVersion {
		if found == 1 {
			if err := migrate1(tx); err != nil {
				return fmt.Errorf("catalog: migrating %s from format version 1: %w", s.path, err)
			}
		}
		if err := putV(hdr, keyVersion, binary.BigEndian.AppendUint32(nil, FormatVersion)); err != nil {
			return fmt.Errorf("catalog: write header: %w", err)
		}
	}
	s.format = FormatVersion
	if err := sweepBlobs(tx); err != nil {
		return err
	}

	sb, err := tx.CreateBucketIfNotExists(bucketSecret)
	if err != nil {
		return fmt.Errorf("catalog: create secret bucket: %w", err)
	}
	sec, err := getV(sb, keySecret, func() string { return "the server secret" })
	if err != nil {
		return err
	}
	if len(sec) == SecretSize {
		s.secret = bytes.Clone(sec)
	} else {
		s.secret = make([]byte, SecretSize)
		if _, err := rand.Read(s.secret); err != nil {
			return fmt.Errorf("catalog: generate server secret: %w", err)
		}
		if err := putV(sb, keySecret, s.secret); err != nil {
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

// migrate1 seals every catalog value of a format 1 file but the header's.
func migrate1(tx *bbolt.Tx) error {
	var names [][]byte
	err := tx.ForEach(func(name []byte, _ *bbolt.Bucket) error {
		if ownBucket(name) && !bytes.Equal(name, bucketHeader) {
			names = append(names, bytes.Clone(name))
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, name := range names {
		if err := seal.SealBucket(tx.Bucket(name)); err != nil {
			return fmt.Errorf("bucket %s: %w", name, err)
		}
	}
	return nil
}

// FormatVersion returns the format version of the open file: FormatVersion,
// or 1 for a file of format 1 opened with OpenReadOnly (not migrated).
func (s *Store) FormatVersion() uint32 { return s.format }

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

// Check verifies the data file (see Verify) and returns the problems
// found, joined, or nil.
func (s *Store) Check() error {
	problems, err := s.Verify()
	if err != nil {
		return err
	}
	if len(problems) > 0 {
		errs := make([]error, len(problems))
		for i, p := range problems {
			errs[i] = errors.New(p)
		}
		return fmt.Errorf("catalog: consistency check: %w", errors.Join(errs...))
	}
	return nil
}

// Verify runs bbolt's consistency check (Tx.Check) on the data file and
// verifies the checksum of every catalog record (from format version 2),
// in one read transaction. It returns the problems found (at most 100 of
// each kind), or an error if the file could not be read at all. The
// structure of the file was checked when it was opened.
func (s *Store) Verify() (problems []string, err error) {
	err = guard(s.path, func() error {
		return s.db.View(func(tx *bbolt.Tx) error {
			n := 0
			for err := range tx.Check() { // drain: Check's goroutine must finish
				if n++; n <= maxProblems {
					problems = append(problems, "bbolt consistency check: "+err.Error())
				}
			}
			if n > maxProblems {
				problems = append(problems, fmt.Sprintf("bbolt consistency check: %d more problems", n-maxProblems))
			}
			if s.format < 2 {
				return nil
			}
			var sealProblems []string
			more := 0
			err := tx.ForEach(func(name []byte, b *bbolt.Bucket) error {
				if !ownBucket(name) {
					return nil
				}
				if bytes.Equal(name, bucketHeader) {
					var ve *VersionError
					if _, err := s.readHeader(b); err != nil && !errors.As(err, &ve) {
						sealProblems = append(sealProblems, err.Error())
					}
					return nil
				}
				verifySeals(b, []string{string(name)}, &sealProblems, &more)
				return nil
			})
			verifyBlobRefs(tx, s, &sealProblems)
			problems = append(problems, sealProblems...)
			if more > 0 {
				problems = append(problems, fmt.Sprintf("%d more corrupt catalog records", more))
			}
			return err
		})
	})
	return problems, err
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
		v, err := getV(b, keyGrants, func() string { return "the users and grants (mysql database)" })
		out = bytes.Clone(v)
		return err
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
		return putV(b, keyGrants, data)
	})
	if err != nil {
		return fmt.Errorf("catalog: store grants: %w", err)
	}
	return nil
}

// DatabaseName returns the name of database db as created (names compare
// case-insensitively), or false if there is none.
func (s *Store) DatabaseName(db string) (name string, ok bool, err error) {
	err = s.db.View(func(tx *bbolt.Tx) error {
		name, ok, err = databaseName(tx, db)
		return err
	})
	return name, ok, err
}

// TableID returns the stable ID of table in database db (names are matched
// case-insensitively). ok is false if there is no such table.
func (s *Store) TableID(db, table string) (id uint64, ok bool, err error) {
	err = s.db.View(func(tx *bbolt.Tx) error {
		id, ok, err = lookupTableID(tx, db, table)
		return err
	})
	if err != nil {
		return 0, false, fmt.Errorf("catalog: table id of %s.%s: %w", db, table, err)
	}
	return id, ok, nil
}

// Backup writes a consistent copy of the whole data file to w, as of one
// read transaction (bbolt's Tx.WriteTo), while the store stays in use. It
// returns the number of bytes written. The copy is a complete data file:
// a server started on a directory holding it as dpsql.db sees the data as
// it was when the transaction began.
func (s *Store) Backup(w io.Writer) (int64, error) {
	var n int64
	err := s.db.View(func(tx *bbolt.Tx) error {
		var err error
		n, err = tx.WriteTo(w)
		return err
	})
	if err != nil {
		return n, fmt.Errorf("catalog: backup of %s: %w", s.path, err)
	}
	return n, nil
}
