package aim

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/internal/synthtest"
)

// remote hides a dataset's type, as a federated source would.
type remote struct {
	synth.Data
	calls int
}

func (r *remote) Marginals(ctx context.Context, sets [][]int) ([][]float64, error) {
	r.calls++
	return r.Data.Marginals(ctx, sets)
}

// TestCandidateAnswers: every candidate's answer is its true marginal,
// whether the workload is counted in memory (into a buffer the dataset
// lends, its sets in groups: synth.Lend) or asked of a remote source in
// one call, and with workload sets nested in others.
func TestCandidateAnswers(t *testing.T) {
	ctx := context.Background()
	data := synthtest.Chain(2, 500, []int{4, 3, 5, 2, 6})
	work := append(synthtest.AllK(5, 3), synth.Marginal{Attrs: []int{1, 3}, Weight: 2})
	w, err := synth.CanonicalWorkload(5, work)
	if err != nil {
		t.Fatal(err)
	}
	cands := closure(w)
	viaCache := &remote{Data: data}
	for _, tt := range []struct {
		name   string
		data   synth.Data
		remote *remote // asked exactly once
	}{
		{"in memory", data, nil},
		{"cache over memory", synth.NewCache(data), nil},
		{"remote", &remote{Data: data}, nil},
		{"cache over a remote source", synth.NewCache(viaCache), viaCache},
	} {
		for _, spill := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s, spilled %v", tt.name, spill), func(t *testing.T) {
				if r, ok := tt.data.(*remote); ok {
					r.calls = 0
				}
				if tt.remote != nil {
					tt.remote.calls = 0
				}
				store := newAnswerStore("")
				if spill {
					store = spilledStore(t)
				}
				defer store.close()
				if err := candidateAnswers(ctx, &synth.Input{Data: tt.data}, w, cands, store); err != nil {
					t.Fatal(err)
				}
				if got := store.inFile(); (got == len(cands)) != spill || (got == 0) == spill {
					t.Fatalf("%d of %d answers in the file, spilled %v", got, len(cands), spill)
				}
				for i, c := range cands {
					want := data.MarginalTo(nil, c.attrs)
					if x := store.expand(i); !slices.Equal(x, want) || store.Len(i) != len(want) {
						t.Fatalf("candidate %v: %v, want %v", c.attrs, x, want)
					}
				}
				if store.rows != 500 {
					t.Errorf("rows %v, want 500", store.rows)
				}
				r, ok := tt.data.(*remote)
				if !ok {
					r = tt.remote
				}
				if r != nil && r.calls != 1 {
					t.Errorf("remote source asked %d times, want once", r.calls)
				}
			})
		}
	}
}

// inFile is the number of answers in the file.
func (s *answerStore) inFile() int {
	n := 0
	for _, z := range s.size {
		if z > 0 {
			n++
		}
	}
	return n
}

// expand is answer i, expanded; it panics if it cannot be read (tests).
func (s *answerStore) expand(i int) []float64 {
	x, err := s.Expand(i, nil)
	if err != nil {
		panic(err)
	}
	return x
}

// spilledStore is an empty store that spills its first answer on to a
// file in t's temporary directory: the tests that score through it read
// the answers back.
func spilledStore(t *testing.T) *answerStore {
	t.Helper()
	s := newAnswerStore(t.TempDir())
	s.spillAt = 0
	t.Cleanup(s.close)
	return s
}

