package pgm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
)

// Spilled is a lean model whose marginals were written to a file: what a
// caller keeps of a model it reads again only much later (AIM's round
// snapshots, read by the error bounds once the run is over), so that they
// take no memory meanwhile. Load reads them back, bit for bit.
type Spilled struct {
	dom               *Domain
	jt                *junctionTree
	logZ, total, step float64
	f                 *os.File
	off               int64
}

// spillChunk is the buffer through which marginals are written and read.
const spillChunk = 1 << 16 // float64s: 512 KB

// Spill appends m's marginals to f, which the caller keeps open (and
// removes) until every Spilled written to it is loaded or dropped, and
// returns the handle that loads them back.
func (m *Model) Spill(f *os.File) (*Spilled, error) {
	off, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return nil, fmt.Errorf("pgm: spilling a model: %w", err)
	}
	buf := make([]byte, 8*min(spillChunk, len(m.p)))
	for s := 0; s < len(m.p); s += spillChunk {
		x := m.p[s:min(s+spillChunk, len(m.p))]
		for i, v := range x {
			binary.LittleEndian.PutUint64(buf[8*i:], math.Float64bits(v))
		}
		if _, err := f.WriteAt(buf[:8*len(x)], off+8*int64(s)); err != nil {
			return nil, fmt.Errorf("pgm: spilling a model: %w", err)
		}
	}
	return &Spilled{dom: m.dom, jt: m.jt, logZ: m.logZ, total: m.total, step: m.step, f: f, off: off}, nil
}

// Load reads the marginals back into a lean model that answers, samples and
// encodes exactly as the model spilled.
func (s *Spilled) Load() (*Model, error) {
	p := make([]float64, s.jt.total)
	buf := make([]byte, 8*min(spillChunk, len(p)))
	for i := 0; i < len(p); i += spillChunk {
		x := p[i:min(i+spillChunk, len(p))]
		b := buf[:8*len(x)]
		if n, err := s.f.ReadAt(b, s.off+8*int64(i)); n < len(b) {
			if err == nil || errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, fmt.Errorf("pgm: loading a spilled model: %w", err)
		}
		for j := range x {
			x[j] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*j:]))
		}
	}
	return &Model{dom: s.dom, jt: s.jt, p: p, logZ: s.logZ, total: s.total, step: s.step}, nil
}
