package seal

import (
	"bytes"
	"errors"
	"testing"
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
