// Package noise provides dpsql's privacy noise: a keyed deterministic random
// bit generator, the exact discrete Gaussian sampler and the exponential
// mechanism.
package noise

// This file is the public API contract; bodies are filled in by the
// implementation.

import (
	"errors"
	"math/rand/v2"
)

var errNotImplemented = errors.New("noise: not implemented")

// Source is a cryptographically secure random bit stream. It is either fresh
// (keyed from crypto/rand) or derived from a server secret and a user seed, so
// that a SEED reproduces a run on this server only.
type Source struct{}

// NewSource returns a source keyed from crypto/rand.
func NewSource() *Source { panic(errNotImplemented) }

// Derive returns the source for (server secret, user seed, label). Without the
// secret the stream cannot be recomputed from the seed.
func Derive(secret []byte, seed int64, label string) *Source { panic(errNotImplemented) }

// Read fills p with random bytes; it never fails.
func (s *Source) Read(p []byte) (int, error) { panic(errNotImplemented) }

// Uint64 returns 64 random bits.
func (s *Source) Uint64() uint64 { panic(errNotImplemented) }

// DiscreteGaussian samples N_Z(0, sigma²) exactly (Canonne–Kamath–Steinke).
func (s *Source) DiscreteGaussian(sigma float64) int64 { panic(errNotImplemented) }

// AddDiscreteGaussian adds independent N_Z(0, sigma²) noise to every entry of dst.
func (s *Source) AddDiscreteGaussian(dst []float64, sigma float64) { panic(errNotImplemented) }

// Exponential runs the exponential mechanism: it returns i with probability
// ∝ exp(epsilon·scores[i]/(2·sensitivity)). Its zCDP cost is epsilon²/8.
func (s *Source) Exponential(scores []float64, epsilon, sensitivity float64) int {
	panic(errNotImplemented)
}

// Rand returns a math/rand/v2 generator fed by s, for post-processing
// randomness only (e.g. rounding synthetic rows), never for released noise.
func (s *Source) Rand() *rand.Rand { panic(errNotImplemented) }
