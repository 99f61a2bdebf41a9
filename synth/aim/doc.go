// Package aim implements AIM, the adaptive and iterative mechanism for
// differentially private synthetic data (McKenna, Mullins, Sheldon, Miklau,
// VLDB 2022), on dpsql's Private-PGM engine.
//
// AIM measures every 1-way marginal of the workload's downward closure, then
// repeatedly picks the candidate marginal whose model estimate is worst
// (relative to the noise it would be measured with) by the exponential
// mechanism, measures it with discrete Gaussian noise and refits the model,
// annealing the per-round budget when a measurement stops changing the model.
// Only candidates that keep the model under a growing size limit are eligible.
// The full algorithm with every formula is in the project's spec/aim.md.
//
// # Options
//
//	MAX_MODEL_SIZE  float, MB, default 80: the junction-tree size limit S_max.
//	ROUNDS          int, default 16·d: T, which sets the initial per-round
//	                budget (the actual number of rounds adapts).
//	PGM_ITERS       int, default 100: estimation iterations per round
//	                (warm-started from the previous model). Fewer make the
//	                model move less per round, so AIM anneals earlier and runs
//	                fewer rounds.
//	FINAL_ITERS     int, default 1000: iterations of the final estimation
//	                before sampling.
//	FINAL_TOL       float, default 1e-3: the final estimation stops earlier
//	                once the loss falls by less than this fraction per
//	                iteration (over pgm.TolWindow iterations); 0 runs all
//	                FINAL_ITERS.
//	INIT_ROUNDS     float, default 1–4 by ρ: budget of the 1-way
//	                initialisation, in rounds' worth (α·ρ/ROUNDS) per 1-way
//	                marginal, divided with σ_i ∝ n_i^(−1/3) (the least total
//	                L1 noise over the 1-ways; the paper spends 1 at equal σ).
//	                At ε ≤ 1 more helps, at ε = 10 it starves the rounds, so
//	                the default buys the paper's σ_0 down to 45 counts, with
//	                at most 4 (defaultInitRounds; docs/aim-performance.md).
//	COARSE_BINS     int, default 20; 0 turns twins off: a candidate with an
//	                attribute of more values also has a coarse twin, those
//	                attributes in this many equal-width bins, measured as a
//	                Kronecker query on the fine clique (coarse.go).
//	COARSE_MAX_SIZE float, MB, default 2: MAX_MODEL_SIZE for the twins.
//	LAZY            int, default 1: select lazily (below); 0 scores every
//	                eligible candidate every round. Same distribution.
//
// # Performance
//
// Scoring dominates: the mechanism needs M_r(p̂) for every eligible
// candidate. The first round computes them all: each eligible workload set
// once (by inference), its eligible subsets projected from it, in parallel
// over GOMAXPROCS workers, keeping only the scores. Later rounds select
// lazily (lazy.go): every candidate keeps an exact upper bound on its
// score (its last exact distance plus pgm.Drift's bound on how far its
// model marginal moved since), only the candidates whose bound comes near
// the best exact score are computed, and noise.ExponentialLazy samples the
// exponential mechanism from the bounds, computing any other candidate it
// cannot decide on. The selection's distribution, hence the privacy
// analysis, is that of the plain mechanism.
package aim
