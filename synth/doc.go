// Package synth defines the interface between dpsql's server and its
// differentially private synthesizers.
//
// A Mechanism (AIM, MST, MWEM+PGM, Independent, Gaussian, each in its own
// subpackage) declares its options as a Schema. The server parses the
// statement's generic name/value pairs with Mechanism.New, which validates
// them before any budget is reserved, and then calls Runner.Run with the
// encoded data, the workload, the zCDP budget ρ it has already reserved, a
// noise source and a progress callback.
//
// # Privacy contract
//
//   - A mechanism sees ρ only: it never converts (ε, δ) and never touches the
//     ledger. Result.RhoUsed is what it actually spent and is never above the
//     given ρ (up to floating-point rounding of 1e-12 relative).
//   - All released noise and every private selection come from the
//     noise.Source in Input. Post-processing randomness (rounding synthetic
//     rows) comes from Source.Rand.
//   - Domains are public: they come from Input.Data's Domain, never from the
//     data values.
//   - Everything in a Result (model, measurements, rounds, snapshots, rows)
//     is a function of noisy releases only, so it may be stored and shown.
//
// # Cancellation
//
// Runners check ctx between rounds and estimation iterations. When the
// context is cancelled, Run returns ctx's error (wrapped) together with a
// non-nil Result whose RhoUsed is the budget consumed by the measurements
// taken so far; the caller must treat it as spent if any of them is released.
package synth