// TestAnswerStore: spilled answers read back as they were, bit for bit,
// concurrently; a changed file is an error, not a wrong answer or a panic;
// closing removes the file.
func TestAnswerStore(t *testing.T) {
	data := synthtest.Chain(2, 3000, []int{4, 3, 40, 2, 6})
	_, _, cands, s := testCandidates(t, data, synthtest.AllK(5, 3))
	cands, err := addTwins(data.Domain(), cands, s, 3)
	if err != nil {
		t.Fatal(err)
	}
	in := &synth.Input{Data: data}
	w, _ := synth.CanonicalWorkload(5, synthtest.AllK(5, 3))
	mem := newAnswerStore("")
	if err := candidateAnswers(context.Background(), in, w, closure(w), mem); err != nil {
		t.Fatal(err)
	}
	if _, err := addTwins(data.Domain(), closure(w), mem, 3); err != nil {
		t.Fatal(err)
	}
	if s.inFile() != len(cands) || s.memBytes != 0 || mem.inFile() != 0 || s.rows != 3000 || mem.rows != 3000 || len(mem.cells) != len(cands) {
		t.Fatalf("spilled: %d of %d in the file, %d bytes held; in memory: %d in the file; rows %v and %v", s.inFile(), len(cands), s.memBytes, mem.inFile(), s.rows, mem.rows)
	}
	defer func(n int) { maxPooledWords = n }(maxPooledWords)
	for _, pooled := range []int{maxPooledWords, 0} { // buffers reused, or each read's own
		maxPooledWords = pooled
		rng := rand.New(rand.NewPCG(5, 6))
		var wg sync.WaitGroup
		errs := make(chan error, len(cands))
		for i := range cands {
			y := make([]float64, s.Len(i))
			for k := range y {
				y[k] = rng.Float64()
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				got, err := s.L1Total(i, y, 7)
				want, _ := mem.L1Total(i, y, 7)
				x, err2 := s.Expand(i, nil)
				switch {
				case err != nil || err2 != nil:
					errs <- fmt.Errorf("candidate %d: %v, %v", i, err, err2)
				case math.Float64bits(got) != math.Float64bits(want) || !slices.Equal(x, mem.expand(i)) || s.Len(i) != mem.Len(i):
					errs <- fmt.Errorf("candidate %d (%v) reads back differently", i, cands[i].attrs)
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	}

	// One byte changed in the file: every read of that answer fails.
	last := len(cands) - 1
	if _, err := s.f.WriteAt([]byte{0xff}, s.at[last]+int64(s.size[last])-1); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Expand(last, nil); err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Errorf("changed file: %v, want a checksum error", err)
	}
	name := s.f.Name()
	s.close()
	if _, err := os.Stat(name); !os.IsNotExist(err) {
		t.Errorf("the file is still there after close: %v", err)
	}
}

// TestRunSpillsAnswers: a run whose true answers are spilled (to the
// input's TempDir) releases what the same run holding them in memory does,
// bit for bit; the cache it read them from holds nothing after, and the
// file is gone when the run returns.
func TestRunSpillsAnswers(t *testing.T) {
	opts := []synth.Option{{Name: "PGM_ITERS", Value: 20}, {Name: "FINAL_ITERS", Value: 50}}
	mem := synthtest.MustRun(t, Mechanism{}, opts, testInput(2))

	defer func(n int) { spillAnswersBytes = n }(spillAnswersBytes)
	spillAnswersBytes = 0
	dir := t.TempDir()
	in := testInput(2)
	cache := synth.NewCache(in.Data)
	in.Data, in.TempDir = cache, dir
	var fetched []int
	in.Progress = func(s synth.Status) {
		if s.Phase == "init" {
			fetched = append(fetched, cache.Fetched())
		}
	}
	spilled := synthtest.MustRun(t, Mechanism{}, opts, in)

	if !slices.Equal(fetched, []int{0}) {
		t.Errorf("the cache held %v marginals once the answers were spilled, want none", fetched)
	}
	if len(spilled.Measurements) != len(mem.Measurements) || len(spilled.Rows) != len(mem.Rows) {
		t.Fatalf("%d measurements and %d columns, want %d and %d", len(spilled.Measurements), len(spilled.Rows), len(mem.Measurements), len(mem.Rows))
	}
	for k, m := range mem.Measurements {
		if s := spilled.Measurements[k]; !slices.Equal(s.Attrs, m.Attrs) || !slices.Equal(s.Y, m.Y) {
			t.Fatalf("measurement %d differs: %v against %v", k, s.Attrs, m.Attrs)
		}
	}
	for a := range mem.Rows {
		if !slices.Equal(spilled.Rows[a], mem.Rows[a]) {
			t.Fatalf("column %d of the rows differs", a)
		}
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("left in the temporary directory: %v", left)
	}
}

// TestAnswerStoreWriteFails: when the file stops taking writes (a full
// disk), the answers not yet in it stay in memory, and every answer still
// reads back as it was put.
func TestAnswerStoreWriteFails(t *testing.T) {
	data := synthtest.Chain(2, 800, []int{4, 3, 5, 2, 6})
	in := &synth.Input{Data: data}
	w, _ := synth.CanonicalWorkload(5, synthtest.AllK(5, 3))
	cands := closure(w)
	mem := newAnswerStore("")
	if err := candidateAnswers(context.Background(), in, w, cands, mem); err != nil {
		t.Fatal(err)
	}
	s := spilledStore(t)
	for i := range cands {
		if i == len(cands)/2 {
			// From here on every write fails, as on a full disk: the
			// same (unlinked) file, opened again read-only.
			ro, err := os.Open(fmt.Sprintf("/proc/self/fd/%d", s.f.Fd()))
			if err != nil {
				t.Skipf("cannot reopen the file read-only: %v", err)
			}
			defer s.f.Close()
			s.f = ro
		}
		s.put(i, mem.mem[i])
	}
	if n := s.inFile(); n != len(cands)/2 {
		t.Errorf("%d answers in the file, want the %d put before the writes failed", n, len(cands)/2)
	}
	for i := range cands {
		if !slices.Equal(s.expand(i), mem.expand(i)) {
			t.Fatalf("answer %d reads back differently", i)
		}
	}
}
