package synth

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/dpsql/dpsql/synth/pgm"
)

// The release encoding stores what a Result released besides its final
// model and rows: the measurements, the adaptive rounds, the last candidate
// round of every candidate and the snapshots. It is what error bounds are
// computed from after the fact, so the server keeps it with the synthetic
// table. Everything in it is differentially private.
//
// Layout (all integers as uvarints or zig-zag varints, floats as IEEE 754
// bits in 8 bytes, little-endian):
//
//	magic "DPRL", version (1)
//	RhoUsed
//	measurements: count, then per measurement
//	    attrs, round (varint), epsilon, sigma, Y (count, floats),
//	    query (0 = identity, else rows+1 then cols and rows·cols floats),
//	    coarse (0 = nil, else count+1 then per attribute a list of ints)
//	rounds: count, then round (varint), epsilon, sigma, sensitivity,
//	    candidates, selected, rho used, model size
//	last candidates: count, then attrs and round (varint)
//	snapshots: count, then round (varint) and the model
//	    (0 = nil, else length+1 then pgm's MarshalBinary)
//	version 2 adds: note (length, bytes), artifact (length, bytes)
//	version 3 adds, per measurement after coarse: kron (0 = nil, else
//	    count+1, then per factor 0 = identity, else rows+1, cols and
//	    rows·cols floats)
//	version 4 adds, per snapshot after the model: its marginals (count,
//	    then per marginal attrs and X as count and floats)
//
// A list of ints is its count followed by the values.

const (
	releaseMagic   = "DPRL"
	releaseVersion = 4
)

// ErrRelease is wrapped by UnmarshalRelease's errors for malformed input.
var ErrRelease = errors.New("synth: malformed release encoding")

// sizeHint is a little more than the length of r's encoding, so that the
// encoder allocates its buffer once instead of growing it through copies
// (a release at a large ε holds megabytes of floats). Integers are counted
// at their longest varint; a model at its potentials plus its structure.
func sizeHint(r *Result) int {
	const word, intLen = 8, binary.MaxVarintLen64
	ints := func(s []int) int { return intLen * (1 + len(s)) }
	matrix := func(m *mat.Dense) int {
		if m == nil {
			return intLen
		}
		rows, cols := m.Dims()
		return 2*intLen + word*rows*cols
	}
	n := 64 + 2*intLen + len(r.Note) + len(r.Artifact)
	for i := range r.Measurements {
		m := &r.Measurements[i]
		n += ints(m.Attrs) + 3*intLen + intLen + word*len(m.Y) + matrix(m.Query) + intLen
		for _, c := range m.Coarse {
			n += ints(c)
		}
		for _, f := range m.Kron {
			n += matrix(f)
		}
	}
	for _, rd := range r.Rounds {
		n += 8*intLen + ints(rd.Selected)
	}
	for _, c := range r.LastCandidate {
		n += ints(c.Attrs) + intLen
	}
	for _, sn := range r.Snapshots {
		n += 3 * intLen
		if sn.Model != nil {
			n += sn.Model.EncodedSizeHint()
		}
		for _, m := range sn.Marginals {
			n += ints(m.Attrs) + intLen + word*len(m.X)
		}
	}
	return n
}

// MarshalRelease encodes r's release: everything but Model and Rows.
func MarshalRelease(r *Result) ([]byte, error) { return marshalRelease(r, releaseVersion) }

// WriteRelease writes MarshalRelease's encoding to out as it is made,
// through a buffer of about 64 KB (snapshot models through their own
// WriteBinary), and returns the bytes written: a server stages a release
// of tens of megabytes at a large ε (catalog.Store.StageFrom) without holding
// it.
func WriteRelease(out io.Writer, r *Result) (int64, error) {
	return writeRelease(out, r, releaseVersion)
}

