package hpd

import "math"

// Errors are a release's workload errors on the paper's scale: Q_G counts
// divided by the number of households, Q_I and Q_R counts by the number of
// persons, each data set by its own totals.
type Errors struct {
	Max, Mean float64 // over every cell of every set
	N         int     // cells
}

// WorkloadErrors returns the errors of syn against real over sets, per
// kind (index Kind) and over all of them.
func WorkloadErrors(d *Domain, real, syn *Records, sets []QuerySet) (perKind [3]Errors, all Errors) {
	for i := range sets {
		q := &sets[i]
		a, b := Answers(d, real, q), Answers(d, syn, q)
		nr, ns := float64(real.Households()), float64(max(syn.Households(), 1))
		if q.Kind != GroupLevel {
			nr, ns = float64(real.Persons()), float64(max(syn.Persons(), 1))
		}
		for c := range a {
			e := math.Abs(a[c]/nr - b[c]/ns)
			for _, x := range []*Errors{&perKind[q.Kind], &all} {
				x.Max = max(x.Max, e)
				x.Mean += e
				x.N++
			}
		}
	}
	for i := range perKind {
		if perKind[i].N > 0 {
			perKind[i].Mean /= float64(perKind[i].N)
		}
	}
	if all.N > 0 {
		all.Mean /= float64(all.N)
	}
	return perKind, all
}
