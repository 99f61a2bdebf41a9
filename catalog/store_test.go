package catalog

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/go-mysql-server/sql/types"
	"go.etcd.io/bbolt"
)

func TestOpenTwiceIsLocked(t *testing.T) {
	dir := t.TempDir()
	mustOpen(t, dir)
	_, err := Open(dir, &Options{Timeout: 100 * time.Millisecond})
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open: got %v, want ErrLocked", err)
	}
	if !bytes.Contains([]byte(err.Error()), []byte(dir)) {
		t.Errorf("error %q does not name the directory", err)
	}
}

func TestOpenRefusesNewerFormat(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir)
	err := s.db.Update(func(tx *bbolt.Tx) error {
		return tx.Bucket(bucketHeader).Put(keyVersion, binary.BigEndian.AppendUint32(nil, FormatVersion+1))
	})
	if err != nil {
		t.Fatal(err)
	}
	closeChecked(t, s)
	_, err = Open(dir, nil)
	var ve *VersionError
	if !errors.As(err, &ve) {
		t.Fatalf("Open: got %v, want *VersionError", err)
	}
	if ve.Found != FormatVersion+1 || ve.Want != FormatVersion {
		t.Errorf("VersionError = %+v", ve)
	}
}

// TestOpenUpgradesFormat2: a file of format 2 (sealed values, no blob
// references) opens as it is and is marked format 3, its records intact;
// read-only, it stays format 2.
func TestOpenUpgradesFormat2(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir)
	ctx := context.Background()
	if err := s.Update(ctx, func(tx *Tx) error { return tx.Put("notes", []byte("k"), []byte("v")) }); err != nil {
		t.Fatal(err)
	}
	err := s.db.Update(func(tx *bbolt.Tx) error {
		return putV(tx.Bucket(bucketHeader), keyVersion, binary.BigEndian.AppendUint32(nil, 2))
	})
	if err != nil {
		t.Fatal(err)
	}
	closeChecked(t, s)
	ro, err := OpenReadOnly(filepath.Join(dir, FileName), nil)
	if err != nil {
		t.Fatal(err)
	}
	if ro.FormatVersion() != 2 {
		t.Errorf("read-only format = %d, want 2", ro.FormatVersion())
	}
	if err := ro.Check(); err != nil {
		t.Errorf("check of the format 2 file: %v", err)
	}
	if err := ro.Close(); err != nil {
		t.Fatal(err)
	}
	s = mustOpen(t, dir)
	if s.FormatVersion() != FormatVersion {
		t.Errorf("format after Open = %d, want %d", s.FormatVersion(), FormatVersion)
	}
	err = s.View(ctx, func(tx *Tx) error {
		v, err := tx.Get("notes", []byte("k"))
		if err != nil || string(v) != "v" {
			t.Errorf("record after the upgrade: %q, %v", v, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	closeChecked(t, s)
	if ro, err = OpenReadOnly(filepath.Join(dir, FileName), nil); err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	if ro.FormatVersion() != FormatVersion {
		t.Errorf("format on disk after Open = %d, want %d", ro.FormatVersion(), FormatVersion)
	}
}

func TestOpenRefusesForeignFile(t *testing.T) {
	dir := t.TempDir()
	db, err := bbolt.Open(filepath.Join(dir, FileName), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bbolt.Tx) error { _, err := tx.CreateBucket([]byte("other")); return err }); err != nil {
		t.Fatal(err)
	}
	db.Close()
	if _, err := Open(dir, nil); !errors.Is(err, ErrNotCatalog) {
		t.Fatalf("Open: got %v, want ErrNotCatalog", err)
	}
}

func TestOpenUnusableDir(t *testing.T) {
	// A regular file where the data directory should be: MkdirAll fails
	// even for root, unlike permission bits.
	path := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(path, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Open(path, nil)
	if err == nil || !bytes.Contains([]byte(err.Error()), []byte(path)) {
		t.Fatalf("Open(%s) = %v, want an error naming the path", path, err)
	}
}

func TestSecretPersistsAndDiffers(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir)
	sec := s.Secret()
	if len(sec) != SecretSize || bytes.Equal(sec, make([]byte, SecretSize)) {
		t.Fatalf("secret = %x", sec)
	}
	sec[0] ^= 0xff // callers get a copy
	if bytes.Equal(sec, s.Secret()) {
		t.Fatal("Secret returned an alias of the stored secret")
	}
	closeChecked(t, s)
	s2 := mustOpen(t, dir)
	if !bytes.Equal(s2.Secret(), s.secret) {
		t.Error("secret changed across reopen")
	}
	if other := mustOpen(t, ""); bytes.Equal(other.Secret(), s2.Secret()) {
		t.Error("two data directories share a secret")
	}
}

func TestGrantsRoundTrip(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir)
	if g, err := s.LoadGrants(); err != nil || g != nil {
		t.Fatalf("LoadGrants on new store = %q, %v", g, err)
	}
	blob := []byte("\x00flatbuffer\xff")
	if err := (GrantsPersister{S: s}).Persist(sql.NewEmptyContext(), blob); err != nil {
		t.Fatal(err)
	}
	closeChecked(t, s)
	s2 := mustOpen(t, dir)
	if g, err := s2.LoadGrants(); err != nil || !bytes.Equal(g, blob) {
		t.Fatalf("LoadGrants after reopen = %q, %v", g, err)
	}
}

func TestTableIDsAreNeverReused(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir)
	h := newHarness(t, s)
	h.mustExec("", "CREATE DATABASE d")
	seen := map[uint64]bool{}
	for i := range 3 {
		h.mustExec("d", "CREATE TABLE t (x INT)")
		id, ok, err := s.TableID("d", "T")
		if err != nil || !ok {
			t.Fatalf("TableID: %v %v", ok, err)
		}
		if seen[id] {
			t.Fatalf("round %d: id %d reused", i, id)
		}
		seen[id] = true
		h.mustExec("d", "DROP TABLE t")
		if _, ok, _ := s.TableID("d", "t"); ok {
			t.Fatal("dropped table still has an id")
		}
	}
	h.mustExec("d", "CREATE TABLE t (x INT)")
	id1, _, _ := s.TableID("d", "t")
	h.mustExec("d", "RENAME TABLE t TO u")
	if id2, ok, _ := s.TableID("d", "u"); !ok || id2 != id1 {
		t.Errorf("rename changed id %d -> %d", id1, id2)
	}
	closeChecked(t, s)
	s2 := mustOpen(t, dir)
	newHarness(t, s2).mustExec("d", "CREATE TABLE v (x INT)")
	if id, _, _ := s2.TableID("d", "v"); seen[id] || id == id1 {
		t.Errorf("id %d reused after reopen", id)
	}
}

