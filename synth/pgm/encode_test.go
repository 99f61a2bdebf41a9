package pgm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"

	"github.com/dpsql/dpsql/internal/testio"
)

func TestEncodeRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(19, 20))
	for trial := range 40 {
		d := 1 + rng.IntN(6)
		m := randomModel(t, rng, d, 1+rng.Float64()*1000)
		b, err := m.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if len(b) != m.EncodedSizeHint() || cap(b) != len(b) {
			t.Fatalf("trial %d: encoding of %d bytes (capacity %d), EncodedSizeHint %d", trial, len(b), cap(b), m.EncodedSizeHint())
		}
		got, err := UnmarshalModel(b)
		if err != nil {
			t.Fatalf("trial %d: %v", trial, err)
		}
		if !got.Domain().Equal(m.Domain()) || got.Total() != m.Total() || got.LogZ() != m.LogZ() ||
			!slices.EqualFunc(got.Cliques(), m.Cliques(), slices.Equal) {
			t.Fatalf("trial %d: decoded model differs", trial)
		}
		want := m.potentials()
		if len(got.theta) != len(want) || len(want) == 0 {
			t.Fatalf("trial %d: %d potentials decoded, want %d", trial, len(got.theta), len(want))
		}
		for i := range want {
			if math.Float64bits(got.theta[i]) != math.Float64bits(want[i]) {
				t.Fatalf("trial %d: potential %d = %v, want %v", trial, i, got.theta[i], want[i])
			}
		}
		// Answers are unchanged, bit for bit: same potentials, same tree,
		// same deterministic inference.
		attrs := rng.Perm(d)[:rng.IntN(d+1)]
		a, b2 := m.Marginal(attrs), got.Marginal(attrs)
		for i := range a {
			if math.Float64bits(a[i]) != math.Float64bits(b2[i]) {
				t.Fatalf("trial %d: marginal %v cell %d = %v after reload, want %v", trial, attrs, i, b2[i], a[i])
			}
		}
		s1, _ := m.Synthesize(rand.New(rand.NewPCG(1, 1)), 50)
		s2, _ := got.Synthesize(rand.New(rand.NewPCG(1, 1)), 50)
		if !slices.EqualFunc(s1, s2, slices.Equal) {
			t.Fatalf("trial %d: synthetic data differs after reload", trial)
		}
		again, _ := got.MarshalBinary()
		if !slices.Equal(again, b) {
			t.Fatalf("trial %d: re-encoding differs", trial)
		}
	}
}

func TestDecodeRejects(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	m := randomModel(t, rng, 4, 100)
	good, _ := m.MarshalBinary()
	reseal := func(b []byte) []byte {
		b = slices.Clone(b[:len(b)-4])
		return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
	}
	tests := []struct {
		name string
		b    []byte
		want error
	}{
		{"empty", nil, ErrModelFormat},
		{"bad magic", append([]byte("XPSQLPGM"), good[8:]...), ErrModelFormat},
		{"future version", reseal(append(append(slices.Clone(good[:8]), 2, 0, 0, 0), good[12:]...)), ErrModelVersion},
		{"flipped bit", func() []byte { b := slices.Clone(good); b[len(b)/2] ^= 1; return b }(), ErrModelFormat},
		{"truncated", reseal(good[:len(good)-12]), ErrModelFormat},
		{"extra bytes", reseal(append(slices.Clone(good[:len(good)-4]), 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)), ErrModelFormat},
	}
	for _, tt := range tests {
		if _, err := UnmarshalModel(tt.b); !errors.Is(err, tt.want) {
			t.Errorf("%s: error %v, want %v", tt.name, err, tt.want)
		}
	}
}

func FuzzUnmarshalModel(f *testing.F) {
	rng := rand.New(rand.NewPCG(23, 24))
	for range 3 {
		m := randomModel(f, rng, 3, 10)
		b, _ := m.MarshalBinary()
		f.Add(b)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		// Must not panic; anything decoded must re-encode identically.
		m, err := UnmarshalModel(b)
		if err != nil {
			return
		}
		again, _ := m.MarshalBinary()
		if !slices.Equal(again, b) {
			t.Fatal("decoded model re-encodes differently")
		}
	})
}

