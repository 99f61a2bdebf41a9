package pep

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/internal/synthtest"
)

// publicInput is input with a public table drawn from the same chain.
func publicInput(seed int64, rho float64) *synth.Input {
	in := input(seed, rho)
	in.Public = synthtest.Chain(99, 800, []int{4, 3, 5, 2, 4})
	return in
}

func TestPublic(t *testing.T) {
	for _, m := range []synth.Mechanism{PMWPub{}, PEPPub{}} {
		t.Run(m.Name(), func(t *testing.T) {
			if synth.PublicUseOf(m) != synth.PublicRequired || m.Output() != synth.RowsOnly {
				t.Fatal("want a rows-only mechanism requiring public data")
			}
			in := publicInput(3, 0.5)
			res := synthtest.MustRun(t, m, opts("ROUNDS", 10), in)
			if res.Model != nil || math.Abs(res.RhoUsed-in.Rho) > 1e-12 {
				t.Errorf("model %v, ρ used %v (want %v)", res.Model != nil, res.RhoUsed, in.Rho)
			}
			if !strings.Contains(res.Note, "best-mixture error") {
				t.Errorf("note %q", res.Note)
			}
			// Rows: about N̂ of them, every one a public row.
			sup := newSupport(in.Public)
			inSup := map[[5]uint16]bool{}
			for x := range sup.count {
				var k [5]uint16
				for a := range k {
					k[a] = sup.cols[a][x]
				}
				inSup[k] = true
			}
			if n := len(res.Rows[0]); math.Abs(float64(n)-4000) > 200 {
				t.Errorf("%d rows, want about 4000", n)
			}
			for i := range res.Rows[0] {
				var k [5]uint16
				for a := range k {
					k[a] = res.Rows[a][i]
				}
				if !inSup[k] {
					t.Fatalf("row %d = %v is not a public row", i, k)
				}
			}
			cols, p, err := DecodeWeights(res.Artifact)
			if err != nil || len(p) != len(sup.count) || len(cols) != 5 {
				t.Fatalf("artifact: %v, %d points", err, len(p))
			}
			sum := 0.0
			for _, v := range p {
				sum += v
			}
			if math.Abs(sum-1) > 1e-9 {
				t.Errorf("weights sum to %v", sum)
			}
			if e := maxError(t, in, res.Rows); e > 0.05 {
				t.Errorf("max error %.4f, want ≤ 0.05", e)
			}
			// The public distribution alone (no measurement) is the floor
			// to beat: it is already close, the release must not be worse
			// by more than noise.
		})
	}
}

func TestPublicRefused(t *testing.T) {
	for _, m := range []synth.Mechanism{PMWPub{}, PEPPub{}} {
		r, _ := m.New(nil)
		in := input(1, 1)
		if _, err := r.Run(context.Background(), in); err == nil || !strings.Contains(err.Error(), "PUBLIC") {
			t.Errorf("%s without public data: %v", m.Name(), err)
		}
		in.Public = synthtest.Chain(1, 100, []int{4, 3, 5, 2, 5})
		res, err := r.Run(context.Background(), in)
		if err == nil || !strings.Contains(err.Error(), "same columns and domains") {
			t.Errorf("%s with a mismatched public domain: %v", m.Name(), err)
		}
		if res != nil && res.RhoUsed != 0 {
			t.Errorf("refused run spent %v", res.RhoUsed)
		}
	}
}

func TestWeightsRoundTrip(t *testing.T) {
	cols := [][]uint16{{1, 2, 3}, {0, 0, 7}}
	p := []float64{0.25, 0.5, 0.25}
	c2, p2, err := DecodeWeights(encodeWeights(cols, p))
	if err != nil || len(c2) != 2 || c2[1][2] != 7 || p2[1] != 0.5 {
		t.Fatalf("%v %v %v", c2, p2, err)
	}
	if _, _, err := DecodeWeights(encodeWeights(cols, p)[:20]); err == nil {
		t.Error("truncated artifact decoded")
	}
}
