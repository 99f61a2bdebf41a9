package pgm

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
)

// ErrSpillCorrupt is returned by Spilled.Load when the marginals read back
// are not those written: a spill file changed underneath the run (a bad
// disk, another process) must fail the read, never give the error bounds
// that read the snapshot a wrong model.
var ErrSpillCorrupt = errors.New("pgm: a spilled model's marginals changed on disk (checksum mismatch)")

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
	sum               uint32 // CRC-32C of the bytes written
}

// spillChunk is the buffer through which marginals are written and read.
const spillChunk = 1 << 16 // float64s: 512 KB

// Spill appends m's marginals to f, which the caller keeps open (and
// removes) until every Spilled written to it is loaded or dropped, and
// returns the handle that loads them back. The bytes are checksummed
// (CRC-32C) as they are written and checked by Load.
func (m *Model) Spill(f *os.File) (*Spilled, error) {
	off, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return nil, fmt.Errorf("pgm: spilling a model: %w", err)
	}
	buf := make([]byte, 8*min(spillChunk, len(m.p)))
	var sum uint32
	for s := 0; s < len(m.p); s += spillChunk {
		x := m.p[s:min(s+spillChunk, len(m.p))]
		for i, v := range x {
			binary.LittleEndian.PutUint64(buf[8*i:], math.Float64bits(v))
		}
		b := buf[:8*len(x)]
		sum = crc32.Update(sum, castagnoli, b)
		if _, err := f.WriteAt(b, off+8*int64(s)); err != nil {
			return nil, fmt.Errorf("pgm: spilling a model: %w", err)
		}
	}
	return &Spilled{dom: m.dom, jt: m.jt, logZ: m.logZ, total: m.total, step: m.step, f: f, off: off, sum: sum}, nil
}

// Load reads the marginals back into a lean model that answers, samples and
// encodes exactly as the model spilled, or ErrSpillCorrupt if the file's
// bytes are no longer those written.
func (s *Spilled) Load() (*Model, error) {
	p := make([]float64, s.jt.total)
	buf := make([]byte, 8*min(spillChunk, len(p)))
	var sum uint32
	for i := 0; i < len(p); i += spillChunk {
		x := p[i:min(i+spillChunk, len(p))]
		b := buf[:8*len(x)]
		if n, err := s.f.ReadAt(b, s.off+8*int64(i)); n < len(b) {
			if err == nil || errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, fmt.Errorf("pgm: loading a spilled model: %w", err)
		}
		sum = crc32.Update(sum, castagnoli, b)
		for j := range x {
			x[j] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*j:]))
		}
	}
	if sum != s.sum {
		return nil, ErrSpillCorrupt
	}
	return &Model{dom: s.dom, jt: s.jt, p: p, logZ: s.logZ, total: s.total, step: s.step}, nil
}