// TestAppendBinaryLean: a lean model encodes, clique by clique, the bytes of
// the model that holds the potentials derived from its marginals (those
// Potential and a warm start read), bit for bit and with zero cells at the
// floor; appended to a prefix, the prefix is kept and the model's checksum
// covers its own bytes only.
func TestAppendBinaryLean(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	for trial := range 40 {
		m := randomModel(t, rng, 1+rng.IntN(6), 1+rng.Float64()*1000)
		lean := m.Lean()
		derived := &Model{dom: m.dom, jt: m.jt, theta: lean.potentials(), p: m.p, logZ: m.logZ, total: m.total}
		want, err := derived.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		got, err := lean.MarshalBinary()
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) || cap(got) != len(got) {
			t.Fatalf("trial %d: lean encoding differs from the derived potentials' (%d bytes, capacity %d, want %d)", trial, len(got), cap(got), len(want))
		}
		prefix := []byte("release header")
		out, err := lean.AppendBinary(slices.Clone(prefix))
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(out[:len(prefix)], prefix) || !slices.Equal(out[len(prefix):], want) {
			t.Fatalf("trial %d: appended encoding differs", trial)
		}
		if _, err := UnmarshalModel(out[len(prefix):]); err != nil {
			t.Fatalf("trial %d: appended encoding does not decode: %v", trial, err)
		}
	}
}

// TestWriteBinary: the streamed encoding is MarshalBinary's, bit for bit,
// for models with potentials and lean ones, whatever the writer's pieces;
// its count is the bytes written; a writer's error is returned.
func TestWriteBinary(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 30))
	for trial := range 30 {
		m := randomModel(t, rng, 1+rng.IntN(6), 1+rng.Float64()*1000)
		for _, model := range []*Model{m, m.Lean()} {
			want, err := model.MarshalBinary()
			if err != nil {
				t.Fatal(err)
			}
			w := &testio.Writer{Max: 1 + rng.IntN(100)}
			n, err := model.WriteBinary(w)
			if err != nil || n != int64(len(want)) || !slices.Equal(w.B, want) {
				t.Fatalf("trial %d (lean %v): wrote %d bytes (count %d, %v), want MarshalBinary's %d", trial, model.theta == nil, len(w.B), n, err, len(want))
			}
			fail := &testio.Writer{Max: 7, FailAt: 1 + rng.IntN(len(want))}
			if _, err := model.WriteBinary(fail); !errors.Is(err, testio.ErrWriter) {
				t.Fatalf("trial %d: a writer failing at byte %d of %d: %v", trial, fail.FailAt, len(want), err)
			}
		}
	}
}

// TestEncodeLeanAllocates: encoding a lean model allocates its encoding
// and the separator tables of the derivation, not an arena of derived
// potentials beside it (8 bytes a cell, as large as the encoding);
// streaming it allocates its buffer and those tables alone (a quarter of
// the encoding here).
func TestEncodeLeanAllocates(t *testing.T) {
	dom, err := NewDomain([]string{"a", "b", "c", "d"}, []int{40, 50, 30, 20})
	if err != nil {
		t.Fatal(err)
	}
	lean := normalModel(t, rand.New(rand.NewPCG(5, 6)), dom, [][]int{{0, 1, 2}, {1, 2, 3}}, 1, 1000).Lean()
	hint := lean.EncodedSizeHint()
	for _, tt := range []struct {
		name   string
		encode func() (int, error)
		most   int
	}{
		{"MarshalBinary", func() (int, error) { b, err := lean.MarshalBinary(); return len(b), err }, hint + hint/4},
		{"WriteBinary", func() (int, error) {
			var w discardCounter
			n, err := lean.WriteBinary(&w)
			if int(n) != w.n {
				return -1, fmt.Errorf("counted %d bytes, wrote %d", n, w.n)
			}
			return w.n, err
		}, hint / 2},
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		n, err := tt.encode()
		runtime.ReadMemStats(&after)
		if err != nil || n != hint {
			t.Fatalf("%s: encoding of %d bytes, want %d (%v)", tt.name, n, hint, err)
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(tt.most) {
			t.Fatalf("%s: a lean model of %d cells allocated %d bytes for a %d-byte encoding, want at most %d", tt.name, lean.jt.total, alloc, hint, tt.most)
		}
	}
}

type discardCounter struct{ n int }

func (d *discardCounter) Write(p []byte) (int, error) { d.n += len(p); return len(p), nil }
