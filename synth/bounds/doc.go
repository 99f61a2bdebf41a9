// Package bounds derives confidence bounds on the error of an AIM model's
// marginals from the mechanism's released measurements and selections.
//
// It follows Section 5 of the AIM paper (McKenna et al., VLDB 2022;
// spec/aim.md, "Uncertainty quantification"). Everything it reads is
// already differentially private, so the bounds are post-processing and
// cost no privacy budget; it generates no noise. AIM releases are
// supported fully; PEP, MWEM, HDMM+PGM and PrivBayes+PGM (pep, pmw,
// hdmm_pgm, privbayes_pgm) releases only for their measured marginals and
// subsets (the "Supported marginals" bound, which holds for any model
// fitted to Gaussian measurements; their selection is not AIM's, so
// unmeasured marginals get none); other mechanisms give an error wrapping
// ErrNoBounds ("no bounds for mechanism mst").
//
// Analyze indexes a Release (the final model and the measurements, rounds,
// last-candidate rounds and snapshots of a synth.Result); its Marginals
// method gives the L1 bound of every workload marginal (SHOW ERROR BOUNDS)
// and Cells a per-cell interval for any measured or candidate attribute set
// (dp_marginal), and Query an interval for one factored counting query
// (ranges; dpsql_query_bounds). MeasuredQuery bounds the answers of
// answers-only releases (gaussian, hdmm_lls). The model marginals a bound needs do not depend on the
// confidence and are computed once per Analysis, so a server keeps one per
// synthetic table.
//
// # Notation
//
// D is the sensitive data with N records, p̂ the final model with total N̂
// (pgm.Model.Total), M_r(·) the count marginal on the attribute set r with
// n_r cells. AIM released measurements (r_i, y_i = M_{r_i}(D) + z_i, σ_i)
// with z_i ~ N(0, σ_i²·I), and, in every round t, selected r_t from the
// candidates C_t by the exponential mechanism with parameter ε_t and score
// sensitivity Δ_t on the scores
//
//	q_r = w_r·(‖M_r(D) − M_r(p̂_{t−1})‖₁ − sqrt(2/π)·σ_t·n_r),  w_r = Σ_i c_i·|r ∩ r_i|.
//
// λ = 1 − confidence. Every bound holds with probability ≥ 1 − λ for one
// marginal (or one cell); the bounds of different marginals are not
// simultaneous (a union bound over k marginals would need λ/k each).
//
// # Supported marginals
//
// r is supported when r ⊆ r_i for some measurement. Summing y_i down to r
// adds n_{r_i}/n_r independent noise cells into each cell: an unbiased
// estimate with per-cell variance σ_i²·n_{r_i}/n_r, independent across
// cells. The inverse-variance combination of every such estimate, ȳ_r, has
// independent N(0, σ̄_r²) errors with
//
//	σ̄_r² = 1 / Σ_i n_r/(σ_i²·n_{r_i}).
//
// The L1 norm of the error, σ̄_r·Σ_c |Z_c| with Z_c iid N(0, 1), is bounded
// by Chernoff's inequality with the exact moment generating function of
// |Z|, E exp(t|Z|) = 2·exp(t²/2)·Φ(t):
//
//	P(Σ_c |Z_c| ≥ a) ≤ exp(n·K(t) − t·a),  K(t) = t²/2 + log(2Φ(t)),
//
// minimised over t > 0 (the optimum a = n·K′(t*) where t*·K′(t*) − K(t*) =
// log(1/λ)/n, found by bisection). This is never larger than the
// Gaussian-concentration bound of the spec, sqrt(2/π)·σ̄·n_r +
// σ̄·sqrt(2·n_r·log(1/λ)) (the norm is σ̄·sqrt(n_r)-Lipschitz), because
// log(2Φ(t)) ≤ sqrt(2/π)·t; at n_r = 100 and λ = 0.05 it is
// 95.1·σ̄ instead of 104.3·σ̄. By the triangle inequality, with probability
// ≥ 1 − λ,
//
//	‖M_r(D) − M_r(p̂)‖₁ ≤ ‖M_r(p̂) − ȳ_r‖₁ + σ̄_r·a(n_r, λ).
//
// # Kronecker measurements
//
// hdmm_pgm and hdmm_lls measure y = (⊗ A_j)·x + z, z iid N(0, σ²), with 0/1
// strategy factors A_j (synth/hdmm). A linear query q = ⊗ q_j on a subset
// of the measured attributes (q_j = 1ᵀ on the others) is estimated without
// bias by c·y with c = ⊗ q_j·A_j⁺ when q lies in the strategy's row space
// (q_j·A_j⁺·A_j = q_j for every j), with standard deviation σ·∏‖q_j·A_j⁺‖₂.
// A marginal on r is determined when every kept A_j has full column rank
// and 1ᵀ is in the row space of every summed one; its estimate B·y,
// B = ⊗ B_j, has correlated cells with deviations σ·∏‖(B_j)_{c_j,·}‖₂.
// Its L1 bound uses Gaussian concentration of the Lipschitz map
// z ↦ ‖B·z‖₁ (constant σ·√n_r·∏‖B_j‖₂, spectral norms):
// ‖e‖₁ ≤ sqrt(2/π)·Σ_c s_c + σ·√n_r·∏‖B_j‖₂·sqrt(2·log(1/λ)); cells get
// ŷ_c ± z·s_c. When several Kronecker measurements contain r, the one with
// the smallest total variance is used (a public choice).
//
// # Queries
//
// Query bounds one counting query ⊗ q_j on attrs. Every measurement that
// contains attrs and determines q gives an unbiased Gaussian estimate; they
// are independent, and are combined by inverse variance into ŷ with
// deviation s. The interval for the true count is ŷ ± (z·s + ½) (the ½
// corrects for the discrete Gaussian's lattice; see halfWidth), and the
// error bound of the model's answer a is |a − ŷ| + z·s + ½ (triangle
// inequality; it holds whenever the interval does). Without such a
// measurement, for AIM's candidates, |q·(x − x̂)| ≤ max|q_c|·B with B the
// marginal's count bound. This replaces summing per-cell bounds (sound but
// a factor of about √(cells in the range) wider).
//
// # Unsupported marginals
//
// Let t be the last round in which r was a candidate (never the round that
// would give the smallest bound: choosing among rounds by the result would
// void the guarantee), r_t the marginal selected then, y_t its measurement
// with noise σ_t, and L_t = ‖M_{r_t}(D) − M_{r_t}(p̂_{t−1})‖₁.
//
// Exponential mechanism (probability λ₁). Selection gives r_t with
// probability ∝ exp(ε_t·q/(2Δ_t)), so for a fixed candidate r the set S of
// candidates scoring at most q_r − x has P(r_t ∈ S) ≤ |S|·exp(−ε_t·x/(2Δ_t))
// with |S| ≤ |C_t| − 1 (r ∉ S). Hence with probability ≥ 1 − λ₁
//
//	q_r ≤ q_{r_t} + (2Δ_t/ε_t)·log((|C_t| − 1)/λ₁).
//
// Folded normal (probability λ₂). With μ = M_{r_t}(D) − M_{r_t}(p̂_{t−1})
// (fixed before z_t is drawn), the observed o_t = ‖y_t − M_{r_t}(p̂_{t−1})‖₁
// = ‖μ + z_t‖₁ is a sum of folded normals. The map z ↦ ‖μ + σ_t·z‖₁ is
// σ_t·sqrt(n)-Lipschitz (n = n_{r_t}), so by Gaussian concentration o_t ≥
// E[o_t] − σ_t·sqrt(2·n·log(1/λ₂)) with probability ≥ 1 − λ₂. E[o_t] =
// σ_t·Σ_c F(μ_c/σ_t) with the folded-normal mean F(m) = sqrt(2/π)·e^{−m²/2} +
// m·(1 − 2Φ(−m)), which is convex, so for a given L_t = ‖μ‖₁ it is smallest
// when |μ_c| = L_t/n (Jensen): E[o_t] ≥ n·σ_t·F(L_t/(n·σ_t)). Therefore
//
//	L_t ≤ L̄_t = n·σ_t·F⁻¹((o_t + σ_t·sqrt(2·n·log(1/λ₂))) / (n·σ_t)),
//
// which is at most the paper's o_t + σ_t·sqrt(2·n·log(1/λ₂)) (F(m) ≥ m) and
// much smaller when o_t is mostly noise.
//
// Combining both (union bound, probability ≥ 1 − λ₁ − λ₂) and solving the
// score inequality for r:
//
//	‖M_r(D) − M_r(p̂_{t−1})‖₁ ≤ sqrt(2/π)·σ_t·n_r
//	    + [w_{r_t}·(L̄_t − sqrt(2/π)·σ_t·n_{r_t}) + (2Δ_t/ε_t)·log((|C_t|−1)/λ₁)] / w_r,
//
// and by the triangle inequality ‖M_r(D) − M_r(p̂)‖₁ is at most that plus
// ‖M_r(p̂_{t−1}) − M_r(p̂)‖₁. We split λ₁ = λ₂ = λ/2. A workload marginal
// that was never a candidate (filtered out by the model-size limit in every
// round) gets the trivial bound 2 on the normalised scale.
//
// # Normalisation
//
// Marginals reports the error of the normalised marginal, each side divided
// by its own total: with e = M_r(D) − M_r(p̂) and s = Σ e = N − N̂,
//
//	‖M_r(D)/N − M_r(p̂)/N̂‖₁ = ‖e − s·M_r(p̂)/N̂‖₁ / N ≤ (‖e‖₁ + |s|)/N.
//
// The measurements give an inverse-variance estimate Ñ = Σ_i (Σ y_i)/(σ_i²
// n_{r_i}) / Σ_i 1/(σ_i² n_{r_i}) with standard deviation σ_N = (Σ_i
// 1/(σ_i² n_{r_i}))^{−1/2}, so |s| ≤ S = |Ñ − N̂| + Φ⁻¹(1 − λ_N/2)·σ_N with
// probability ≥ 1 − λ_N, and N ≥ N̂ − S. The reported bound is
// min(2, (B + S)/(N̂ − S)) where B is the count bound above at λ − λ_N,
// and λ_N = λ/10: the total is known far better than any marginal, so it
// gets a small share.
//
// # Cells
//
// Cells gives one interval per cell for dp_marginal. For a supported
// marginal it is the Gaussian interval ȳ_c ± Φ⁻¹(1 − λ/2)·σ̄_r of the
// combined estimate, with per-cell coverage: each interval holds with
// probability ≥ 1 − λ on its own, which is what a row of a confidence table
// means; a simultaneous guarantee over all n_r cells (Bonferroni, λ/n_r
// each) would widen every interval several-fold, and the L1 bound of
// Marginals already gives a simultaneous statement. The interval is for the
// true count and is centred on ȳ_c, not on the model's estimate, which it
// need not contain. For an unsupported marginal every cell gets the model's
// estimate ± B (B the count bound at λ), since |e_c| ≤ ‖e‖₁. Both ends are
// clipped at 0, giving [max(0, lo), max(0, hi)]: counts are non-negative, so
// a count in [lo, hi] is in the clipped interval too and the coverage is
// kept, and an interval wholly below 0 (a cell measured far negative) becomes
// [0, 0], the only count it can still be said to cover.
//
// # Caveats
//
// AIM's noise is the discrete Gaussian with scale σ, whose variance is at
// most σ² and which is σ-subgaussian; the folded-normal mean and the
// half-normal moment generating function above are those of the continuous
// Gaussian, a negligible difference at the scales AIM uses (σ ≫ 1). As in
// the paper, the adaptivity of the rounds is not accounted for beyond the
// per-round guarantees. The bounds are about the model's answers (expected
// counts); synthetic rows add the rounding error described by
// pgm.Model.Synthesize. The coverage test in this package checks
// empirically that the bounds hold at least at their nominal rate.
package bounds
