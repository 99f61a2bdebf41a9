package testio

import (
	"bytes"
	"errors"
	"testing"
)

func TestWriter(t *testing.T) {
	data := []byte("0123456789abcdef")
	for _, tt := range []struct {
		name        string
		max, failAt int
		want        string
		n           int
		err         error
	}{
		{"whole", 0, 0, "0123456789abcdef", 16, nil},
		{"pieces", 3, 0, "0123456789abcdef", 16, nil},
		{"fails in the third piece", 3, 8, "012345", 6, ErrWriter},
		{"fails at once", 0, 1, "", 0, ErrWriter},
	} {
		w := &Writer{Max: tt.max, FailAt: tt.failAt}
		n, err := w.Write(data)
		if n != tt.n || !errors.Is(err, tt.err) || !bytes.Equal(w.B, []byte(tt.want)) {
			t.Errorf("%s: wrote %d (%v), kept %q; want %d (%v), %q", tt.name, n, err, w.B, tt.n, tt.err, tt.want)
		}
	}
}
