package budget

import (
	"math"
)

// units is an amount of ρ in integer units of 2⁻⁴⁰ (see Rounding in the
// package documentation).
type units uint64

const (
	unitShift = 40
	// maxUnits keeps every figure, and every sum of two figures, exactly
	// representable as a float64 and far from uint64 overflow.
	maxUnits units = 1 << 53
)

// MaxRho is the largest ρ a table's budget can hold.
const MaxRho = float64(maxUnits >> unitShift)

// ceilUnits returns ρ rounded up to a whole unit (for charges).
func ceilUnits(rho float64) (units, error) {
	return toUnits(rho, math.Ceil)
}

// floorUnits returns ρ rounded down to a whole unit (for totals).
func floorUnits(rho float64) (units, error) {
	return toUnits(rho, math.Floor)
}

func toUnits(rho float64, round func(float64) float64) (units, error) {
	if err := checkRho(rho); err != nil {
		return 0, err
	}
	// Scaling by a power of two is exact (ρ·2⁴⁰ cannot underflow to a
	// subnormal for ρ ≥ 2⁻¹⁰⁷⁴), so round sees the exact value.
	u := round(math.Ldexp(rho, unitShift))
	if u > float64(maxUnits) {
		return 0, invalidParam("rho %.6g exceeds the maximum %v", rho, MaxRho)
	}
	return units(u), nil
}

// rho returns u as a float64, exactly.
func (u units) rho() float64 { return math.Ldexp(float64(u), -unitShift) }
