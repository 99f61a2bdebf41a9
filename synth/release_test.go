package synth

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/dpsql/dpsql/internal/testio"
	"github.com/dpsql/dpsql/synth/pgm"
)

// testRelease builds a Result with every kind of field set, including a
// query matrix, a coarse mapping and snapshots with and without a model.
func testRelease(t *testing.T, rng *rand.Rand) *Result {
	t.Helper()
	dom, err := pgm.NewDomain([]string{"a", "b", "c"}, []int{2, 3, 4})
	if err != nil {
		t.Fatal(err)
	}
	randY := func(n int) []float64 {
		y := make([]float64, n)
		for i := range y {
			y[i] = rng.NormFloat64() * 100
		}
		return y
	}
	meas := []pgm.Measurement{
		{Attrs: []int{0}, Y: randY(2), Sigma: 3},
		{Attrs: []int{1, 2}, Y: randY(12), Sigma: 2.5},
	}
	model, err := pgm.Estimate(context.Background(), dom, meas, &pgm.EstimateOptions{Iters: 5})
	if err != nil {
		t.Fatal(err)
	}
	q := mat.NewDense(2, 3, []float64{1, 1, 0, 0, 0, 1})
	return &Result{
		Model: model,
		Measurements: []Measurement{
			{Measurement: meas[0]},
			{Measurement: pgm.Measurement{Attrs: []int{1}, Query: q, Y: randY(2), Sigma: 1.5}, Round: 2, Epsilon: 0.25,
				Coarse: [][]int{{0, 0, 1}}},
			{Measurement: meas[1], Round: 3, Epsilon: 0.5},
			// An HDMM-style Kronecker measurement: identity on a, prefix
			// ranges on c.
			{Measurement: pgm.Measurement{Attrs: []int{0, 2}, Kron: []*mat.Dense{nil, prefix(4)}, Y: randY(8), Sigma: 4.5}},
		},
		Rounds: []Round{
			{Round: 1, Epsilon: 0.1, Sigma: 4, Sensitivity: 2, Candidates: 6, Selected: []int{1, 2}, RhoUsed: 0.01, ModelSize: 0.001},
			{Round: 2, Epsilon: 0.2, Sigma: 2, Sensitivity: 2, Candidates: 5, Selected: []int{0, 1}, RhoUsed: 0.02, ModelSize: 0.002},
		},
		LastCandidate: []CandidateRound{{Attrs: []int{0, 1}, Round: 2}, {Attrs: []int{0, 2}, Round: 0}},
		Snapshots: []Snapshot{{Round: 1}, {Round: 2, Model: model},
			{Round: 3, Marginals: []SnapshotMarginal{{Attrs: []int{0, 1}, X: randY(6)}, {Attrs: []int{2}, X: randY(4)}}}},
		Rows:     [][]uint16{{0, 1}, {2, 2}, {3, 0}},
		RhoUsed:  0.02,
		Note:     "best mixture error 0.12",
		Artifact: []byte{0, 1, 2, 0xff},
	}
}

// prefix is the n×n prefix-range matrix.
func prefix(n int) *mat.Dense {
	p := mat.NewDense(n, n, nil)
	for z := range n {
		for v := 0; v <= z; v++ {
			p.Set(z, v, 1)
		}
	}
	return p
}

func TestReleaseRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	tests := []struct {
		name string
		r    *Result
	}{
		{"empty", &Result{}},
		{"answers only", &Result{RhoUsed: 0.5, Measurements: []Measurement{
			{Measurement: pgm.Measurement{Attrs: []int{0, 1}, Y: []float64{1, -2, 3.5, 0}, Sigma: 7}}}}},
		{"adaptive", testRelease(t, rng)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := MarshalRelease(tt.r)
			if err != nil {
				t.Fatal(err)
			}
			// The buffer was sized once: never outgrown.
			if hint := sizeHint(tt.r); len(b) > hint || cap(b) != hint {
				t.Errorf("encoding of %d bytes, capacity %d, sizeHint %d", len(b), cap(b), hint)
			}
			got, err := UnmarshalRelease(b)
			if err != nil {
				t.Fatal(err)
			}
			if got.Model != nil || got.Rows != nil {
				t.Error("decoded release has a model or rows")
			}
			want := *tt.r
			want.Model, want.Rows = nil, nil
			// Snapshot models are compared by their encoding.
			if len(got.Snapshots) != len(want.Snapshots) {
				t.Fatalf("%d snapshots, want %d", len(got.Snapshots), len(want.Snapshots))
			}
			for i := range want.Snapshots {
				g, w := got.Snapshots[i], want.Snapshots[i]
				if g.Round != w.Round || (g.Model == nil) != (w.Model == nil) || !reflect.DeepEqual(g.Marginals, w.Marginals) {
					t.Fatalf("snapshot %d = %+v, want %+v", i, g, w)
				}
				if w.Model != nil {
					gb, _ := g.Model.MarshalBinary()
					wb, _ := w.Model.MarshalBinary()
					if !bytes.Equal(gb, wb) {
						t.Errorf("snapshot %d model differs", i)
					}
				}
			}
			got.Snapshots, want.Snapshots = nil, nil
			if !reflect.DeepEqual(got, &want) {
				t.Errorf("round trip\n got %+v\nwant %+v", got, &want)
			}
			// Encoding is deterministic.
			if b2, _ := MarshalRelease(tt.r); !bytes.Equal(b, b2) {
				t.Error("two encodings of the same release differ")
			}
		})
	}
}

