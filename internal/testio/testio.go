// Package testio holds io helpers for tests: a writer that takes its input
// in pieces and fails where it is told to, for encoders that stream.
package testio

import "errors"

// ErrWriter is the error Writer returns at FailAt.
var ErrWriter = errors.New("testio: writer failed")

// Writer keeps what it is written in B, at most Max bytes a piece (all at
// once if Max is 0), and fails with ErrWriter once FailAt bytes would be
// written, if FailAt is positive, having kept the pieces before.
type Writer struct {
	B           []byte
	Max, FailAt int
}

func (w *Writer) Write(p []byte) (int, error) {
	step := w.Max
	if step <= 0 {
		step = max(len(p), 1)
	}
	for i := 0; i < len(p); i += step {
		piece := p[i:min(i+step, len(p))]
		if w.FailAt > 0 && len(w.B)+len(piece) >= w.FailAt {
			return i, ErrWriter
		}
		w.B = append(w.B, piece...)
	}
	return len(p), nil
}
