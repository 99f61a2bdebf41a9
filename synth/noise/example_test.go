package noise_test

import (
	"fmt"

	"github.com/dpsql/dpsql/synth/noise"
)

// A mechanism run with a user SEED derives one stream per purpose from the
// server secret, so the run is reproducible on this server only.
func ExampleDerive() {
	secret := noise.NewSecret() // in the server: loaded from the data directory
	const seed = 42

	measure := noise.Derive(secret, seed, "aim/measure")
	marginal := []float64{120, 43, 7, 0}
	measure.AddDiscreteGaussian(marginal, 25.3) // cost Δ²/(2σ²): budget.GaussianCost

	sel := noise.Derive(secret, seed, "aim/select")
	chosen := sel.Exponential([]float64{3.5, 9.25, 0.5}, 0.1, 1) // cost ε²/8
	fmt.Println(len(marginal), chosen >= 0 && chosen < 3)
	// Output: 4 true
}
