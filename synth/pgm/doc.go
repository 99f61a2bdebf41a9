// Package pgm is dpsql's Private-PGM engine: it estimates a graphical model
// from noisy marginal measurements and answers queries from it.
//
// It knows nothing of SQL, storage or privacy accounting. Everything it
// receives (measurements) is already differentially private, so everything it
// does is post-processing; it never generates privacy noise. The only
// randomness it uses is the *rand.Rand passed to Model.Synthesize.
//
// # Overview
//
// A Domain lists attributes with finite sizes. A Dataset is a column-major
// table of uint16 codes over a Domain; its MarginalTo and Marginals count
// marginals (the latter on all cores). Measurements (attribute set, noisy
// answers Y to a query matrix applied to the count marginal, noise scale
// Sigma) go to Estimate, which returns a Model: a junction tree over the
// measured attribute sets with log-space potentials on its maximal cliques.
// A Model answers Marginal, Marginals (many sets at once, sharing work)
// and MarginalWhere (linear queries with evidence weights), draws synthetic records with Synthesize, and encodes itself with
// MarshalBinary (decoded by UnmarshalModel). ModelSize predicts the size of
// the model a set of cliques would induce, without building it.
//
// # Conventions
//
//   - An attribute is an int index into a Domain. An attribute set ("clique",
//     "attrs") is a []int sorted strictly ascending. Functions that accept
//     another order (Dataset.MarginalTo, Model.Marginal) say so and lay the
//     result out in the order given.
//   - A marginal over attrs is a flat []float64 of Domain.Cells(attrs) entries
//     in row-major order: the last attribute of attrs varies fastest.
//   - Count marginals sum to the number of records (Dataset.Rows for data,
//     Model.Total for models).
//   - Potentials and messages live in log space; logsumexp always subtracts
//     the maximum first, per output cell, so no exponential overflows; an
//     all -Inf input gives -Inf, never NaN. A -Inf potential is a structural
//     zero and is propagated as probability 0.
//   - Programmer errors (shape mismatches, attributes outside the domain)
//     panic with a "pgm: ..." message; data-dependent outcomes (malformed
//     measurements, corrupt encodings, cancellation) are returned as errors,
//     wrapping the sentinels ErrBadMeasurement, ErrModelFormat,
//     ErrModelVersion or the context's error.
//
// # Aliasing and ownership
//
// MarginalTo writes into dst when it is large enough (gonum's To convention)
// and never reads it. NewDataset keeps the columns it is given: do not modify
// them afterwards; Column returns them without copying. Model methods return
// fresh slices (Cliques, Marginal, Potential) that the caller owns.
//
// # Concurrency
//
// Domain, Dataset and Model are immutable once built and safe for concurrent
// use. Dataset.Marginals and Estimate split work over GOMAXPROCS goroutines:
// Marginals by marginal, Estimate by chunks of the cell ranges of large
// cliques, with per-chunk partial sums so that no two goroutines write one
// cell. Estimate splits only models of 8 MB or more (minPoolCells): a
// smaller one's kernels are too short, and it runs on one core. It keeps
// one helper goroutine per extra core spinning between kernels for its
// duration (parking after 200 µs idle), because waking a goroutine per
// kernel costs more than a kernel. Chunks depend only on table
// sizes, so an estimate is the same bit for bit on any number of cores.
//
// # Algorithms
//
// The junction tree follows the reference implementation: greedy elimination
// by smallest created factor, maximal cliques of the triangulation, a
// maximum-weight spanning tree on separator sizes, rooted at the largest
// clique. Belief propagation collects log-space messages to the root and
// distributes probabilities back (one exponential per cell). Estimate runs
// entropic mirror descent with Armijo backtracking (MirrorDescent; StepRule
// chooses where each search starts) or accelerated dual averaging
// (Accelerated) on the L2 or L1 loss, each measurement weighted by 1/Sigma,
// with gradients taken with respect to the unnormalised marginals. Unknown
// totals are estimated by inverse-variance weighting (EstimateTotal).
// Marginals outside one clique use variable elimination in probability
// space over the smallest subtree that holds the query, each clique first
// reduced to what the query needs from it (Model.Marginals shares those
// reductions across a batch of sets). Synthesize uses randomized
// rounding along the reverse elimination order, and deals each group's
// values to its rows by herding on the attributes generated before, so
// that attributes the model makes independent are also paired in
// proportion; its documentation states the exact per-cell guarantee.
//
// # Invariants
//
// For a Model m and every clique C of m.Cliques(): m.Marginal(C) sums to
// m.Total(); the marginals of two cliques agree on their intersection; the
// potentials, the elimination order and the total determine every answer,
// so a model decoded by UnmarshalModel answers bit for bit as the one
// encoded.
//
// # Memory
//
// After encoding, a Dataset is Rows × Len × 2 bytes. Mirror-descent
// estimation holds one model-sized arena, the marginals: its parameters
// are step tables of the measurements' sizes (see objective.initSteps),
// carried from fit to fit; a fit warm-started from a model's potentials
// (a decoded or lean model) also holds them. Besides that come the
// measurements' buffers and index maps, and nothing proportional to the
// data. A
// Model keeps only its potentials and clique marginals. An out-of-clique
// marginal never materialises a product of factors, and its intermediate
// tables are bounded by max(4 × model cells, 4 × result cells, 2^22)
// (beyond that it conditions on an attribute and sums, at a cost in time);
// a Marginals batch adds a cache of reduced cliques bounded by the model's
// cells, freed on return.
package pgm
