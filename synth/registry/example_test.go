package registry_test

import (
	"context"
	"fmt"

	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/internal/synthtest"
	"github.com/dpsql/dpsql/synth/noise"
	"github.com/dpsql/dpsql/synth/registry"
)

// Example shows how the server drives a mechanism: look it up, validate the
// statement's options (before reserving budget), then run it with the
// reserved ρ.
func Example() {
	mech, err := registry.Lookup("AIM")
	if err != nil {
		panic(err)
	}
	runner, err := mech.New([]synth.Option{{Name: "max_model_size", Value: 10}, {Name: "PGM_ITERS", Value: 30}})
	if err != nil {
		panic(err)
	}
	data := synthtest.Chain(1, 2000, []int{3, 4, 2, 5})
	res, err := runner.Run(context.Background(), &synth.Input{
		Data:     data,
		Workload: []synth.Marginal{{Attrs: []int{0, 1}, Weight: 1}, {Attrs: []int{1, 2, 3}, Weight: 1}},
		Rho:      0.25,
		Noise:    noise.Derive([]byte("example secret, not a real one.."), 7, "example"),
		Rows:     1000,
	})
	if err != nil {
		panic(err)
	}
	fmt.Printf("%s released %s: ρ used %.12f of 0.25, %d synthetic rows\n",
		mech.Name(), mech.Output(), res.RhoUsed, len(res.Rows[0]))

	_, err = mech.New([]synth.Option{{Name: "EPSILON", Value: 1}})
	fmt.Println(err)
	// Output:
	// aim released synthetic data: ρ used 0.250000000000 of 0.25, 1000 synthetic rows
	// aim: unknown option "EPSILON" (valid options: MAX_MODEL_SIZE, ROUNDS, PGM_ITERS, FINAL_ITERS, FINAL_TOL, INIT_ROUNDS, COARSE_BINS, COARSE_MAX_SIZE, LAZY)
}
