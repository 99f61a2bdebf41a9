package catalog

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/dolthub/go-mysql-server/sql"
	"go.etcd.io/bbolt"

	"github.com/dpsql/dpsql/internal/format1"
	"github.com/dpsql/dpsql/internal/seal"
)

// seedStore fills a new store in dir with databases, keyed, keyless and
// uniquely indexed tables, a view, grants and metadata, and closes it.
func seedStore(t *testing.T, dir string) {
	t.Helper()
	s := mustOpen(t, dir)
	h := newHarness(t, s)
	h.mustExec("", "CREATE DATABASE raw")
	h.mustExec("raw", "CREATE TABLE k (id INT PRIMARY KEY, name VARCHAR(40), code VARCHAR(10), UNIQUE KEY code_u (code))")
	insertBatches(t, h, "raw", "k", 600, 200, func(i int) string {
		return fmt.Sprintf("(%d, 'name-%05d-abcdefghij', 'c%d')", i, i, i)
	})
	h.mustExec("raw", "CREATE TABLE free (a INT, b TEXT)")
	insertBatches(t, h, "raw", "free", 300, 100, func(i int) string { return fmt.Sprintf("(%d, 'text %d')", i%7, i) })
	h.mustExec("raw", "CREATE TABLE auto (id INT AUTO_INCREMENT PRIMARY KEY, v INT)")
	h.mustExec("raw", "INSERT INTO auto (v) VALUES (1), (2), (3)")
	h.mustExec("raw", "CREATE VIEW kv AS SELECT id FROM k WHERE id < 3")
	if err := s.StoreGrants(context.Background(), []byte("grants blob")); err != nil {
		t.Fatal(err)
	}
	err := s.Update(context.Background(), func(tx *Tx) error {
		for i := range 50 {
			if err := tx.Put("test", []byte(fmt.Sprintf("key%02d", i)), []byte(strings.Repeat("m", i))); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	closeChecked(t, s)
}

// snapshot reads everything seedStore wrote through the store's read paths.
func snapshot(s *Store) (map[string]string, error) {
	out := map[string]string{}
	ctx := context.Background()
	for _, tbl := range []string{"k", "free", "auto"} {
		var rows []string
		err := s.ScanTable(ctx, "raw", tbl, func(r sql.Row) error {
			rows = append(rows, fmt.Sprint(r...))
			return nil
		})
		if err != nil {
			return nil, err
		}
		out[tbl] = strings.Join(rows, "|")
	}
	g, err := s.LoadGrants()
	if err != nil {
		return nil, err
	}
	out["grants"] = string(g)
	err = s.View(ctx, func(tx *Tx) error {
		return tx.ForEach("test", func(k, v []byte) error {
			out["meta "+string(k)] = string(v)
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	db, err := s.Provider().Database(nil, "raw")
	if err != nil {
		return nil, err
	}
	def, ok, err := db.(*Database).GetViewDefinition(nil, "kv")
	if err != nil {
		return nil, err
	}
	out["view"] = fmt.Sprint(ok, def.TextDefinition)
	names, err := db.(*Database).GetTableNames(nil)
	if err != nil {
		return nil, err
	}
	out["tables"] = strings.Join(names, ",")
	return out, nil
}

func writeFile(t *testing.T, dir string, b []byte) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, FileName)
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// usedSize is the number of bytes of file b bbolt uses (the active meta's
// high-water mark); the file may be longer.
func usedSize(t *testing.T, path string) int {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	db.View(func(tx *bbolt.Tx) error { n = int(tx.Size()); return nil })
	return n
}

func TestOpenRefusesEmptyFile(t *testing.T) {
	dir := t.TempDir()
	path := writeFile(t, dir, nil)
	s, err := Open(dir, nil)
	if err == nil {
		s.Close()
		t.Fatal("Open started a new database over an empty data file")
	}
	var de *DamagedError
	if !errors.As(err, &de) || !de.Empty || !errors.Is(err, ErrDamaged) {
		t.Fatalf("Open: %v, want an empty-file *DamagedError", err)
	}
	for _, want := range []string{path, "empty", "dpsql backup", "move it away"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q lacks %q", err, want)
		}
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != 0 {
		t.Errorf("the empty file was changed: %v, %v", fi, err)
	}
	if _, err := OpenReadOnly(path, nil); !errors.Is(err, ErrDamaged) {
		t.Errorf("OpenReadOnly: %v, want ErrDamaged", err)
	}
}

func TestOpenMissingFileIsNew(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "new")
	s := mustOpen(t, dir)
	if s.FormatVersion() != FormatVersion {
		t.Errorf("format %d", s.FormatVersion())
	}
	closeChecked(t, s)
	s = mustOpen(t, dir) // and it reopens
	closeChecked(t, s)
}

// TestOpenRefusesTruncatedFile cuts a data file at many sizes: every cut
// inside the used pages, or not on a page boundary, is refused with a
// *DamagedError (never a crash), and the file is left as it was.
func TestOpenRefusesTruncatedFile(t *testing.T) {
	src := t.TempDir()
	seedStore(t, src)
	path := filepath.Join(src, FileName)
	full, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	used := usedSize(t, path)
	ps := os.Getpagesize()
	sizes := []int{1, 15, 100, 4095, 4096, 4097, 8191, 8192, 3*4096 + 1, used / 2, used/2 + 3, used - 4096, used - 1, len(full) - 1}
	for _, n := range sizes {
		dir := t.TempDir()
		p := writeFile(t, dir, full[:n])
		s, err := Open(dir, nil)
		if n >= used && n%ps == 0 {
			// Only unused space was cut: harmless.
			if err != nil {
				t.Errorf("cut to %d (used %d): %v", n, used, err)
			} else {
				s.Close()
			}
			continue
		}
		if err == nil {
			s.Close()
			t.Errorf("cut to %d of %d (used %d) bytes: Open succeeded", n, len(full), used)
			continue
		}
		if !errors.Is(err, ErrDamaged) || !strings.Contains(err.Error(), "dpsql backup") {
			t.Errorf("cut to %d: %v, want a *DamagedError naming dpsql backup", n, err)
		}
		if b, _ := os.ReadFile(p); len(b) != n {
			t.Errorf("cut to %d: the file now has %d bytes", n, len(b))
		}
	}
}

// TestOpenRefusesDamagedMeta flips bytes of either meta page: bbolt would
// silently fall back to the previous transaction; Open refuses.
func TestOpenRefusesDamagedMeta(t *testing.T) {
	src := t.TempDir()
	seedStore(t, src)
	full, err := os.ReadFile(filepath.Join(src, FileName))
	if err != nil {
		t.Fatal(err)
	}
	ps := os.Getpagesize()
	for _, off := range []int{0, 17, 40, 60, ps + 16, ps + 50} {
		d := bytes.Clone(full)
		d[off] ^= 0x10
		dir := t.TempDir()
		writeFile(t, dir, d)
		if s, err := Open(dir, nil); !errors.Is(err, ErrDamaged) {
			if err == nil {
				s.Close()
			}
			t.Errorf("flip at byte %d: Open = %v, want ErrDamaged", off, err)
		}
	}
}

// TestDamagedFileNeverServed flips random bytes anywhere in a data file.
// Open must refuse it or, if the damage escaped the structural check,
// every read must either return exactly the original data or fail; and
// when a read fails, Verify must report the damage.
func TestDamagedFileNeverServed(t *testing.T) {
	src := t.TempDir()
	seedStore(t, src)
	full, err := os.ReadFile(filepath.Join(src, FileName))
	if err != nil {
		t.Fatal(err)
	}
	s := mustOpen(t, src)
	want, err := snapshot(s)
	if err != nil {
		t.Fatal(err)
	}
	closeChecked(t, s)
	used := usedSize(t, filepath.Join(src, FileName))

	rng := rand.New(rand.NewPCG(3, 4))
	rounds := 120
	if testing.Short() {
		rounds = 30
	}
	var refused, failedReads, clean int
	for round := range rounds {
		d := bytes.Clone(full)
		flips := []int{1, 3, 20, 2000}[round%4]
		for range flips {
			d[rng.IntN(used)] ^= byte(1 + rng.IntN(255))
		}
		dir := t.TempDir()
		writeFile(t, dir, d)
		s, err := Open(dir, &Options{Timeout: time.Second})
		if err != nil {
			refused++
			if !errors.Is(err, ErrDamaged) && !errors.Is(err, ErrNotCatalog) && !errors.Is(err, ErrCorrupt) {
				var ve *VersionError
				if !errors.As(err, &ve) {
					t.Errorf("round %d: Open failed with an unexpected error: %v", round, err)
				}
			}
			continue
		}
		got, rerr := snapshot(s)
		problems, verr := s.Verify()
		s.Close()
		switch {
		case rerr != nil:
			failedReads++
			if len(problems) == 0 && verr == nil {
				t.Errorf("round %d: a read failed (%v) but Verify found nothing", round, rerr)
			}
		case !reflect.DeepEqual(got, want):
			for k := range want {
				if got[k] != want[k] {
					t.Errorf("round %d (%d flips): %s served changed: %.80q, want %.80q", round, flips, k, got[k], want[k])
				}
			}
		default:
			clean++
		}
	}
	t.Logf("%d rounds: %d refused at open, %d reads failed, %d unaffected", rounds, refused, failedReads, clean)
	if refused == 0 || failedReads == 0 {
		t.Errorf("the test did not exercise both the open check and the record checksums")
	}
}

// flipInValue flips one byte of every stored copy of marker found in the
// raw file (stale copies may remain in free pages) and returns the damaged
// file.
func flipInValue(t *testing.T, file []byte, marker string) []byte {
	t.Helper()
	if !bytes.Contains(file, []byte(marker)) {
		t.Fatalf("marker %q not in the file", marker)
	}
	d := bytes.Clone(file)
	for off := 0; ; {
		i := bytes.Index(d[off:], []byte(marker))
		if i < 0 {
			return d
		}
		d[off+i+len(marker)/2] ^= 0x01
		off += i + len(marker)
	}
}

// TestCorruptRecordIsReported damages one row: the server opens, reading
// the row fails with a clear error naming the table and the way out, and
// Verify lists it.
func TestCorruptRecordIsReported(t *testing.T) {
	src := t.TempDir()
	seedStore(t, src)
	full, err := os.ReadFile(filepath.Join(src, FileName))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	writeFile(t, dir, flipInValue(t, full, "name-00123-abcdefghij"))
	s, err := Open(dir, nil)
	if err != nil {
		t.Fatalf("Open: %v (the structure is intact)", err)
	}
	defer s.Close()
	h := newHarness(t, s)
	if r, err := h.query("raw", "SELECT COUNT(*) FROM free"); err != nil || normValue(r[0][0]) != "300" {
		t.Errorf("an intact table: %v, %v", r, err)
	}
	_, err = h.query("raw", "SELECT name FROM k WHERE id BETWEEN 100 AND 200")
	if !errors.Is(err, ErrCorrupt) || !errors.Is(err, seal.ErrChecksum) {
		t.Fatalf("reading the damaged row: %v, want ErrCorrupt", err)
	}
	for _, want := range []string{"table k", "corrupt", "dpsql check", "dpsql backup"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q lacks %q", err, want)
		}
	}
	problems, err := s.Verify()
	if err != nil || len(problems) != 1 || !strings.Contains(problems[0], "dpsql_tables/") {
		t.Errorf("Verify = %q, %v; want the one damaged row", problems, err)
	}
}

// TestCorruptMetadataIsReported damages a metadata record and the grants
// blob: their reads fail instead of returning the damaged bytes.
func TestCorruptMetadataIsReported(t *testing.T) {
	src := t.TempDir()
	seedStore(t, src)
	full, err := os.ReadFile(filepath.Join(src, FileName))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	d := flipInValue(t, full, "grants blob")
	d = flipInValue(t, d, strings.Repeat("m", 49))
	writeFile(t, dir, d)
	s, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.LoadGrants(); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "grants") {
		t.Errorf("LoadGrants: %v", err)
	}
	err = s.View(context.Background(), func(tx *Tx) error {
		_, err := tx.Get("test", []byte("key49"))
		return err
	})
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "test/key49") {
		t.Errorf("Get: %v", err)
	}
	if v, err := getMeta(s, "key48"); err != nil || v != strings.Repeat("m", 48) {
		t.Errorf("an intact record: %q, %v", v, err)
	}
}

func getMeta(s *Store, key string) (string, error) {
	var v []byte
	err := s.View(context.Background(), func(tx *Tx) error {
		var err error
		v, err = tx.Get("test", []byte(key))
		return err
	})
	return string(v), err
}

// format1File is a data file written by the last dpsql of catalog format 1
// (and ledger format "1"), from internal/format1.
func format1File(t *testing.T) []byte {
	t.Helper()
	b, err := format1.File()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestMigrateFormat1 opens a format 1 file: it is migrated in place, every
// catalog record now carries a checksum, and the data reads as before.
func TestMigrateFormat1(t *testing.T) {
	old := format1File(t)
	dir := t.TempDir()
	path := writeFile(t, dir, old)

	ro, err := OpenReadOnly(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if ro.FormatVersion() != 1 {
		t.Errorf("read-only format = %d, want 1", ro.FormatVersion())
	}
	if problems, err := ro.Verify(); err != nil || len(problems) > 0 {
		t.Errorf("Verify of the format 1 file: %q, %v", problems, err)
	}
	ro.Close()
	if b, _ := os.ReadFile(path); !bytes.Equal(b, old) {
		t.Fatal("OpenReadOnly changed the file")
	}

	s := mustOpen(t, dir)
	if s.FormatVersion() != FormatVersion {
		t.Errorf("format after Open = %d", s.FormatVersion())
	}
	h := newHarness(t, s)
	if r := h.mustExec("raw", "SELECT COUNT(*) FROM people"); normValue(r[0][0]) != "300" {
		t.Errorf("people rows = %v", r)
	}
	if r := normRows(h.mustExec("raw", "SELECT id, code, price FROM items ORDER BY id")); !reflect.DeepEqual(r, [][]string{{"1", "a", "1.5"}, {"2", "b", "2.25"}, {"3", "c", "NULL"}}) {
		t.Errorf("items = %v", r)
	}
	if r := normRows(h.mustExec("raw", "SELECT * FROM cheap")); !reflect.DeepEqual(r, [][]string{{"a"}}) {
		t.Errorf("view = %v", r)
	}
	h.mustExec("raw", "INSERT INTO items (code, price) VALUES ('d', 3)")
	if _, err := h.query("raw", "INSERT INTO items (code, price) VALUES ('a', 3)"); err == nil {
		t.Error("the unique index was lost in the migration")
	}
	if g, err := s.LoadGrants(); err != nil || len(g) == 0 {
		t.Errorf("grants: %d bytes, %v", len(g), err)
	}
	if n := countSynthetic(t, s); n != 2 {
		t.Errorf("%d synthetic table records, want 2", n)
	}
	// Every catalog value is now sealed, the header's version included.
	err = s.db.View(func(tx *bbolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bbolt.Bucket) error {
			if ownBucket(name) {
				var problems []string
				more := 0
				if !bytes.Equal(name, bucketHeader) {
					verifySeals(b, []string{string(name)}, &problems, &more)
				} else if _, ok := seal.Open(keyVersion, b.Get(keyVersion)); !ok {
					problems = append(problems, "header version not sealed")
				}
				if len(problems) > 0 {
					return fmt.Errorf("%s: %v", name, problems)
				}
			}
			return nil
		})
	})
	if err != nil {
		t.Error(err)
	}
	closeChecked(t, s)
	s = mustOpen(t, dir) // a migrated file opens as format 2
	closeChecked(t, s)
}

func countSynthetic(t *testing.T, s *Store) int {
	t.Helper()
	n := 0
	err := s.View(context.Background(), func(tx *Tx) error {
		return tx.ForEachSynthetic(func(*Synthetic) error { n++; return nil })
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestOpenReadOnlyAndLocks: a read-only open waits for no writer, is
// refused while a Store holds the file, and keeps Open out meanwhile.
func TestOpenReadOnlyAndLocks(t *testing.T) {
	dir := t.TempDir()
	s := mustOpen(t, dir)
	path := filepath.Join(dir, FileName)
	if _, err := OpenReadOnly(path, &Options{Timeout: 100 * time.Millisecond}); !errors.Is(err, ErrLocked) {
		t.Fatalf("OpenReadOnly beside a Store: %v, want ErrLocked", err)
	}
	closeChecked(t, s)
	ro, err := OpenReadOnly(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, &Options{Timeout: 100 * time.Millisecond}); !errors.Is(err, ErrLocked) {
		t.Errorf("Open beside a read-only Store: %v, want ErrLocked", err)
	}
	ro2, err := OpenReadOnly(path, nil)
	if err != nil {
		t.Errorf("two read-only opens: %v", err)
	} else {
		ro2.Close()
	}
	if problems, err := ro.Verify(); err != nil || len(problems) > 0 {
		t.Errorf("Verify: %q, %v", problems, err)
	}
	ro.Close()
	if _, err := OpenReadOnly(filepath.Join(dir, "missing.db"), nil); err == nil {
		t.Error("OpenReadOnly created a missing file")
	}
}

// TestBackupWhileWriting copies a store while other statements write: the
// copy opens, verifies clean and holds a consistent state; the store keeps
// working afterwards (its own file descriptor is untouched).
func TestBackupWhileWriting(t *testing.T) {
	dir := t.TempDir()
	seedStore(t, dir)
	s := mustOpen(t, dir)
	h := newHarness(t, s)
	stop := make(chan struct{})
	done := make(chan error)
	writing := make(chan struct{}) // closed after the first insert
	go func() {
		for i := 1000; ; i++ {
			select {
			case <-stop:
				done <- nil
				return
			default:
			}
			if _, err := h.query("raw", fmt.Sprintf("INSERT INTO k VALUES (%d, 'n', 'u%d')", i, i)); err != nil {
				done <- err
				return
			}
			if i == 1000 {
				close(writing)
			}
		}
	}()
	// Back up only once the writer is running, however the scheduler
	// orders the goroutines on a busy machine.
	select {
	case <-writing:
	case err := <-done:
		t.Fatal(err)
	}
	var copies [][]byte
	for range 3 {
		var buf bytes.Buffer
		n, err := s.Backup(&buf)
		if err != nil || n != int64(buf.Len()) {
			t.Fatalf("Backup: %d bytes, %v", n, err)
		}
		copies = append(copies, buf.Bytes())
	}
	close(stop)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if r := h.mustExec("raw", "SELECT COUNT(*) FROM k"); normValue(r[0][0]) == "600" {
		t.Error("no concurrent insert happened")
	}
	for i, c := range copies {
		p := filepath.Join(t.TempDir(), "copy.db")
		if err := os.WriteFile(p, c, 0o600); err != nil {
			t.Fatal(err)
		}
		ro, err := OpenReadOnly(p, nil)
		if err != nil {
			t.Fatalf("copy %d: %v", i, err)
		}
		if problems, err := ro.Verify(); err != nil || len(problems) > 0 {
			t.Errorf("copy %d: %q, %v", i, problems, err)
		}
		ro.Close()
		cdir := t.TempDir()
		writeFile(t, cdir, c)
		cs := mustOpen(t, cdir)
		// The row count record and the rows were copied in one state.
		ch := newHarness(t, cs)
		var counted int
		cs.ScanTable(context.Background(), "raw", "k", func(sql.Row) error { counted++; return nil })
		if r := ch.mustExec("raw", "SELECT COUNT(*) FROM k"); normValue(r[0][0]) != fmt.Sprint(counted) {
			t.Errorf("copy %d: COUNT(*) = %v, %d rows scanned", i, r, counted)
		}
		closeChecked(t, cs)
	}
}