func TestFailingStatementLeavesNothing(t *testing.T) {
	s := mustOpen(t, "")
	h := newHarness(t, s)
	h.mustExec("", "CREATE DATABASE d")
	h.mustExec("d", "CREATE TABLE t (id INT PRIMARY KEY, v INT CHECK (v > 0))")
	h.mustExec("d", "CREATE TABLE k (v INT CHECK (v > 0))")
	for _, q := range []string{
		"INSERT INTO t VALUES (1, 1), (2, 2), (1, 3)",  // duplicate key in the batch
		"INSERT INTO t VALUES (1, 1), (2, 2), (3, -1)", // check violation on the last row
		"INSERT INTO k VALUES (1), (2), (-3)",
	} {
		if _, err := h.query("d", q); err == nil {
			t.Fatalf("%s succeeded", q)
		}
	}
	for _, tbl := range []string{"t", "k"} {
		rows := h.mustExec("d", "SELECT COUNT(*) FROM "+tbl)
		if n := normValue(rows[0][0]); n != "0" {
			t.Errorf("%s has %s rows after failed statements", tbl, n)
		}
		var n int
		if err := s.ScanTable(context.Background(), "d", tbl, func(sql.Row) error { n++; return nil }); err != nil || n != 0 {
			t.Errorf("ScanTable(%s) = %d rows, %v", tbl, n, err)
		}
	}
}