// marshalRelease writes r in the layout of the given version (tests write
// old versions with it, to check that they still decode).
func marshalRelease(r *Result, version uint64) ([]byte, error) {
	buf := bytes.NewBuffer(make([]byte, 0, sizeHint(r)))
	if _, err := writeRelease(buf, r, version); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// writeRelease is WriteRelease in the layout of the given version.
func writeRelease(out io.Writer, r *Result, version uint64) (int64, error) {
	w := releaseWriter{out: out, b: append(make([]byte, 0, releaseBuffer+4096), releaseMagic...)}
	if err := w.encode(r, version); err != nil {
		return w.n, err
	}
	w.flush()
	return w.n, w.err
}

// encode writes r in the layout of the given version.
func (w *releaseWriter) encode(r *Result, version uint64) error {
	w.uint(version)
	w.float(r.RhoUsed)
	w.uint(uint64(len(r.Measurements)))
	for i := range r.Measurements {
		m := &r.Measurements[i]
		w.spill()
		w.ints(m.Attrs)
		w.int(int64(m.Round))
		w.float(m.Epsilon)
		w.float(m.Sigma)
		w.floats(m.Y)
		w.matrix(m.Query)
		if m.Coarse == nil {
			w.uint(0)
		} else {
			w.uint(uint64(len(m.Coarse)) + 1)
			for _, c := range m.Coarse {
				w.ints(c)
			}
		}
		switch {
		case version < 3 && m.Kron != nil:
			return fmt.Errorf("synth: release version %d cannot hold Kronecker measurements", version)
		case version < 3:
		case m.Kron == nil:
			w.uint(0)
		default:
			w.uint(uint64(len(m.Kron)) + 1)
			for _, f := range m.Kron {
				w.matrix(f)
			}
		}
	}
	w.uint(uint64(len(r.Rounds)))
	for _, rd := range r.Rounds {
		w.spill()
		w.int(int64(rd.Round))
		w.float(rd.Epsilon)
		w.float(rd.Sigma)
		w.float(rd.Sensitivity)
		w.uint(uint64(rd.Candidates))
		w.ints(rd.Selected)
		w.float(rd.RhoUsed)
		w.float(rd.ModelSize)
	}
	w.uint(uint64(len(r.LastCandidate)))
	for _, c := range r.LastCandidate {
		w.spill()
		w.ints(c.Attrs)
		w.int(int64(c.Round))
	}
	w.uint(uint64(len(r.Snapshots)))
	for _, s := range r.Snapshots {
		w.spill()
		w.int(int64(s.Round))
		if s.Model == nil {
			w.uint(0)
		} else {
			// Streamed (a lean snapshot derives its potentials clique
			// by clique): no model-sized encoding is held.
			n := s.Model.EncodedSizeHint()
			w.uint(uint64(n) + 1)
			if w.flush(); w.err != nil {
				return w.err
			}
			wrote, err := s.Model.WriteBinary(w.out)
			w.n += wrote
			if err != nil {
				w.err = err
				return fmt.Errorf("synth: encoding snapshot of round %d: %w", s.Round, err)
			}
			if wrote != int64(n) {
				return fmt.Errorf("synth: snapshot of round %d encoded in %d bytes, not the %d announced", s.Round, wrote, n)
			}
		}
		switch {
		case version < 4 && s.Marginals != nil:
			return fmt.Errorf("synth: release version %d cannot hold snapshot marginals", version)
		case version < 4:
		default:
			w.uint(uint64(len(s.Marginals)))
			for _, m := range s.Marginals {
				w.ints(m.Attrs)
				w.floats(m.X)
			}
		}
	}
	if version < 2 {
		if r.Note != "" || r.Artifact != nil {
			return fmt.Errorf("synth: release version %d cannot hold a note or an artifact", version)
		}
		return nil
	}
	w.spill()
	w.uint(uint64(len(r.Note)))
	w.b = append(w.b, r.Note...)
	w.uint(uint64(len(r.Artifact)))
	w.b = append(w.b, r.Artifact...)
	return nil
}

// UnmarshalRelease decodes a release written by MarshalRelease into a
// Result whose Model and Rows are nil.
func UnmarshalRelease(b []byte) (*Result, error) {
	if len(b) < len(releaseMagic) || string(b[:len(releaseMagic)]) != releaseMagic {
		return nil, fmt.Errorf("%w: bad magic", ErrRelease)
	}
	rd := releaseReader{b: b[len(releaseMagic):]}
	version := rd.uint()
	if rd.err == nil && (version < 1 || version > releaseVersion) {
		return nil, fmt.Errorf("%w: unknown version %d", ErrRelease, version)
	}
	r := &Result{RhoUsed: rd.float()}
	n := rd.count(1)
	for range n {
		var m Measurement
		m.Attrs = rd.ints()
		m.Round = int(rd.int())
		m.Epsilon = rd.float()
		m.Sigma = rd.float()
		m.Y = rd.floats()
		m.Query = rd.matrix()
		if k := rd.uint(); k > 0 {
			k = min(k-1, rd.maxCount(1))
			m.Coarse = make([][]int, k)
			for i := range m.Coarse {
				m.Coarse[i] = rd.ints()
			}
		}
		if version >= 3 {
			if k := rd.uint(); k > 0 {
				k = min(k-1, rd.maxCount(1))
				m.Kron = make([]*mat.Dense, k)
				for i := range m.Kron {
					m.Kron[i] = rd.matrix()
				}
			}
		}
		if rd.err != nil {
			break
		}
		r.Measurements = append(r.Measurements, m)
	}
	n = rd.count(1)
	for range n {
		var x Round
		x.Round = int(rd.int())
		x.Epsilon = rd.float()
		x.Sigma = rd.float()
		x.Sensitivity = rd.float()
		x.Candidates = int(rd.uint())
		x.Selected = rd.ints()
		x.RhoUsed = rd.float()
		x.ModelSize = rd.float()
		if rd.err != nil {
			break
		}
		r.Rounds = append(r.Rounds, x)
	}
	n = rd.count(1)
	for range n {
		c := CandidateRound{Attrs: rd.ints(), Round: int(rd.int())}
		if rd.err != nil {
			break
		}
		r.LastCandidate = append(r.LastCandidate, c)
	}
	n = rd.count(1)
	for range n {
		s := Snapshot{Round: int(rd.int())}
		if l := rd.uint(); l > 0 && rd.err == nil {
			l--
			if l > uint64(len(rd.b)) {
				rd.fail("snapshot of %d bytes", l)
				break
			}
			m, err := pgm.UnmarshalModel(rd.b[:l])
			if err != nil {
				return nil, fmt.Errorf("%w: snapshot of round %d: %w", ErrRelease, s.Round, err)
			}
			rd.b = rd.b[l:]
			s.Model = m
		}
		if version >= 4 {
			k := rd.count(2)
			for range k {
				m := SnapshotMarginal{Attrs: rd.ints(), X: rd.floats()}
				if rd.err != nil {
					break
				}
				s.Marginals = append(s.Marginals, m)
			}
		}
		if rd.err != nil {
			break
		}
		r.Snapshots = append(r.Snapshots, s)
	}
	if version >= 2 {
		r.Note = string(rd.bytes())
		if a := rd.bytes(); len(a) > 0 {
			r.Artifact = a
		}
	}
	if rd.err == nil && len(rd.b) != 0 {
		rd.fail("%d trailing bytes", len(rd.b))
	}
	if rd.err != nil {
		return nil, rd.err
	}
	return r, nil
}

// releaseWriter encodes into b, which it writes to out (keeping the first
// error) whenever it holds releaseBuffer bytes or more.
type releaseWriter struct {
	out io.Writer
	b   []byte
	n   int64 // bytes written to out
	err error
}

// releaseBuffer is what a releaseWriter holds before it writes out.
const releaseBuffer = 64 << 10

// spill writes the buffer out once it is full.
func (w *releaseWriter) spill() {
	if len(w.b) >= releaseBuffer {
		w.flush()
	}
}

// flush writes the buffer out.
func (w *releaseWriter) flush() {
	if w.err == nil && len(w.b) > 0 {
		var n int
		n, w.err = w.out.Write(w.b)
		w.n += int64(n)
	}
	w.b = w.b[:0]
}

// matrix writes 0 for nil, else rows+1, cols and the entries row by row.
func (w *releaseWriter) matrix(m *mat.Dense) {
	if m == nil {
		w.uint(0)
		return
	}
	rows, cols := m.Dims()
	w.uint(uint64(rows) + 1)
	w.uint(uint64(cols))
	for i := range rows {
		w.spill()
		for j := range cols {
			w.float(m.At(i, j))
		}
	}
}

func (w *releaseWriter) uint(v uint64) { w.b = binary.AppendUvarint(w.b, v) }
func (w *releaseWriter) int(v int64)   { w.b = binary.AppendVarint(w.b, v) }
func (w *releaseWriter) float(f float64) {
	w.b = binary.LittleEndian.AppendUint64(w.b, math.Float64bits(f))
}

func (w *releaseWriter) ints(s []int) {
	w.uint(uint64(len(s)))
	for _, v := range s {
		w.int(int64(v))
	}
}

func (w *releaseWriter) floats(s []float64) {
	w.uint(uint64(len(s)))
	for i, f := range s {
		if i%4096 == 0 {
			w.spill()
		}
		w.float(f)
	}
}

// releaseReader decodes; after the first error every read returns zero.
type releaseReader struct {
	b   []byte
	err error
}

func (r *releaseReader) fail(format string, args ...any) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: "+format, append([]any{ErrRelease}, args...)...)
	}
}

