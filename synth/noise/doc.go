// Package noise generates dpsql's privacy noise from keyed cryptographic
// random streams.
//
// # Randomness
//
// Every random bit comes from a [Source]: an AES-256 counter-mode keystream
// whose key is either fresh (from crypto/rand, [NewSource]) or derived with
// HMAC-SHA256 from a server secret, a user seed and length-framed label parts
// ([Derive]).
//
// Privacy noise (measurements, private selections) always comes from a fresh
// source: a release's noise must never repeat or correlate with another's,
// whatever the requester chooses, or whoever runs a statement twice and
// subtracts the results learns the data exactly. Derived sources repeat by
// design and serve only post-processing that touches released values (such
// as sampling rows from a released model), where a SEED makes the result
// reproducible on the server holding the secret and nowhere else. math/rand
// is never used for released noise; [Source.Rand] exposes a stream as a
// math/rand/v2 generator for post-processing only.
//
// # Exact samplers
//
// Released noise is sampled without floating-point arithmetic, which is
// known to leak (Mironov 2012):
//
//   - [Source.DiscreteGaussian] is the exact rejection sampler of Canonne,
//     Kamath and Steinke ("The Discrete Gaussian for Differential Privacy",
//     2020): a discrete Laplace proposal accepted by an exact
//     Bernoulli(exp(−γ)) trial with rational γ. σ² is taken as the exact
//     dyadic rational of the float64 product σ·σ, rounded up to the next
//     float64 when the product was rounded down, so the noise is never
//     smaller than requested and the zCDP cost Δ²/(2σ²) computed by the
//     caller stays an upper bound. The hot path works in 64/128-bit integer
//     arithmetic and falls back to math/big only when a value does not fit;
//     both paths sample the same distribution exactly.
//
//   - [Source.Exponential] samples the exponential mechanism exactly by
//     rejection: propose a candidate uniformly and accept it with
//     probability exp(−ε·(q_max−q_i)/(2Δ)), evaluated by the same exact
//     Bernoulli sampler on the exact rational value of that expression (each
//     float64 is a dyadic rational; the arithmetic is done with math/big).
//     The output distribution is exactly ∝ exp(ε·q_i/(2Δ)), so the
//     mechanism is ε-DP and ε²/8-zCDP (bounded range, Cesar–Rogers 2021).
//     Gumbel-max and inverse-CDF sampling were rejected because they round
//     logarithms and exponentials in floating point; permute-and-flip because
//     it is ε-DP but not known to be ε-bounded-range, the property behind the
//     ε²/8 zCDP cost the accountant charges.
//
// # Caveats
//
// A Source is not safe for concurrent use; derive one per goroutine. The
// samplers run in data-dependent time (rejection loops); dpsql does not
// defend against timing side channels. Scores passed to Exponential are
// computed in floating point by the caller; their sensitivity analysis is
// the caller's.
package noise
