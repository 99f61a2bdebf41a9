// Package budget accounts for privacy loss in zero-concentrated differential
// privacy and keeps the durable per-table budget ledger.
//
// # Accounting
//
// Every mechanism is charged in ρ-zCDP (Bun–Steinke 2016); ρ adds under
// composition, including adaptive composition. Neighbouring datasets differ
// by adding or removing one privacy unit (one row of the source table). The
// costs of the primitives are:
//
//   - Gaussian mechanism, L2 sensitivity Δ, noise σ (also the discrete
//     Gaussian): [GaussianCost] = Δ²/(2σ²).
//   - Exponential mechanism with parameter ε (Pr[r] ∝ exp(ε·q_r/(2Δ))):
//     [ExponentialCost] = ε²/8 (it is ε-bounded-range; Cesar–Rogers 2021).
//   - Any ε-DP step, such as the Laplace mechanism: [PureDPCost] = ε²/2
//     (Bun–Steinke 2016, Proposition 1.4).
//
// The cost helpers round up: each is the smallest float64 not below the
// exact value of its formula on the float64 inputs.
//
// An owner states a budget as (ε, δ)-DP; [RhoFromEpsilonDelta] converts it
// with the tight bound of Canonne, Kamath and Steinke (2020):
//
//	δ(ρ, ε) = min_{a>1} exp((a−1)(aρ−ε) + a·log(1−1/a)) / (a−1)
//
// The exponent is strictly convex in a, so the minimiser is the root of its
// derivative (2a−1)ρ − ε + log(1−1/a), found by bisection on a bracket that is
// checked before use. ρ from (ε, δ) is then the largest ρ with δ(ρ, ε) ≤ δ,
// and ε from (ρ, δ) the smallest ε with δ(ρ, ε) ≤ δ, both by bisection; the
// returned end of the final bracket is the one that satisfies the bound, so
// conversions err towards privacy.
//
// # Rounding
//
// The ledger stores ρ in integer units of 2⁻⁴⁰ (about 9.1e−13) in uint64
// fields. A float64 ρ converts exactly to a multiple of the unit before
// rounding, so there is exactly one rounding per conversion: a charge rounds
// up to the next unit and a total budget rounds down. Sums and differences
// of units are exact integers, and every stored figure converts back to
// float64 exactly. The largest total a table can hold is 2¹³ = 8192 ρ.
//
// # Ledger
//
// A [Ledger] lives in the server's bbolt database, in buckets prefixed
// budget_ and ledger_. Each source table, keyed by a stable ID chosen by the
// caller, has a total (ε, δ) budget, its ρ equivalent, the ρ spent and an
// append-only list of entries. The protocol for a release is:
//
//  1. [Ledger.Reserve] checks ρ_spent + ρ ≤ ρ_total and appends a reserved
//     entry in one bbolt write transaction, which is fsynced on commit. The
//     charge counts as spent from then on. A refused request returns an
//     *[ExhaustedError] and touches nothing.
//  2. The mechanism reads the data and computes its result.
//  3. [Reservation.Commit] marks the entry committed before the result is
//     released; [Reservation.Fail] marks it failed (data was read: the
//     charge stays) or refunded (no data was read).
//
// A crash between 1 and 3 leaves the entry reserved and the ρ spent, so the
// ledger can over-count but never under-count. bbolt has one writer at a
// time and the check and the debit share a transaction, so concurrent
// requests cannot overspend. Entries are never deleted; [Ledger.SetBudget]
// changes a total only by appending an entry and never below what is spent.
// [Ledger.Check] verifies the invariants: for every table the ρ of its
// reserved, committed and failed entries sums to ρ_spent ≤ ρ_total, and the
// last budget entry matches the total.
//
// Every stored record (budget, entry, the format record) is sealed with a
// CRC-32C checksum of its key and value (format "2"), verified on every
// read: a damaged record fails with an error matching ErrCorrupt that names
// it, so a budget or a charge is never read wrong. OpenLedger migrates a
// format "1" ledger (no checksums) in one transaction; on a read-only
// database it only reads, so that Check can audit a file without changing
// it.
//
// The database must not be opened with NoSync: OpenLedger refuses it,
// because an unsynced debit could be lost after the answer was released.
package budget
