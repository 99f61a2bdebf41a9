package rap

import (
	"context"
	"math"
	"testing"

	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/internal/prodq"
	"github.com/dpsql/dpsql/synth/internal/synthtest"
	"github.com/dpsql/dpsql/synth/noise"
)

var secret = []byte("rap test secret, thirty-two bytes")

func testInput(seed int64) *synth.Input {
	return &synth.Input{
		Data:      synthtest.Chain(5, 3000, []int{4, 3, 5, 2, 4}),
		Workload:  synthtest.AllK(5, 2),
		Rho:       0.5,
		Noise:     noise.Derive(secret, seed, "noise"),
		PostNoise: noise.Derive(secret, seed, "post"),
	}
}

func sets(w []synth.Marginal) [][]int {
	s := make([][]int, len(w))
	for i, m := range w {
		s[i] = m.Attrs
	}
	return s
}

func TestRun(t *testing.T) {
	for _, c := range []struct {
		m      synth.Mechanism
		maxErr float64
	}{
		// An independent model's error is about 0.3 on this chain and
		// uniform rows' 0.99. RAPsoftmax fits the 8 measured pairs (the
		// 3000 sampled rows add about 0.07). RAP fits the measured answers
		// with a table that is not a distribution (checked below), and its
		// rounded rows lose most of it: the failure mode of [000] App. D.3.
		{SoftmaxMechanism{}, 0.15},
		{Mechanism{}, 0.9},
	} {
		in := testInput(1)
		r, err := c.m.New([]synth.Option{{Name: "ROUNDS", Value: 4}, {Name: "PER_ROUND", Value: 2}, {Name: "RELAXED", Value: 200},
			{Name: "MAX_ITERS", Value: 300}})
		if err != nil {
			t.Fatal(err)
		}
		res, err := r.Run(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(res.RhoUsed-in.Rho) > 1e-12 || len(res.Rounds) != 4 || len(res.Measurements) != 8 {
			t.Errorf("%s: ρ used %v, %d rounds, %d measurements", c.m.Name(), res.RhoUsed, len(res.Rounds), len(res.Measurements))
		}
		if n := len(res.Rows[0]); n < 2900 || n > 3100 {
			t.Errorf("%s: %d rows, want about 3000", c.m.Name(), n)
		}
		e := synthtest.Error(t, in.Data, sets(in.Workload), res.Rows)
		if e > c.maxErr {
			t.Errorf("%s: workload error %.4f, want < %v", c.m.Name(), e, c.maxErr)
		}
		soft, blocks, rows, d, err := UnmarshalTable(res.Artifact)
		if err != nil || soft != (c.m.Name() == "rap_softmax") || len(blocks) != 5 || rows != 200 || len(d) != 200*18 {
			t.Errorf("%s: artifact: %v %v %v %d %d", c.m.Name(), err, soft, blocks, rows, len(d))
		}
		for _, v := range d {
			if v < -1 || v > 1 {
				t.Fatalf("%s: relaxed value %v outside [-1, 1]", c.m.Name(), v)
			}
		}
		// The relaxed table itself answers the measured marginals closely:
		// mean |q(D) − y/n| over measured cells.
		l := prodq.NewLayout(blocks)
		var sc prodq.Scratch
		var sum float64
		var cells int
		for _, m := range res.Measurements {
			a := l.Answer(nil, &sc, d, rows, m.Attrs)
			for y, v := range a {
				sum += math.Abs(v - m.Y[y]/3000)
				cells++
			}
		}
		if e := sum / float64(cells); e > 0.02 {
			t.Errorf("%s: relaxed table's mean error on the measured cells %.4f, want < 0.02", c.m.Name(), e)
		}
	}
}

func TestCancel(t *testing.T) {
	for _, m := range []synth.Mechanism{Mechanism{}, SoftmaxMechanism{}} {
		r, _ := m.New([]synth.Option{{Name: "RELAXED", Value: 50}})
		synthtest.CheckCancel(t, r, testInput(2))
	}
}

func TestOptions(t *testing.T) {
	for _, o := range [][]synth.Option{{{Name: "PER_ROUND", Value: 0}}, {{Name: "ALPHA", Value: 0}}, {{Name: "X", Value: 1}}} {
		if _, err := (Mechanism{}).New(o); err == nil {
			t.Errorf("%v accepted", o)
		}
	}
}