// Releases written by older versions still decode: version 1 (no note, no
// artifact), version 2 (no Kronecker measurements) and version 3 (no
// snapshot marginals, only models).
func TestReleaseOldVersions(t *testing.T) {
	r := testRelease(t, rand.New(rand.NewPCG(5, 6)))
	if _, err := marshalRelease(r, 3); err == nil {
		t.Error("version 3 accepted snapshot marginals")
	}
	models := slices.DeleteFunc(slices.Clone(r.Snapshots), func(s Snapshot) bool { return s.Marginals != nil })
	b, err := marshalRelease(&Result{Snapshots: models}, 3)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := UnmarshalRelease(b); err != nil || len(got.Snapshots) != len(models) || got.Snapshots[1].Model == nil || got.Snapshots[1].Marginals != nil {
		t.Errorf("version 3 snapshots decoded as %+v (%v)", got, err)
	}
	r.Model, r.Rows, r.Snapshots = nil, nil, nil
	var plain []Measurement
	for _, m := range r.Measurements {
		if m.Kron == nil {
			plain = append(plain, m)
		}
	}
	if _, err := marshalRelease(r, 2); err == nil {
		t.Error("version 2 accepted a Kronecker measurement")
	}
	r.Measurements = plain
	for _, v := range []uint64{1, 2, 3} {
		want := *r
		if v == 1 {
			want.Note, want.Artifact = "", nil
		}
		b, err := marshalRelease(&want, v)
		if err != nil {
			t.Fatal(err)
		}
		got, err := UnmarshalRelease(b)
		if err != nil {
			t.Fatalf("version %d: %v", v, err)
		}
		if !reflect.DeepEqual(got, &want) {
			t.Errorf("version %d decoded as\n%+v\nwant\n%+v", v, got, &want)
		}
	}
}

func TestReleaseMalformed(t *testing.T) {
	b, err := MarshalRelease(testRelease(t, rand.New(rand.NewPCG(3, 4))))
	if err != nil {
		t.Fatal(err)
	}
	// Every strict prefix is refused: nothing is silently dropped.
	for n := range len(b) {
		if _, err := UnmarshalRelease(b[:n]); !errors.Is(err, ErrRelease) {
			t.Fatalf("prefix of %d/%d bytes: err = %v, want ErrRelease", n, len(b), err)
		}
	}
	bad := [][]byte{
		append(bytes.Clone(b), 0),                                              // trailing byte
		append([]byte("DPRX"), b[4:]...),                                       // magic
		append([]byte("DPRL\x05"), b[5:]...),                                   // version
		[]byte("DPRL\x01\x00\x00\x00\x00\x00\x00\x00\x00\xff\xff\xff\xff\x0f"), // huge count
	}
	for i, in := range bad {
		if _, err := UnmarshalRelease(in); !errors.Is(err, ErrRelease) {
			t.Errorf("case %d: err = %v, want ErrRelease", i, err)
		}
	}
}

// TestWriteRelease: the streamed release is MarshalRelease's, byte for
// byte, with a snapshot model and marginals larger than the writer's
// buffer; its count is the bytes written; a writer's error is returned
// wherever it happens.
func TestWriteRelease(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	r := testRelease(t, rng)
	big := make([]float64, 3*releaseBuffer/8)
	for i := range big {
		big[i] = rng.NormFloat64()
	}
	r.Snapshots = append(r.Snapshots, Snapshot{Round: 4, Model: r.Model, Marginals: []SnapshotMarginal{{Attrs: []int{0, 1, 2}, X: big}}})
	r.Measurements[0].Y = big
	want, err := MarshalRelease(r)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) < 4*releaseBuffer {
		t.Fatalf("test release of %d bytes, want several buffers", len(want))
	}
	for _, piece := range []int{1, 1000, 1 << 20} {
		w := &testio.Writer{Max: piece}
		n, err := WriteRelease(w, r)
		if err != nil || n != int64(len(want)) || !bytes.Equal(w.B, want) {
			t.Fatalf("pieces of %d: wrote %d bytes (count %d, %v), want MarshalRelease's %d", piece, len(w.B), n, err, len(want))
		}
	}
	for range 20 {
		w := &testio.Writer{Max: 777, FailAt: 1 + rng.IntN(len(want))}
		if _, err := WriteRelease(w, r); !errors.Is(err, testio.ErrWriter) {
			t.Fatalf("a writer failing at byte %d of %d: %v", w.FailAt, len(want), err)
		}
	}
}
