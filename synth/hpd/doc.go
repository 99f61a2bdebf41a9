// Package hpd synthesizes hierarchical data — households and their persons —
// under a household privacy unit, after Liu & Wu, "Private Synthetic Data
// with Hierarchical Structure" (seed 003; spec Part II).
//
// # Data and privacy unit
//
// A household (group) has categorical group attributes and 1..K persons, each
// with categorical individual attributes. Neighbouring data sets add or
// remove one household with all its persons; households larger than K are
// truncated to their first K persons before any query is answered (the
// public rule of Census PHSafe), so one household changes a group-level
// count (Q_G) by at most 1 and a person-level count (Q_I) by at most K.
//
// The mechanism reads private data only through [Source]: household-level
// encoded records ([Records]). It does not implement the single-table
// synth.Data seam, which cannot express households.
//
// # Queries
//
// A [QuerySet] is a marginal-like family of counting queries: all value
// combinations of some group attributes G and individual attributes I (some
// values may be fixed by Where). Group-level queries count households with
// the G values that contain at least one person with all the I values;
// individual-level queries count persons with the I values living in a
// household with the G values. The default workload is all 3-way attribute
// subsets of both kinds.
//
// # Methods
//
// All three methods run the Adaptive Measurements loop (spec II.4): each round
// selects a high-error query with the exponential mechanism, measures it with
// the discrete Gaussian, then refits the model to all measurements.
//
//   - hpd_fixed: a uniform mixture of M product distributions (HPD) whose
//     softmax logits are the parameters, fitted with Adam on the squared
//     error of its differentiable query answers.
//   - hpd_gen: the same HPD produced by a small MLP from Gaussian noise
//     (GEM-style generator), trained through the same loss.
//   - mwem: an explicit histogram over every possible household (the
//     baseline), with multiplicative-weights updates; refused when the
//     universe exceeds MaxUniverse cells.
//
// # Accounting (zCDP)
//
// ρ0 = 2% of ρ (at least one part) measures the number of households
// (sensitivity 1). Each of T rounds spends ρ_t = (ρ−ρ0)/T, split by α into
// the selection ((αε0)²/2, exponential mechanism over scores in units of
// persons, sensitivity K) and the measurement (((1−α)ε0)²/2, discrete
// Gaussian with σ = Δ_q/((1−α)ε0), Δ_q = 1 for Q_G and K for Q_I), where
// ε0 = sqrt(2ρ_t/(α²+(1−α)²)). RhoUsed is exactly ρ0 + T·ρ_t ≤ ρ.
package hpd
