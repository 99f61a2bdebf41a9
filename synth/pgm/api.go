package pgm

// This file is the public API contract of the engine. The bodies are filled in
// by the implementation files; signatures here are what synth/ codes against.

import (
	"errors"
	"math/rand/v2"

)

var errNotImplemented = errors.New("pgm: not implemented")

// Synthesize draws rows records by randomized rounding along the junction
// tree and returns them column-major. rng is post-processing randomness.
func (m *Model) Synthesize(rng *rand.Rand, rows int) ([][]uint16, error) {
	return nil, errNotImplemented
}

// MarshalBinary encodes the model in a versioned binary format.
func (m *Model) MarshalBinary() ([]byte, error) { return nil, errNotImplemented }

// UnmarshalModel decodes a model written by MarshalBinary.
func UnmarshalModel(b []byte) (*Model, error) { return nil, errNotImplemented }
