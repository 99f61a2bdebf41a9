// Package pep implements the adaptive-measurements mechanisms of Liu,
// Vietri and Wu, "Iterative Methods for Private Synthetic Data" (NeurIPS
// 2021; spec/pep-gem-mwem-dualquery.md §2–4): PEP (Private Entropy
// Projection), MWEM as that paper runs it (with past-query replay), and
// their public-data variants PMW^Pub and PEP^Pub.
//
// Every mechanism runs the same loop ([000] Alg. 1) on T rounds: the
// exponential mechanism picks the workload marginal (or, with CELLS = 1,
// the marginal cell) whose current error max_y |c_y − N̂·D_{t−1}(y)| is
// largest (already-measured candidates excluded, as the reference code
// does), the Gaussian mechanism measures it, and the distribution is
// updated: PEP projects onto every measurement so far by iterative
// I-projection (Alg. 4), MWEM takes one multiplicative-weights step (plus
// the past queries). Data is read only through synth.Data's marginals, so
// they run on federated tables.
//
// # Representation
//
// Both updates only multiply D by exp(λ) on measured cells, so D stays in
// the exponential family D(x) ∝ base(x)·exp(Σ_i θ_i[x_{S_i}]) whose
// sufficient statistics live on the measured attribute sets S_i: a
// graphical model over those cliques. The default engine holds it as a
// pgm.Factored (junction tree, capped at MAX_MODEL_SIZE MB like AIM), so
// PEP and MWEM run on the full adult domain; DENSE = 1 holds an explicit
// weight per domain cell instead (for small domains; the tests use it as
// the oracle). The public variants hold a weight per distinct public row
// (base = the public empirical distribution, D_0 of PMW^Pub).
//
// # Privacy (zCDP, add/remove neighbours, count sensitivity 1)
//
// The paper normalises answers by a public n; here 1% of ρ measures the
// record count (σ0 = sqrt(1/(2·0.01·ρ))), and normalised targets use the
// inverse-variance estimate N̂ of that count and the measured marginals'
// sums. The rest, ρ', is split over T rounds with ε0 = sqrt(2ρ'/(T(α² +
// (1−α)²))): selection with ε = 2αε0 (ε²/8 zCDP; score sensitivity the
// largest workload weight) and measurement with σ = 1/((1−α)ε0)
// (1/(2σ²) zCDP), so ρ is spent exactly (see Budget).
package pep
