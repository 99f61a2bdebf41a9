package noise

import (
	"bytes"
	"encoding/binary"
	"testing"
)

func stream(s *Source, n int) []byte {
	p := make([]byte, n)
	s.Read(p)
	return p
}

func TestDeriveKeySeparation(t *testing.T) {
	other := bytes.Repeat([]byte{0x5a}, SecretSize)
	base := stream(Derive(testSecret, 7, "aim/measure"), 256)
	if again := stream(Derive(testSecret, 7, "aim/measure"), 256); !bytes.Equal(base, again) {
		t.Fatal("the same (secret, seed, label) gave different streams")
	}
	tests := []struct {
		name   string
		secret []byte
		seed   int64
		label  string
	}{
		{"other secret", other, 7, "aim/measure"},
		{"secret prefix", testSecret[:MinSecretSize], 7, "aim/measure"},
		{"other seed", testSecret, 8, "aim/measure"},
		{"negative seed", testSecret, -7, "aim/measure"},
		{"other label", testSecret, 7, "aim/select"},
		{"empty label", testSecret, 7, ""},
	}
	for _, tc := range tests {
		got := stream(Derive(tc.secret, tc.seed, tc.label), 256)
		if bytes.Equal(got, base) {
			t.Errorf("%s: same stream as the base derivation", tc.name)
		}
	}
}

func TestDerivedNoiseDependsOnSecret(t *testing.T) {
	draw := func(secret []byte) []int64 {
		s := Derive(secret, 42, "noise")
		out := make([]int64, 64)
		for i := range out {
			out[i] = s.DiscreteGaussian(100)
		}
		return out
	}
	a, b := draw(testSecret), draw(bytes.Repeat([]byte{1}, SecretSize))
	same := 0
	for i := range a {
		if a[i] == b[i] {
			same++
		}
	}
	// P(two independent N_Z(0, 100²) draws agree) < 0.003.
	if same > 5 {
		t.Errorf("%d of %d draws agree across secrets", same, len(a))
	}
	if c := draw(testSecret); !equalInts(a, c) {
		t.Error("the same (secret, seed, label) gave different noise")
	}
}

func equalInts(a, b []int64) bool {
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

func TestDerivePanicsOnShortSecret(t *testing.T) {
	for _, n := range []int{0, 1, MinSecretSize - 1} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Derive with a %d-byte secret did not panic", n)
				}
			}()
			Derive(make([]byte, n), 1, "x")
		}()
	}
}

func TestNewSourceIsFresh(t *testing.T) {
	if bytes.Equal(stream(NewSource(), 64), stream(NewSource(), 64)) {
		t.Error("two fresh sources produced the same stream")
	}
	if bytes.Equal(NewSecret(), NewSecret()) {
		t.Error("two secrets are equal")
	}
}

// TestReadUint64ShareStream checks that Read and Uint64 consume one
// keystream, across a buffer refill.
func TestReadUint64ShareStream(t *testing.T) {
	a, b := testSource("share"), testSource("share")
	p := stream(a, 3*bufSize)
	for i := 0; i < len(p); i += 8 {
		if got, want := b.Uint64(), binary.LittleEndian.Uint64(p[i:]); got != want {
			t.Fatalf("word %d: Uint64 = %#x, Read gave %#x", i/8, got, want)
		}
	}
}

func TestRandIsDerived(t *testing.T) {
	a, b := testSource("rand").Rand(), testSource("rand").Rand()
	for i := range 100 {
		if x, y := a.IntN(1000), b.IntN(1000); x != y {
			t.Fatalf("draw %d: %d != %d", i, x, y)
		}
	}
}

func TestUniform(t *testing.T) {
	s := testSource("uniform")
	for _, n := range []uint64{1, 2, 3, 7, 10, 1000} {
		const draws = 200000
		counts := make(map[int64]int)
		want := make(map[int64]float64)
		for i := range n {
			want[int64(i)] = 1 / float64(n)
		}
		for range draws {
			counts[int64(s.uniform(n))]++
		}
		chiSquare(t, "uniform", counts, want, draws)
	}
	// A bound just above 2⁶³ rejects almost half of the raw words; check the
	// upper half is hit as often as it should be.
	n := uint64(1)<<63 + 12345
	hi := 0
	const draws = 100000
	for range draws {
		x := s.uniform(n)
		if x >= n {
			t.Fatalf("uniform(%d) = %d", n, x)
		}
		if x >= n/2 {
			hi++
		}
	}
	zTest(t, "uniform upper half", hi, draws, float64(n-n/2)/float64(n))
}
