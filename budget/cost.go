package budget

import (
	"math"
	"math/big"
)

// roundUp returns the smallest float64 not below x, or an error if that is
// +Inf.
func roundUp(x *big.Float) (float64, error) {
	f, _ := new(big.Float).SetMode(big.ToPositiveInf).SetPrec(53).Set(x).Float64()
	if math.IsInf(f, 1) {
		return 0, invalidParam("cost overflows float64")
	}
	return f, nil
}

// exact returns x as a big.Float with room for exact products of two float64
// values.
func exact(x float64) *big.Float { return new(big.Float).SetPrec(256).SetFloat64(x) }

// GaussianCost returns the zCDP cost Δ²/(2σ²) of adding Gaussian or
// discrete Gaussian noise of standard deviation sigma to a query of L2
// sensitivity Δ, rounded up.
func GaussianCost(sensitivity, sigma float64) (float64, error) {
	if !(sensitivity > 0) || math.IsInf(sensitivity, 1) {
		return 0, invalidParam("sensitivity %v must be positive and finite", sensitivity)
	}
	if !(sigma > 0) || math.IsInf(sigma, 1) {
		return 0, invalidParam("sigma %v must be positive and finite", sigma)
	}
	num := exact(sensitivity)
	num.Mul(num, num)
	den := exact(sigma)
	den.Mul(den, den)
	den.Mul(den, exact(2))
	// Quotient rounded up at 53 bits directly: no double rounding.
	q := new(big.Float).SetMode(big.ToPositiveInf).SetPrec(53).Quo(num, den)
	return roundUp(q)
}

// ExponentialCost returns the zCDP cost ε²/8 of the exponential mechanism
// with parameter ε, rounded up.
func ExponentialCost(epsilon float64) (float64, error) {
	if err := checkEpsilon(epsilon); err != nil {
		return 0, err
	}
	x := exact(epsilon)
	x.Mul(x, x)
	x.Quo(x, exact(8))
	return roundUp(x)
}

// PureDPCost returns the zCDP cost ε²/2 of an ε-DP step such as the
// Laplace mechanism, rounded up.
func PureDPCost(epsilon float64) (float64, error) {
	if err := checkEpsilon(epsilon); err != nil {
		return 0, err
	}
	x := exact(epsilon)
	x.Mul(x, x)
	x.Quo(x, exact(2))
	return roundUp(x)
}
