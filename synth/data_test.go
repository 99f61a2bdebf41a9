package synth_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/internal/marginal"
	"github.com/dpsql/dpsql/synth/pgm"
)

// countingData counts the marginals a Cache asks its source for.
type countingData struct {
	*pgm.Dataset
	calls, sets int
}

func (c *countingData) Marginals(ctx context.Context, sets [][]int) ([][]float64, error) {
	c.calls++
	c.sets += len(sets)
	return c.Dataset.Marginals(ctx, sets)
}

// visitingData answers a set at a time through VisitMarginals and records,
// at each hand-over, how many marginals the Cache had kept by then.
type visitingData struct {
	*pgm.Dataset
	cache *synth.Cache
	kept  []int
}

func (v *visitingData) VisitMarginals(ctx context.Context, sets [][]int, fn func(int, []float64) error) error {
	for i, s := range slices.Backward(sets) {
		v.kept = append(v.kept, v.cache.Fetched())
		if err := fn(i, v.MarginalTo(nil, s)); err != nil {
			return err
		}
	}
	return nil
}

func randomDataset(t *testing.T, rng *rand.Rand, sizes []int, rows int) *pgm.Dataset {
	t.Helper()
	names := make([]string, len(sizes))
	cols := make([][]uint16, len(sizes))
	for a, n := range sizes {
		names[a] = string(rune('a' + a))
		cols[a] = make([]uint16, rows)
		for r := range cols[a] {
			cols[a][r] = uint16(rng.IntN(n))
		}
	}
	dom, err := pgm.NewDomain(names, sizes)
	if err != nil {
		t.Fatal(err)
	}
	ds, err := pgm.NewDataset(dom, cols)
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// The cache holds dense marginals (500 rows) and sparse ones (12 rows over
// up to 60 cells) and answers both alike.
func TestCacheAnswersLikeItsSource(t *testing.T) {
	for _, rows := range []int{500, 12} {
		cacheAnswersLikeItsSource(t, rows)
	}
}

func cacheAnswersLikeItsSource(t *testing.T, rows int) {
	rng := rand.New(rand.NewPCG(1, 2))
	ds := randomDataset(t, rng, []int{2, 3, 4, 5}, rows)
	src := &countingData{Dataset: ds}
	c := synth.NewCache(src)
	ctx := context.Background()
	for _, tc := range []struct {
		name      string
		sets      [][]int
		wantCalls int // source calls after this step
		wantSets  int // sets asked of the source after this step
	}{
		{"supersets and their subsets in one call", [][]int{{0, 1, 2}, {2, 0}, {1}, {3, 1}}, 1, 2},
		{"subsets of held sets cost nothing", [][]int{{1, 0}, {2}, {3}, {2, 1, 0}}, 1, 2},
		{"a new set is fetched once", [][]int{{3, 2}, {2, 3}}, 2, 3},
		{"unordered attributes", [][]int{{3, 0, 1}, {1, 3, 0}}, 3, 4},
	} {
		got, err := c.Marginals(ctx, tc.sets)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		for i, s := range tc.sets {
			want := ds.MarginalTo(nil, s)
			if !slices.Equal(got[i], want) {
				t.Errorf("%d rows, %s: marginal over %v = %v, want %v", rows, tc.name, s, got[i], want)
			}
		}
		// Stream answers the same without asking the source again.
		if err := c.Stream(ctx, tc.sets, func(i int, m marginal.Compact) error {
			if got, want := m.Expand(nil), ds.MarginalTo(nil, tc.sets[i]); !slices.Equal(got, want) {
				t.Errorf("%d rows, %s: Stream over %v = %v, want %v", rows, tc.name, tc.sets[i], got, want)
			}
			return nil
		}); err != nil {
			t.Fatalf("%s: Stream: %v", tc.name, err)
		}
		if src.calls != tc.wantCalls || src.sets != tc.wantSets {
			t.Errorf("%s: source asked %d times for %d sets, want %d times for %d", tc.name, src.calls, src.sets, tc.wantCalls, tc.wantSets)
		}
	}
	// Answers are copies: writing to one does not change the next.
	a, _ := c.Marginals(ctx, [][]int{{0, 1, 2}})
	a[0][0] += 1000
	b, _ := c.Marginals(ctx, [][]int{{0, 1, 2}})
	if b[0][0] == a[0][0] {
		t.Error("a caller's write to an answer changed the cache")
	}
}

func TestCacheRejectsBadSets(t *testing.T) {
	ds := randomDataset(t, rand.New(rand.NewPCG(3, 4)), []int{2, 2}, 10)
	c := synth.NewCache(ds)
	for _, s := range [][]int{{}, {2}, {-1}, {0, 0}} {
		if _, err := c.Marginals(context.Background(), [][]int{s}); err == nil {
			t.Errorf("set %v accepted", s)
		}
	}
}

// Stream fetches what is missing in one call, every distinct set (nested
// ones too, in any attribute order) once, hands each set over once, and
// keeps none of what it fetched: a second stream asks again, and the
// cache holds nothing. A failing fn stops it.
func TestCacheStream(t *testing.T) {
	ds := randomDataset(t, rand.New(rand.NewPCG(3, 4)), []int{2, 3, 4}, 40)
	src := &countingData{Dataset: ds}
	c := synth.NewCache(src)
	sets := [][]int{{2, 0}, {0, 1, 2}, {1}, {0, 2}}
	for round := 1; round <= 2; round++ {
		seen := make([]int, len(sets))
		err := c.Stream(context.Background(), sets, func(i int, m marginal.Compact) error {
			seen[i]++
			if got, want := m.Expand(nil), ds.MarginalTo(nil, sets[i]); !slices.Equal(got, want) {
				t.Errorf("marginal over %v = %v, want %v", sets[i], got, want)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(seen, []int{1, 1, 1, 1}) {
			t.Errorf("sets handed over %v times, want once each", seen)
		}
		if src.calls != round || src.sets != 3*round || c.Fetched() != 0 {
			t.Errorf("stream %d: source asked %d times for %d sets, cache holds %d; want %d times for %d, none held", round, src.calls, src.sets, c.Fetched(), round, 3*round)
		}
	}
	// A dataset itself lends its counts in a reused buffer (synth.Lend): each
	// marginal handed over is still its own.
	var kept []marginal.Compact
	if err := synth.NewCache(ds).Stream(context.Background(), sets, func(i int, m marginal.Compact) error {
		for len(kept) <= i {
			kept = append(kept, marginal.Compact{})
		}
		kept[i] = m
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for i, m := range kept {
		if got, want := m.Expand(nil), ds.MarginalTo(nil, sets[i]); !slices.Equal(got, want) {
			t.Errorf("from the dataset, kept to the end: marginal over %v = %v, want %v", sets[i], got, want)
		}
	}
	stop := errors.New("stop")
	calls := 0
	if err := c.Stream(context.Background(), sets, func(int, marginal.Compact) error { calls++; return stop }); !errors.Is(err, stop) || calls != 1 {
		t.Errorf("failing fn: %v after %d calls, want %v after 1", err, calls, stop)
	}
}

// A source that hands marginals over one at a time has each kept (compacted)
// before it hands over the next: the Cache never holds the dense answers
// of a whole fetch at once.
func TestCacheKeepsVisitedMarginals(t *testing.T) {
	ds := randomDataset(t, rand.New(rand.NewPCG(5, 6)), []int{2, 3, 4, 5}, 200)
	src := &visitingData{Dataset: ds}
	c := synth.NewCache(src)
	src.cache = c
	sets := [][]int{{2, 0}, {1, 3}, {0, 1, 2}, {3}}
	got, err := c.Marginals(context.Background(), sets)
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range sets {
		if want := ds.MarginalTo(nil, s); !slices.Equal(got[i], want) {
			t.Errorf("marginal over %v = %v, want %v", s, got[i], want)
		}
	}
	// {2, 0} and {3} follow from the others: two sets are asked for.
	if want := []int{0, 1}; !slices.Equal(src.kept, want) {
		t.Errorf("marginals kept at each hand-over: %v, want %v", src.kept, want)
	}
}
