package aim

import (
	"errors"
	"testing"

	"github.com/dpsql/dpsql/synth"
)

func TestNewOptions(t *testing.T) {
	tests := []struct {
		name string
		opts []synth.Option
		want Options
		err  error
	}{
		{name: "defaults", want: Options{}},
		{name: "all", opts: []synth.Option{
			{Name: "max_model_size", Value: 20.5}, {Name: "ROUNDS", Value: int64(100)},
			{Name: "pgm_iters", Value: "30"}, {Name: "Final_Iters", Value: 500},
		}, want: Options{MaxModelSize: 20.5, Rounds: 100, PGMIters: 30, FinalIters: 500}},
		{name: "final tol", opts: []synth.Option{{Name: "FINAL_TOL", Value: 1e-3}}, want: Options{FinalTol: 1e-3}},
		{name: "final tol off", opts: []synth.Option{{Name: "FINAL_TOL", Value: 0}}, want: Options{FinalTol: -1}},
		{name: "coarse bins", opts: []synth.Option{{Name: "COARSE_BINS", Value: 10}}, want: Options{CoarseBins: 10}},
		{name: "coarse bins off", opts: []synth.Option{{Name: "COARSE_BINS", Value: 0}}, want: Options{CoarseBins: -1}},
		{name: "coarse max size", opts: []synth.Option{{Name: "COARSE_MAX_SIZE", Value: 4}}, want: Options{CoarseMaxSize: 4}},
		{name: "zero coarse max size", opts: []synth.Option{{Name: "COARSE_MAX_SIZE", Value: 0}}, err: synth.ErrInvalidOption},
		{name: "negative coarse bins", opts: []synth.Option{{Name: "COARSE_BINS", Value: -2}}, err: synth.ErrInvalidOption},
		{name: "negative final tol", opts: []synth.Option{{Name: "FINAL_TOL", Value: -1e-3}}, err: synth.ErrInvalidOption},
		{name: "unknown", opts: []synth.Option{{Name: "EPSILON", Value: 1}}, err: synth.ErrUnknownOption},
		{name: "fractional int", opts: []synth.Option{{Name: "ROUNDS", Value: 2.5}}, err: synth.ErrInvalidOption},
		{name: "negative size", opts: []synth.Option{{Name: "MAX_MODEL_SIZE", Value: -1}}, err: synth.ErrInvalidOption},
		{name: "zero iters", opts: []synth.Option{{Name: "PGM_ITERS", Value: 0}}, err: synth.ErrInvalidOption},
		{name: "not a number", opts: []synth.Option{{Name: "PGM_ITERS", Value: "many"}}, err: synth.ErrInvalidOption},
		{name: "duplicate", opts: []synth.Option{{Name: "ROUNDS", Value: 10}, {Name: "rounds", Value: 10}}, err: synth.ErrInvalidOption},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Mechanism{}.New(tt.opts)
			if !errors.Is(err, tt.err) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if err != nil {
				return
			}
			if got := *r.(*Options); got != tt.want {
				t.Errorf("options %+v, want %+v", got, tt.want)
			}
		})
	}
	// Zero fields take the defaults; a negative FinalTol (FINAL_TOL = 0)
	// stays, and Estimate is then given no tolerance.
	if d := (Options{}).withDefaults(3); d.FinalTol != DefaultFinalTol || d.FinalIters != DefaultFinalIters {
		t.Errorf("defaults %+v", d)
	}
	if d := (Options{}).withDefaults(3); d.CoarseBins != DefaultCoarseBins {
		t.Errorf("default coarse bins %d", d.CoarseBins)
	}
	if d := (Options{CoarseBins: -1}).withDefaults(3); d.CoarseBins != -1 {
		t.Errorf("COARSE_BINS = 0 became %v", d.CoarseBins)
	}
	if d := (Options{FinalTol: -1}).withDefaults(3); d.FinalTol != -1 {
		t.Errorf("FINAL_TOL = 0 became %v", d.FinalTol)
	}
	// The unknown-option error names the valid options.
	_, err := Mechanism{}.New([]synth.Option{{Name: "X", Value: 1}})
	var oe *synth.OptionError
	if !errors.As(err, &oe) || len(oe.Valid) != len(schema) {
		t.Errorf("unknown option error %v does not list the %d valid options", err, len(schema))
	}
}
