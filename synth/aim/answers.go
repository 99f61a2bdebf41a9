package aim

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"sync"
	"unsafe"

	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/internal/marginal"
)

// answer is a true candidate marginal M_r(D), held for the whole run,
// sparsely when it is mostly zeros (marginal.Compact).
type answer = marginal.Compact

// answerStore holds the candidates' true answers for the run: in memory
// until they take spillAnswersBytes, then, when the run has a directory for
// temporary files, in a file of their own, each written as it is computed
// and read back into a reused buffer (and checked) when it is scored or
// measured. They are read in every round but a candidate at a time, and
// they are the part of the run's live heap that grows with the rows (a
// count a non-zero cell: an adult-like table's 364 3-way marginals take
// 10 MB at 1 M rows, 20 MB at 10 M) and with the width (30 MB on a
// 30-column table); in the file they sit in the system's page cache, which
// it may reclaim, not in the heap, whose collector would hold twice them.
type answerStore struct {
	dir      string   // where to spill ("": never, or no more)
	spillAt  int      // from how many bytes held
	cells    []int    // each answer's cell count
	rows     float64  // the data's rows (any answer's total)
	mem      []answer // the answers held in memory
	memBytes int
	f        *os.File // the file, once spilling
	end      int64    // its length
	size     []int    // answer i's encoding in f: its length (0: in memory),
	at       []int64  // its offset
	sum      []uint32 // and its CRC-32C
	enc      []byte   // put's encoding buffer
	bufs     sync.Pool
}

// spillAnswersBytes is the size from which answers are spilled (a
// variable for tests).
var spillAnswersBytes = 1 << 20

// maxPooledWords bounds the read buffers kept for reuse (256 KB): a larger
// answer's buffer is garbage once read, not held through the run (the
// largest grow with the rows). A variable for tests.
var maxPooledWords = 1 << 15

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// newAnswerStore returns an empty store that spills to dir ("": never).
func newAnswerStore(dir string) *answerStore {
	return &answerStore{dir: dir, spillAt: spillAnswersBytes}
}

// Len is the number of cells of answer i.
func (s *answerStore) Len(i int) int { return s.cells[i] }

// put stores a as answer i (a is kept, not copied, while in memory). Puts
// are not concurrent with each other or with reads. If the file cannot be
// written (a full disk), the answers not in it stay in memory: that costs
// memory, not the run.
func (s *answerStore) put(i int, a answer) {
	for len(s.cells) <= i {
		s.cells, s.mem = append(s.cells, 0), append(s.mem, answer{})
		s.size, s.at, s.sum = append(s.size, 0), append(s.at, 0), append(s.sum, 0)
	}
	if s.rows == 0 {
		s.rows = a.L1Total(make([]float64, a.Len()), 0)
	}
	s.cells[i] = a.Len()
	s.mem[i] = a
	s.memBytes += a.Bytes()
	switch {
	case s.f == nil && s.dir != "" && s.memBytes >= s.spillAt:
		if s.f = spillFile(s.dir, "answers"); s.f == nil {
			s.dir = "" // no file to be had
			break
		}
		for k := range s.mem { // the answers held so far
			if s.mem[k].Len() > 0 && !s.write(k) {
				s.dir = "" // no more writes
				break
			}
		}
	case s.f != nil && s.dir != "":
		if !s.write(i) {
			s.dir = ""
		}
	}
}

// sealed says that nothing more is put: the encoding buffer goes.
func (s *answerStore) sealed() { s.enc = nil }

// write moves answer k to the end of the file, and reports whether it
// could.
func (s *answerStore) write(k int) bool {
	s.enc = s.mem[k].AppendBinary(s.enc[:0])
	if _, err := s.f.WriteAt(s.enc, s.end); err != nil {
		return false
	}
	s.size[k], s.at[k], s.sum[k] = len(s.enc), s.end, crc32.Checksum(s.enc, castagnoli)
	s.end += int64(len(s.enc))
	s.memBytes -= s.mem[k].Bytes()
	s.mem[k] = answer{}
	return true
}