func (r *releaseReader) uint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail("truncated integer")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *releaseReader) int() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail("truncated integer")
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *releaseReader) float() float64 {
	if r.err != nil {
		return 0
	}
	if len(r.b) < 8 {
		r.fail("truncated float")
		return 0
	}
	f := math.Float64frombits(binary.LittleEndian.Uint64(r.b))
	r.b = r.b[8:]
	return f
}

// maxCount bounds a count by the bytes left, each element taking at least
// size bytes, so a corrupt count cannot make the decoder allocate much.
func (r *releaseReader) maxCount(size int) uint64 { return uint64(len(r.b) / size) }

// count reads a count of elements of at least size bytes each.
func (r *releaseReader) count(size int) int {
	n := r.uint()
	if n > r.maxCount(size) {
		r.fail("count %d exceeds the input", n)
		return 0
	}
	return int(n)
}

// bytes reads a length-prefixed byte string (a copy).
func (r *releaseReader) bytes() []byte {
	l := r.uint()
	if r.err != nil {
		return nil
	}
	if l > uint64(len(r.b)) {
		r.fail("string of %d bytes", l)
		return nil
	}
	out := append([]byte(nil), r.b[:l]...)
	r.b = r.b[l:]
	return out
}

// matrix reads what releaseWriter.matrix wrote (nil for 0).
func (r *releaseReader) matrix() *mat.Dense {
	rows := r.uint()
	if r.err != nil || rows == 0 {
		return nil
	}
	rows--
	cols := r.uint()
	if r.err == nil && (rows == 0 || cols == 0 || rows*cols/cols != rows || rows*cols > uint64(len(r.b))/8) {
		r.fail("matrix %d×%d", rows, cols)
	}
	if r.err != nil {
		return nil
	}
	data := make([]float64, rows*cols)
	for i := range data {
		data[i] = r.float()
	}
	return mat.NewDense(int(rows), int(cols), data)
}

func (r *releaseReader) ints() []int {
	n := r.count(1)
	if r.err != nil || n == 0 {
		return nil
	}
	s := make([]int, n)
	for i := range s {
		s[i] = int(r.int())
	}
	return s
}

func (r *releaseReader) floats() []float64 {
	n := r.count(8)
	if r.err != nil || n == 0 {
		return nil
	}
	s := make([]float64, n)
	for i := range s {
		s[i] = r.float()
	}
	return s
}
