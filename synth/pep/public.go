package pep

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/pgm"
)

// support is the distinct rows of a public table with their counts: the
// points PMW^Pub and PEP^Pub put their weights on.
type support struct {
	cols  [][]uint16
	count []float64
	rows  int
}

func newSupport(pub *pgm.Dataset) *support {
	d := pub.Domain().Len()
	index := map[string]int{}
	s := &support{cols: make([][]uint16, d), rows: pub.Rows()}
	key := make([]byte, 2*d)
	for x := range pub.Rows() {
		for a := range d {
			binary.LittleEndian.PutUint16(key[2*a:], pub.Column(a)[x])
		}
		if k, ok := index[string(key)]; ok {
			s.count[k]++
			continue
		}
		index[string(key)] = len(s.count)
		s.count = append(s.count, 1)
		for a := range d {
			s.cols[a] = append(s.cols[a], pub.Column(a)[x])
		}
	}
	return s
}

// logBase is D_0, the public table's empirical distribution, in log space.
func (s *support) logBase() []float64 {
	lb := make([]float64, len(s.count))
	for k, c := range s.count {
		lb[k] = math.Log(c / float64(s.rows))
	}
	return lb
}

// checkPublic refuses a public table whose domain is not the data's.
func checkPublic(dom, pub *pgm.Domain) error {
	if pub.Len() != dom.Len() {
		return fmt.Errorf("%w: the public table has %d columns, the source %d (they must have the same columns and domains)",
			synth.ErrInvalidInput, pub.Len(), dom.Len())
	}
	for a := range dom.Len() {
		if pub.Name(a) != dom.Name(a) || pub.Size(a) != dom.Size(a) {
			return fmt.Errorf("%w: public column %d is %s with %d values, the source's is %s with %d (they must have the same columns and domains)",
				synth.ErrInvalidInput, a, pub.Name(a), pub.Size(a), dom.Name(a), dom.Size(a))
		}
	}
	if !pub.Equal(dom) {
		return fmt.Errorf("%w: the public table's domain differs from the source's", synth.ErrInvalidInput)
	}
	return nil
}

// finishPublic releases the weighted public support: rows drawn from it
// (post-processing), the weights as the artifact, and the best-mixture
// diagnostic as the note.
func (r *run) finishPublic(res *synth.Result, sup *support) (*synth.Result, error) {
	g := r.fam.(*denseFamily)
	p := g.probs()
	rows := r.in.Rows
	if rows == 0 {
		rows = int(min(math.Round(r.total), synth.MaxRows))
	}
	res.Rows = sampleSupport(sup.cols, p, rows, r.in)
	res.Artifact = encodeWeights(sup.cols, p)
	if len(r.qs) > 0 {
		bme := r.bestMixture(sup)
		res.Note = fmt.Sprintf("%s: best-mixture error of the public support ≤ %.4g (max |ã − q(μ)| over the %d released noisy cells, normalised, for the best reweighting μ of the public rows found); support %d distinct public rows",
			r.cfg.name, bme, len(r.qs), len(sup.count))
	}
	r.in.Report(synth.Status{Phase: "final", Round: len(res.Rounds), RhoUsed: res.RhoUsed, ModelSize: g.size()})
	return res, nil
}

// sampleSupport draws rows records from the points cols with probabilities
// p by systematic sampling (each point appears ⌊rows·p⌋ or ⌈rows·p⌉ times,
// in expectation rows·p), then shuffles them. It uses in.Post().
func sampleSupport(cols [][]uint16, p []float64, rows int, in *synth.Input) [][]uint16 {
	rng := in.Post()
	out := make([][]uint16, len(cols))
	for a := range out {
		out[a] = make([]uint16, 0, rows)
	}
	if rows > 0 {
		u := rng.Float64()
		acc := 0.0
		k := 0
		for x, px := range p {
			acc += px * float64(rows)
			for k < rows && float64(k)+u < acc {
				for a := range cols {
					out[a] = append(out[a], cols[a][x])
				}
				k++
			}
		}
		for k < rows { // rounding shortfall: the last point with mass
			x := len(p) - 1
			for x > 0 && p[x] == 0 {
				x--
			}
			for a := range cols {
				out[a] = append(out[a], cols[a][x])
			}
			k++
		}
	}
	rng.Shuffle(rows, func(i, j int) {
		for a := range out {
			out[a][i], out[a][j] = out[a][j], out[a][i]
		}
	})
	return out
}

