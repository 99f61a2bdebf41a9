package pgm

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"slices"
)

// Binary model format, version 1 (all integers little-endian):
//
//	magic     [8]byte "DPSQLPGM"
//	version   uint32 = 1
//	attrs     uint32 n, then n × (uint32 name length, name bytes, uint32 size)
//	total     float64
//	order     n × uint32 (the elimination order)
//	cliques   uint32 k, then k × (uint32 length, length × uint32 attribute)
//	theta     Σ cells × float64 (log potentials, cliques in order)
//	checksum  uint32 CRC-32C of every preceding byte
//
// Decoding checks the magic, then the version, then the checksum (the order
// bbolt validates its meta pages in), and rebuilds the junction tree from the
// stored order, so a decoded model answers exactly as the encoded one.

const (
	modelMagic   = "DPSQLPGM"
	modelVersion = 1
)

var (
	// ErrModelFormat is returned for data that is not an encoded model or is
	// corrupt.
	ErrModelFormat = errors.New("pgm: not a valid encoded model")
	// ErrModelVersion is returned for an encoded model of an unknown version.
	ErrModelVersion = errors.New("pgm: unknown encoded model version")
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// EncodedSizeHint is the length of MarshalBinary's encoding, so that an
// encoder that embeds it can size its buffer once.
func (m *Model) EncodedSizeHint() int {
	n := len(modelMagic) + 4 + 4 + 8 + 4*len(m.jt.order) + 4 + 8*m.jt.total + 4
	for i := range m.dom.Len() {
		n += 8 + len(m.dom.names[i])
	}
	for _, c := range m.jt.cliques {
		n += 4 + 4*len(c)
	}
	return n
}

// MarshalBinary encodes the model in a versioned binary format.
func (m *Model) MarshalBinary() ([]byte, error) {
	return m.AppendBinary(make([]byte, 0, m.EncodedSizeHint()))
}

// AppendBinary appends MarshalBinary's encoding to b (it implements
// encoding.BinaryAppender). A lean model's potentials are derived clique by
// clique as they are written (eachPotential), the same values that
// Potential and a warm start derive, so encoding it allocates no arena of
// them: a large model is encoded beside its marginals alone.
func (m *Model) AppendBinary(b []byte) ([]byte, error) {
	start := len(b)
	b = slices.Grow(b, m.EncodedSizeHint())
	b = m.appendHeader(b)
	m.eachPotential(func(x float64) {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
	})
	b = binary.LittleEndian.AppendUint32(b, crc32.Checksum(b[start:], castagnoli))
	return b, nil
}

// WriteBinary writes MarshalBinary's encoding to w through a buffer of
// 64 KB, without holding the encoding: a server stages a large model in
// chunks as it is encoded (catalog.Store.StageFrom) instead of beside it.
// It returns the bytes written.
func (m *Model) WriteBinary(w io.Writer) (int64, error) {
	cw := &crcWriter{w: w}
	bw := bufio.NewWriterSize(cw, 64<<10)
	if _, err := bw.Write(m.appendHeader(make([]byte, 0, 4096))); err != nil {
		return cw.n, err
	}
	var cell [8]byte
	m.eachPotential(func(x float64) {
		binary.LittleEndian.PutUint64(cell[:], math.Float64bits(x))
		bw.Write(cell[:]) // an error sticks to bw and is returned by Flush
	})
	if err := bw.Flush(); err != nil {
		return cw.n, err
	}
	binary.LittleEndian.PutUint32(cell[:4], cw.crc)
	n, err := w.Write(cell[:4])
	return cw.n + int64(n), err
}

// crcWriter passes writes on to w, counting them and keeping their CRC.
type crcWriter struct {
	w   io.Writer
	crc uint32
	n   int64
}

func (c *crcWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.crc = crc32.Update(c.crc, castagnoli, p[:n])
	c.n += int64(n)
	return n, err
}

// appendHeader appends the encoding up to the potentials: the domain, the
// total, the elimination order and the cliques.
func (m *Model) appendHeader(b []byte) []byte {
	b = append(b, modelMagic...)
	b = binary.LittleEndian.AppendUint32(b, modelVersion)
	b = binary.LittleEndian.AppendUint32(b, uint32(m.dom.Len()))
	for i := range m.dom.Len() {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(m.dom.names[i])))
		b = append(b, m.dom.names[i]...)
		b = binary.LittleEndian.AppendUint32(b, uint32(m.dom.sizes[i]))
	}
	b = binary.LittleEndian.AppendUint64(b, math.Float64bits(m.total))
	for _, a := range m.jt.order {
		b = binary.LittleEndian.AppendUint32(b, uint32(a))
	}
	b = binary.LittleEndian.AppendUint32(b, uint32(len(m.jt.cliques)))
	for _, c := range m.jt.cliques {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(c)))
		for _, a := range c {
			b = binary.LittleEndian.AppendUint32(b, uint32(a))
		}
	}
	return b
}