func TestMetaTxAtomicWithTable(t *testing.T) {
	s := mustOpen(t, "")
	ctx := context.Background()
	if err := s.Update(ctx, func(tx *Tx) error { return tx.CreateDatabase("pub") }); err != nil {
		t.Fatal(err)
	}
	sch := sql.NewPrimaryKeySchema(sql.Schema{
		{Name: "a", Type: types.Int64, PrimaryKey: true},
		{Name: "b", Type: types.Text, Nullable: true},
	})
	rows := []sql.Row{{int64(1), "x"}, {int64(2), nil}}
	boom := errors.New("boom")
	_, err := s.CreateTableWithRows(ctx, "pub", "syn", sch, rows, func(tx *Tx) error {
		if err := tx.Put("models", []byte("syn"), []byte("model")); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("got %v, want boom", err)
	}
	if _, ok, _ := s.TableID("pub", "syn"); ok {
		t.Fatal("table exists after failed transaction")
	}
	err = s.View(ctx, func(tx *Tx) error {
		v, err := tx.Get("models", []byte("syn"))
		if v != nil {
			t.Error("metadata written by failed transaction")
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}

	id, err := s.CreateTableWithRows(ctx, "pub", "syn", sch, rows, func(tx *Tx) error {
		return tx.Put("models", []byte("syn"), []byte("model"))
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, ok, _ := s.TableID("pub", "syn"); !ok || got != id {
		t.Fatalf("TableID = %d, %v; want %d", got, ok, id)
	}
	var got []string
	if err := s.ScanTable(ctx, "pub", "syn", func(r sql.Row) error {
		got = append(got, normValue(r[0])+"/"+normValue(r[1]))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := []string{"1/x", "2/NULL"}; !equalStrings(got, want) {
		t.Errorf("rows = %v, want %v", got, want)
	}
	var keys []string
	err = s.View(ctx, func(tx *Tx) error {
		return tx.ForEach("models", func(k, v []byte) error { keys = append(keys, string(k)+"="+string(v)); return nil })
	})
	if err != nil || !equalStrings(keys, []string{"syn=model"}) {
		t.Errorf("ForEach = %v, %v", keys, err)
	}
	if err := s.Update(ctx, func(tx *Tx) error { return tx.Delete("models", []byte("syn")) }); err != nil {
		t.Fatal(err)
	}
	// The table is visible to SQL too.
	h := newHarness(t, s)
	if r := h.mustExec("pub", "SELECT b FROM syn WHERE a = 1"); len(r) != 1 || normValue(r[0][0]) != "x" {
		t.Errorf("SQL sees %v", r)
	}
	if err := s.Update(ctx, func(tx *Tx) error { return tx.Put("", nil, nil) }); !errors.Is(err, ErrReservedBucket) {
		t.Errorf("empty bucket name: %v", err)
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestCreateTableFromStreams checks a keyless table filled from a RowSource:
// enough rows to span several sealed chunks, from a source that reuses one
// row buffer (the catalog must encode each row before asking for the next),
// every row read back intact and counted; and a source that fails midway
// leaves no table.
func TestCreateTableFromStreams(t *testing.T) {
	s := mustOpen(t, "")
	ctx := context.Background()
	if err := s.Update(ctx, func(tx *Tx) error { return tx.CreateDatabase("pub") }); err != nil {
		t.Fatal(err)
	}
	sch := sql.NewPrimaryKeySchema(sql.Schema{
		{Name: "a", Type: types.Int64},
		{Name: "b", Type: types.Text, Nullable: true},
	})
	const n = 30000 // ≈ 30 bytes a row: several 256 KB chunks
	source := func(failAt int) RowSource {
		i, row := 0, make(sql.Row, 2)
		return func() (sql.Row, error) {
			if i == failAt {
				return nil, errors.New("source failed")
			}
			if i == n {
				return nil, io.EOF
			}
			i++
			row[0], row[1] = int64(i), strings.Repeat("v", i%40)
			if i%7 == 0 {
				row[1] = nil
			}
			return row, nil
		}
	}
	if _, err := s.CreateTableFrom(ctx, "pub", "bad", sch, "", source(n/2), nil); err == nil || !strings.Contains(err.Error(), "source failed") {
		t.Fatalf("failing source: got %v", err)
	}
	if _, ok, _ := s.TableID("pub", "bad"); ok {
		t.Fatal("a table exists after its source failed")
	}
	if _, err := s.CreateTableFrom(ctx, "pub", "big", sch, "streamed", source(-1), nil); err != nil {
		t.Fatal(err)
	}
	// The file grew from nothing to megabytes without a re-map, which
	// would have copied every row of the commit into the heap.
	if st := s.db.Stats(); st.TxStats.GetNodeDeref() != 0 {
		d := st.TxStats.GetNodeDeref()
		t.Errorf("%d nodes dereferenced: the commit re-mapped the file", d)
	}
	next := int64(1)
	if err := s.ScanTable(ctx, "pub", "big", func(r sql.Row) error {
		want := any(strings.Repeat("v", int(next)%40))
		if next%7 == 0 {
			want = nil
		}
		if r[0] != next || r[1] != want {
			return fmt.Errorf("row %d = %v, want [%d %v]", next, r, next, want)
		}
		next++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if next-1 != n {
		t.Fatalf("read %d rows, want %d", next-1, n)
	}
	tbl, ok, err := s.Table(ctx, "pub", "big")
	if err != nil || !ok {
		t.Fatalf("Table: %v, %v", ok, err)
	}
	if c, _, err := tbl.RowCount(sql.NewEmptyContext()); err != nil || c != n {
		t.Fatalf("stored count = %d, %v; want %d", c, err, n)
	}
}
