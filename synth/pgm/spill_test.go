package pgm

import (
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"testing"
)

// TestSpillLoad: models spilled one after another into one file load back
// as lean models with the same marginals bit for bit, hence the same
// answers, samples and encoding; a changed byte or a truncated file is an
// error.
func TestSpillLoad(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	f, err := os.CreateTemp(t.TempDir(), "spill-*")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var models []*Model
	var spilled []*Spilled
	for range 6 {
		m := randomModel(t, rng, 1+rng.IntN(6), 1+rng.Float64()*1000)
		// Larger than one chunk sometimes: the chunk boundaries are crossed.
		s, err := m.Spill(f)
		if err != nil {
			t.Fatal(err)
		}
		models, spilled = append(models, m), append(spilled, s)
	}
	for k, s := range spilled {
		m := models[k]
		got, err := s.Load()
		if err != nil {
			t.Fatal(err)
		}
		if got.theta != nil || got.Size() != m.Size() || got.Total() != m.Total() || got.LogZ() != m.LogZ() {
			t.Fatalf("model %d: loaded model is not lean or differs in size, total or log Z", k)
		}
		if !slices.EqualFunc(got.p, m.p, func(a, b float64) bool { return math.Float64bits(a) == math.Float64bits(b) }) {
			t.Fatalf("model %d: marginals differ after loading", k)
		}
		a, _ := got.MarshalBinary()
		b, _ := m.Lean().MarshalBinary()
		if !slices.Equal(a, b) {
			t.Fatalf("model %d: encoding differs after loading", k)
		}
	}
	// A changed byte, anywhere in a model's marginals: ErrSpillCorrupt,
	// and the neighbours still load.
	for k, s := range spilled {
		n := int64(8 * len(models[k].p))
		at := s.off + rng.Int64N(n)
		var b [1]byte
		if _, err := f.ReadAt(b[:], at); err != nil {
			t.Fatal(err)
		}
		flipped := [1]byte{b[0] ^ 1<<rng.IntN(8)}
		if _, err := f.WriteAt(flipped[:], at); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Load(); !errors.Is(err, ErrSpillCorrupt) {
			t.Fatalf("model %d with byte %d changed: Load gave %v, want ErrSpillCorrupt", k, at-s.off, err)
		}
		for j, o := range spilled {
			if j == k {
				continue
			}
			if _, err := o.Load(); err != nil {
				t.Fatalf("model %d after model %d's byte changed: %v", j, k, err)
			}
		}
		if _, err := f.WriteAt(b[:], at); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Load(); err != nil {
			t.Fatalf("model %d restored: %v", k, err)
		}
	}
	// Truncated: the last model cannot be read back.
	last := spilled[len(spilled)-1]
	if err := f.Truncate(last.off + 8); err != nil {
		t.Fatal(err)
	}
	if len(models[len(models)-1].p) > 1 {
		if _, err := last.Load(); err == nil {
			t.Fatal("loaded a model from a truncated file")
		}
	}
}

// TestSpillLarge crosses the chunk boundary: a model of more than one
// chunk of cells round-trips.
func TestSpillLarge(t *testing.T) {
	dom, err := NewDomain([]string{"a", "b", "c"}, []int{64, 64, 40})
	if err != nil {
		t.Fatal(err)
	}
	m := normalModel(t, rand.New(rand.NewPCG(7, 8)), dom, [][]int{{0, 1, 2}}, 1, 500)
	if len(m.p) <= spillChunk {
		t.Fatalf("%d cells: not more than one chunk", len(m.p))
	}
	f, err := os.CreateTemp(t.TempDir(), "spill-*")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s, err := m.Spill(f)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Load()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.p, m.p) {
		t.Fatal("marginals differ after loading")
	}
}