// with calls fn with answer i, valid during the call only. Calls may run
// concurrently.
func (s *answerStore) with(i int, fn func(a *answer)) error {
	if s.size[i] == 0 {
		fn(&s.mem[i])
		return nil
	}
	words := (s.size[i] + 7) / 8
	var p *[]uint64
	if words <= maxPooledWords {
		p, _ = s.bufs.Get().(*[]uint64)
	}
	if p == nil || cap(*p) < words {
		p = new([]uint64)
		*p = make([]uint64, words, max(words, 1<<10))
	}
	if words <= maxPooledWords {
		defer s.bufs.Put(p)
	}
	b := unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(*p))), s.size[i])
	if _, err := s.f.ReadAt(b, s.at[i]); err != nil {
		return fmt.Errorf("reading back the true answers: %w", err)
	}
	if crc32.Checksum(b, castagnoli) != s.sum[i] {
		return errors.New("reading back the true answers: checksum mismatch (the temporary file was changed or the disk failed)")
	}
	var a answer
	if _, err := a.View(b); err != nil {
		return fmt.Errorf("reading back the true answers: %w", err)
	}
	fn(&a)
	return nil
}

// L1Total is answer i's L1Total.
func (s *answerStore) L1Total(i int, y []float64, total float64) (l1 float64, err error) {
	err = s.with(i, func(a *answer) { l1 = a.L1Total(y, total) })
	return l1, err
}

// Expand is answer i's Expand.
func (s *answerStore) Expand(i int, dst []float64) (x []float64, err error) {
	err = s.with(i, func(a *answer) { x = a.Expand(dst) })
	return x, err
}

// close lets the answers go, and their file.
func (s *answerStore) close() {
	if s.f != nil {
		dropFile(s.f)
	}
	s.mem, s.f = nil, nil
}

// candidateAnswers puts the true marginal of every candidate into store:
// the workload sets are asked of in.Data in one call (a remote source
// scans as few times as it can; a dataset in memory counts them a group at
// a time into one buffer it lends, pgm.Dataset.LendMarginals), each
// streamed into the store as it arrives with the subsets projected from
// it, so that they are never all held at once but in the store.
func candidateAnswers(ctx context.Context, in *synth.Input, w []synth.Marginal, cands []candidate, store *answerStore) error {
	dom := in.Data.Domain()
	// sub[p] are the candidates projected from workload set p.
	sub := make([][]int, len(w))
	top := make([]int, len(w)) // −1: the set is projected from a larger one
	for p := range top {
		top[p] = -1
	}
	for i, c := range cands {
		p := c.parents[0]
		if len(c.attrs) == len(w[p].Attrs) {
			top[p] = i
		} else {
			sub[p] = append(sub[p], i)
		}
	}
	sets := make([][]int, len(w))
	for p := range w {
		sets[p] = w[p].Attrs
	}
	var proj []float64
	return stream(ctx, in.Data, sets, func(p int, h marginal.Compact) error {
		for _, i := range sub[p] {
			proj = h.ProjectTo(proj, dom, w[p].Attrs, cands[i].attrs)
			store.put(i, marginal.CompactOf(proj))
		}
		if top[p] >= 0 {
			store.put(top[p], h)
		}
		return nil
	})
}

// stream hands fn the true marginal of each of sets, compacted, as
// synth.Cache.Stream does: from a cache, what it fetched is not also kept
// there.
func stream(ctx context.Context, d synth.Data, sets [][]int, fn func(i int, m marginal.Compact) error) error {
	if c, ok := d.(*synth.Cache); ok {
		return c.Stream(ctx, sets, fn)
	}
	return synth.Lend(ctx, d, sets, func(i int, x []float64) error { return fn(i, marginal.CompactOf(x)) })
}
