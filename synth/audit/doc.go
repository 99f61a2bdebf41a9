// Package audit estimates lower bounds on the privacy loss of dpsql's
// mechanisms empirically, the way an attacker would try to break them.
//
// # The attack
//
// A Scenario is a pair of neighbouring datasets: a small seeded D and
// D' = D plus one target row, chosen in cells that D leaves empty (the
// adversarial choice: a rare row is the one mechanisms that adapt to the data
// react to most). Release runs a mechanism many times on each with fresh
// noise and computes, from every release, test statistics an attacker who
// knows D could compute: the log-likelihood ratio of the released
// measurements at the target row (for Gaussian measurements the most
// powerful test), the model's count of the target cell and the number of
// synthetic rows equal to the target row.
//
// The first half of the runs chooses the statistic and the threshold event S
// (T ≥ t or T < t) that best separate D from D'; the second half, unseen by
// that choice, estimates p = P[S | one dataset] and q = P[S | the other].
// An (ε, δ)-DP mechanism has p ≤ e^ε·q + δ, so with the one-sided
// Clopper–Pearson bounds p_lo and q_hi at level α,
//
//	ε̂ = ln((p_lo − δ)/q_hi)
//
// is a lower bound on the mechanism's ε with probability at least 1 − 2α
// (α per bound, DefaultAlpha = 10⁻³). The audit passes when ε̂ ≤ ε, the ε
// the mechanism claims for the ρ it was given. A pass shows only that this
// attack did not refute the claim; a failure (at α small) is evidence of a
// bug: noise too small, a budget split that overspends, a data-dependent
// choice left unaccounted.
//
// # The derivation of the noise
//
// Repeat attacks how noise is keyed rather than how much there is: each
// trial is a new server (a Derivation returns its NoiseProvider, which keys
// its k-th release) that answers the same request twice, once on D and once
// on D or D'. Its statistics are the differences between the two releases,
// so repeated noise cancels: if a server keyed a seeded request's noise by
// (secret, seed, table, target), as dpsql once did, the two releases on D
// are identical and those on D and D' differ exactly in the target row's
// cells, and ε̂ far exceeds the ε of two releases. Repeat also tests the two
// releases on the same data for correlation. dpsql's noise is Fresh: every
// release is keyed from crypto/rand.
//
// # Cost
//
// Runs are independent and spread over GOMAXPROCS goroutines; both audits
// stop at the first error or when their context is cancelled. Options gives
// the options the audit uses for each registered mechanism: its defaults,
// with fewer estimation iterations, which are post-processing.
package audit