// weightsMagic starts the artifact of the public variants (version 1):
// magic, attributes d (u32), points m (u32), then the points' codes
// column by column (m u16 per attribute), then m float64 probabilities,
// all little-endian.
const weightsMagic = "dpsql-pubweights\x01"

func encodeWeights(cols [][]uint16, p []float64) []byte {
	b := make([]byte, 0, len(weightsMagic)+8+len(p)*(2*len(cols)+8))
	b = append(b, weightsMagic...)
	b = binary.LittleEndian.AppendUint32(b, uint32(len(cols)))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(p)))
	for _, c := range cols {
		for _, v := range c {
			b = binary.LittleEndian.AppendUint16(b, v)
		}
	}
	for _, v := range p {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(v))
	}
	return b
}

// DecodeWeights decodes the artifact of pmw_pub and pep_pub: the support
// points (column-major codes) and their probabilities.
func DecodeWeights(b []byte) (cols [][]uint16, p []float64, err error) {
	if len(b) < len(weightsMagic)+8 || string(b[:len(weightsMagic)]) != weightsMagic {
		return nil, nil, fmt.Errorf("pep: not a public-weights artifact (version 1)")
	}
	b = b[len(weightsMagic):]
	d, m := int(binary.LittleEndian.Uint32(b)), int(binary.LittleEndian.Uint32(b[4:]))
	b = b[8:]
	if uint64(len(b)) != uint64(m)*(2*uint64(d)+8) {
		return nil, nil, fmt.Errorf("pep: public-weights artifact of %d bytes for %d points over %d attributes", len(b), m, d)
	}
	cols = make([][]uint16, d)
	for a := range cols {
		cols[a] = make([]uint16, m)
		for x := range m {
			cols[a][x] = binary.LittleEndian.Uint16(b)
			b = b[2:]
		}
	}
	p = make([]float64, m)
	for x := range p {
		p[x] = math.Float64frombits(binary.LittleEndian.Uint64(b))
		b = b[8:]
	}
	return cols, p, nil
}

// bestMixtureIters bounds the projection steps of the diagnostic.
const bestMixtureIters = 2000

// bestMixture estimates the best-mixture error of the support on the
// released measurements only: min over distributions μ on the support of
// max_j |ã_j − q_j(μ)|, approached from above by running the projection of
// Alg. 4 (γ = 0) from the public distribution for bestMixtureIters steps
// and keeping the smallest max error met. It reads no private data.
func (r *run) bestMixture(sup *support) float64 {
	g := newDense(r.dom, sup.cols, sup.logBase())
	sets, _ := r.fam.thetas()
	for _, s := range sets {
		if _, err := g.addSet(s); err != nil {
			return math.NaN()
		}
	}
	margs := make([][]float64, len(sets))
	best := math.Inf(1)
	for range bestMixtureIters {
		for i := range sets {
			margs[i] = g.marginal(i, margs[i])
		}
		arg, worst, worstMovable := -1, 0.0, -1.0
		for j, q := range r.qs {
			e := math.Abs(r.target(j) - margs[q.set][q.cell])
			worst = max(worst, e)
			if e > worstMovable && g.movable(q.set, q.cell) {
				arg, worstMovable = j, e
			}
		}
		best = min(best, worst)
		if arg < 0 || worstMovable == 0 {
			break
		}
		a := min(max(r.target(arg), clipOffset), 1-clipOffset)
		b := min(max(margs[r.qs[arg].set][r.qs[arg].cell], clipOffset), 1-clipOffset)
		g.addCell(r.qs[arg].set, r.qs[arg].cell, math.Log(a*(1-b)/((1-a)*b)))
	}
	return best
}
