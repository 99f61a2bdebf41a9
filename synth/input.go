package synth

import (
	"fmt"
	"math"
	"slices"

	"github.com/dpsql/dpsql/internal/qfactors"
	"github.com/dpsql/dpsql/synth/noise"
	"gonum.org/v1/gonum/mat"
)

// Check validates in and returns its workload in canonical form: attribute
// sets sorted ascending, duplicates merged by summing their weights, in the
// order of first appearance. If needWorkload is false the workload is not
// checked and nil is returned.
func (in *Input) Check(needWorkload bool) ([]Marginal, error) {
	if in.Data == nil {
		return nil, fmt.Errorf("%w: no data", ErrInvalidInput)
	}
	if in.Noise == nil {
		return nil, fmt.Errorf("%w: no noise source", ErrInvalidInput)
	}
	if !(in.Rho > 0) || math.IsInf(in.Rho, 0) {
		return nil, fmt.Errorf("%w: ρ = %v, want a finite positive budget", ErrInvalidInput, in.Rho)
	}
	if in.Rows < 0 {
		return nil, fmt.Errorf("%w: rows = %d, want ≥ 0", ErrInvalidInput, in.Rows)
	}
	if in.Data.Domain().Len() == 0 {
		return nil, fmt.Errorf("%w: empty domain", ErrInvalidInput)
	}
	if !needWorkload {
		return nil, nil
	}
	w, err := CanonicalWorkload(in.Data.Domain().Len(), in.Workload)
	if err != nil {
		return nil, err
	}
	dom := in.Data.Domain()
	for i, m := range w {
		for j, f := range m.Kron {
			if f == nil {
				continue
			}
			if r, c := f.Dims(); r == 0 || c != dom.Size(m.Attrs[j]) {
				return nil, fmt.Errorf("%w: workload marginal %d: query factor on attribute %d is %d×%d, want %d columns", ErrInvalidInput, i, m.Attrs[j], r, c, dom.Size(m.Attrs[j]))
			}
		}
	}
	return w, nil
}

// CheckNoise reports whether the samplers accept every noise scale in
// sigmas and every exponential-mechanism ε in epsilons (sensitivity 1; a
// mechanism checks other sensitivities itself). Mechanisms call it on every
// parameter they will draw with, while they validate their input and before
// their first cancellation check, so that the engine's preflight rejects a
// request the samplers would refuse before any budget is charged.
func CheckNoise(sigmas, epsilons []float64) error {
	for _, s := range sigmas {
		if err := noise.CheckSigma(s); err != nil {
			return fmt.Errorf("%w: %v (the budget is too small or the weights too uneven for this request)", ErrInvalidInput, err)
		}
	}
	for _, e := range epsilons {
		if err := noise.CheckExponential(e, 1); err != nil {
			return fmt.Errorf("%w: %v (the budget is too small for this many rounds)", ErrInvalidInput, err)
		}
	}
	return nil
}

// CanonicalWorkload validates a workload over d attributes and returns it
// with every attribute set sorted and duplicates merged (weights summed).
// Every set must be non-empty with distinct attributes in [0, d), every
// weight finite and non-negative, and some weight positive.
func CanonicalWorkload(d int, w []Marginal) ([]Marginal, error) {
	if len(w) == 0 {
		return nil, fmt.Errorf("%w: empty workload", ErrInvalidInput)
	}
	out := make([]Marginal, 0, len(w))
	index := make(map[string]int, len(w))
	positive := false
	for i, m := range w {
		if len(m.Attrs) == 0 {
			return nil, fmt.Errorf("%w: workload marginal %d has no attributes", ErrInvalidInput, i)
		}
		if math.IsNaN(m.Weight) || math.IsInf(m.Weight, 0) || m.Weight < 0 {
			return nil, fmt.Errorf("%w: workload marginal %d has weight %v", ErrInvalidInput, i, m.Weight)
		}
		if m.Kron != nil && len(m.Kron) != len(m.Attrs) {
			return nil, fmt.Errorf("%w: workload marginal %d has %d query factors for %d attributes", ErrInvalidInput, i, len(m.Kron), len(m.Attrs))
		}
		attrs := slices.Clone(m.Attrs)
		slices.Sort(attrs)
		var kron []*mat.Dense
		if m.Kron != nil {
			kron = make([]*mat.Dense, len(attrs))
			for j, a := range m.Attrs {
				kron[slices.Index(attrs, a)] = m.Kron[j]
			}
		}
		for j, a := range attrs {
			if a < 0 || a >= d {
				return nil, fmt.Errorf("%w: workload marginal %d: attribute %d outside [0, %d)", ErrInvalidInput, i, a, d)
			}
			if j > 0 && attrs[j-1] == a {
				return nil, fmt.Errorf("%w: workload marginal %d repeats attribute %d", ErrInvalidInput, i, a)
			}
		}
		positive = positive || m.Weight > 0
		k := Key(attrs)
		if j, ok := index[k]; ok {
			out[j].Kron = qfactors.Merge(out[j].Kron, kron)
			out[j].Weight += m.Weight
			if math.IsInf(out[j].Weight, 0) {
				return nil, fmt.Errorf("%w: the weights of the workload marginals on attributes %v sum to +Inf", ErrInvalidInput, attrs)
			}
			continue
		}
		index[k] = len(out)
		out = append(out, Marginal{Attrs: attrs, Weight: m.Weight, Kron: kron})
	}
	if !positive {
		return nil, fmt.Errorf("%w: every workload weight is zero", ErrInvalidInput)
	}
	return out, nil
}

// Key is a map key for a sorted attribute set.
func Key(attrs []int) string {
	b := make([]byte, 0, 2*len(attrs))
	for _, a := range attrs {
		b = append(b, byte(a>>8), byte(a))
	}
	return string(b)
}
