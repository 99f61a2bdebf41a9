package pgm

// This file is the public API contract of the engine. The bodies are filled in
// by the implementation files; signatures here are what synth/ codes against.

import (
	"errors"
)

var errNotImplemented = errors.New("pgm: not implemented")

// MarshalBinary encodes the model in a versioned binary format.
func (m *Model) MarshalBinary() ([]byte, error) { return nil, errNotImplemented }

// UnmarshalModel decodes a model written by MarshalBinary.
func UnmarshalModel(b []byte) (*Model, error) { return nil, errNotImplemented }
