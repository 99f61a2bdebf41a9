package engine

import (
	"bytes"
	"io"
	"testing"
	"testing/iotest"

	"github.com/dolthub/vitess/go/mysql"
)

// packet frames payload as one MySQL packet with sequence number seq.
func packet(seq byte, payload []byte) []byte {
	n := len(payload)
	return append([]byte{byte(n), byte(n >> 8), byte(n >> 16), seq}, payload...)
}

// TestPacketFilter: only the first packet of a COM_STMT_PREPARE command is
// rewritten; other commands, continuation packets of a long payload (even
// when they look like a prepare) and other prepares pass byte for byte,
// whatever the sizes of the reads.
func TestPacketFilter(t *testing.T) {
	dpsql := "SET PRIVACY BUDGET FOR raw.t WITH EPSILON = ?, DELTA = ?"
	prep := func(q string) []byte { return append([]byte{mysql.ComPrepare}, q...) }
	long := bytes.Repeat([]byte{'x'}, mysql.MaxPacketSize)
	long[0] = mysql.ComQuery

	var in, want bytes.Buffer
	for _, p := range [][2][]byte{
		{packet(0, []byte{mysql.ComQuery, 'S', 'E', 'L', 'E', 'C', 'T', ' ', '1'}), nil},
		{packet(0, prep(dpsql)), packet(0, prep(standIn(dpsql, 2)))},
		{packet(0, prep("SELECT ?")), nil},
		{packet(0, long), nil},
		{packet(1, prep(dpsql)), nil}, // the end of the long COM_QUERY
		{packet(0, []byte{mysql.ComQuit}), nil},
		{packet(0, prep("EXPLAIN SELECT a FROM t WHERE b < ?")), packet(0, prep(standIn("EXPLAIN SELECT a FROM t WHERE b < ?", 1)))},
		{packet(0, prep("INSERT INTO comment.t VALUES (?)")), packet(0, prep("INSERT INTO `comment`.t VALUES (?)"))},
	} {
		in.Write(p[0])
		if p[1] != nil {
			want.Write(p[1])
		} else {
			want.Write(p[0])
		}
	}
	e := &Engine{}
	for name, wrap := range map[string]func(io.Reader) io.Reader{
		"whole":      func(r io.Reader) io.Reader { return r },
		"one byte":   iotest.OneByteReader,
		"half reads": iotest.HalfReader,
	} {
		// Small reads both of the client's stream and of the filter.
		f := &packetFilter{src: wrap(bytes.NewReader(in.Bytes())), rewrite: e.rewritePrepare}
		got, err := io.ReadAll(wrap(f))
		if err != nil || !bytes.Equal(got, want.Bytes()) {
			t.Errorf("%s: %d bytes, %v; want %d bytes", name, len(got), err, want.Len())
		}
	}
}

// TestStandIn: a stand-in gives its text back only with the number of
// parameters the text has.
func TestStandIn(t *testing.T) {
	for _, tc := range []struct {
		text   string
		params int
	}{
		{"CREATE SYNTHETIC TABLE lab.s FROM raw.t USING independent WITH EPSILON = ?, SEED = ?", 2},
		{"SHOW PRIVACY BUDGET FOR raw.t", 0},
		{"SET PRIVACY BUDGET FOR raw.t WITH EPSILON = ?", 0}, // malformed: prepared without parameters, fails with dpsql's error
		{"EXPLAIN SELECT a FROM t WHERE b < ? AND c = 'it''s'", 1},
	} {
		n, ok := standInParams(tc.text)
		if !ok || n != tc.params {
			t.Errorf("standInParams(%q) = %d, %v; want %d", tc.text, n, ok, tc.params)
		}
		s := standIn(tc.text, tc.params)
		if got, ok := fromStandIn(s, tc.params); !ok || got != tc.text {
			t.Errorf("fromStandIn(standIn(%q)) = %q, %v", tc.text, got, ok)
		}
		if _, ok := fromStandIn(s, tc.params+1); ok {
			t.Errorf("stand-in of %q accepted with %d parameters", tc.text, tc.params+1)
		}
	}
	for _, q := range []string{"SELECT ?", "EXPLAIN SELECT 1", "CREATE DATABASE work"} {
		if n, ok := standInParams(q); ok {
			t.Errorf("standInParams(%q) = %d, true", q, n)
		}
	}
	if _, ok := fromStandIn(standIn("SELECT 1", 0), 0); ok {
		t.Error("a stand-in of plain SQL is accepted")
	}
}