// eachPotential calls f with the model's potentials in arena order: those
// of theta or of the step tables (potentials), or for a lean model derived
// clique by clique as potentials derives them (mle, then log 0 raised to
// leanLogFloor), bit for bit, without their arena.
func (m *Model) eachPotential(f func(float64)) {
	if m.theta != nil || m.steps != nil {
		for _, v := range m.potentials() {
			f(v)
		}
		return
	}
	for v := range m.jt.cliques {
		m.jt.mleClique(v, m.p, func(_ int, x float64) {
			f(max(x, leanLogFloor))
		})
	}
}

// decoder reads little-endian values, remembering the first failure.
type decoder struct {
	b   []byte
	err error
}

func (d *decoder) take(n int) []byte {
	if d.err != nil {
		return nil
	}
	if n < 0 || n > len(d.b) {
		d.err = fmt.Errorf("%w: truncated", ErrModelFormat)
		return nil
	}
	out := d.b[:n]
	d.b = d.b[n:]
	return out
}

func (d *decoder) u32() int {
	p := d.take(4)
	if p == nil {
		return 0
	}
	return int(binary.LittleEndian.Uint32(p))
}

func (d *decoder) f64() float64 {
	p := d.take(8)
	if p == nil {
		return 0
	}
	return math.Float64frombits(binary.LittleEndian.Uint64(p))
}

// count reads a length and checks that at least n·unit bytes remain.
func (d *decoder) count(unit int) int {
	n := d.u32()
	if d.err == nil && n*unit > len(d.b) {
		d.err = fmt.Errorf("%w: length %d exceeds the data", ErrModelFormat, n)
		return 0
	}
	return n
}

// UnmarshalModel decodes a model written by MarshalBinary.
func UnmarshalModel(b []byte) (*Model, error) {
	if len(b) < len(modelMagic)+8 || string(b[:len(modelMagic)]) != modelMagic {
		return nil, ErrModelFormat
	}
	if v := binary.LittleEndian.Uint32(b[len(modelMagic):]); v != modelVersion {
		return nil, fmt.Errorf("%w %d", ErrModelVersion, v)
	}
	body, sum := b[:len(b)-4], binary.LittleEndian.Uint32(b[len(b)-4:])
	if crc32.Checksum(body, castagnoli) != sum {
		return nil, fmt.Errorf("%w: checksum mismatch", ErrModelFormat)
	}
	d := &decoder{b: body[len(modelMagic)+4:]}
	n := d.count(8)
	names, sizes := make([]string, n), make([]int, n)
	for i := range n {
		names[i] = string(d.take(d.count(1)))
		sizes[i] = d.u32()
	}
	total := d.f64()
	order := make([]int, n)
	for i := range order {
		order[i] = d.u32()
	}
	k := d.count(4)
	cliques := make([][]int, k)
	for i := range cliques {
		cliques[i] = make([]int, d.count(4))
		for j := range cliques[i] {
			cliques[i][j] = d.u32()
		}
	}
	if d.err != nil {
		return nil, d.err
	}
	dom, err := NewDomain(names, sizes)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrModelFormat, err)
	}
	// Check the size before building anything sized by the cliques.
	var cells int
	for _, c := range cliques {
		if err := dom.checkAttrs(c); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrModelFormat, err)
		}
		cells += dom.Cells(c)
		if cells > len(d.b)/8 {
			return nil, fmt.Errorf("%w: cliques need more potentials than stored", ErrModelFormat)
		}
	}
	jt, err := newJunctionTree(dom, cliques, order)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrModelFormat, err)
	}
	if !slices.EqualFunc(jt.cliques, cliques, slices.Equal) {
		return nil, fmt.Errorf("%w: cliques do not match the elimination order", ErrModelFormat)
	}
	if len(d.b) != 8*jt.total {
		return nil, fmt.Errorf("%w: %d potential bytes, want %d", ErrModelFormat, len(d.b), 8*jt.total)
	}
	theta := make([]float64, jt.total)
	for i := range theta {
		theta[i] = d.f64()
	}
	if !(total > 0) || math.IsInf(total, 0) {
		return nil, fmt.Errorf("%w: total %v", ErrModelFormat, total)
	}
	return newModel(jt, theta, total), nil
}
