// Package pgm is dpsql's Private-PGM engine: it estimates a graphical model
// from noisy marginal measurements and answers queries from it.
//
// It knows nothing of SQL, storage or privacy accounting. Everything it
// receives (measurements) is already differentially private, so everything it
// does is post-processing.
//
// # Conventions
//
//   - An attribute is an int index into a Domain. An attribute set ("clique",
//     "attrs") is a []int sorted strictly ascending.
//   - A marginal over attrs is a flat []float64 of Domain.Cells(attrs) entries
//     in row-major order: the last attribute of attrs varies fastest.
//   - Potentials and messages live in log space; logsumexp always subtracts the
//     maximum first.
//   - Programmer errors (shape mismatches) panic with a "pgm: ..." message;
//     data-dependent outcomes are returned as errors.
package pgm
