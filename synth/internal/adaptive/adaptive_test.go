package adaptive

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/pgm"
)

// TestFilterRespectsCapacity checks AIM step 5c with an independent size
// function: every admitted set either keeps the model within the limit or
// lies inside a current clique, and every rejected one does neither.
func TestFilterRespectsCapacity(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	sizes := []int{2, 3, 5, 7, 11, 13, 4, 6}
	// A stand-in for the junction-tree size: the sum of the cells of the
	// distinct cliques. Like the real one it grows with the clique set.
	size := func(cliques [][]int) float64 {
		seen := map[string]bool{}
		s := 0.0
		for _, c := range cliques {
			if seen[synth.Key(c)] {
				continue
			}
			seen[synth.Key(c)] = true
			n := 1
			for _, a := range c {
				n *= sizes[a]
			}
			s += float64(n)
		}
		return s
	}
	var sets [][]int
	for i := 0; i < 30; i++ {
		perm := rng.Perm(len(sizes))[:1+rng.IntN(3)]
		slices.Sort(perm)
		sets = append(sets, perm)
	}
	for trial := 0; trial < 300; trial++ {
		var cliques [][]int
		for i := 0; i < rng.IntN(4); i++ {
			cliques = AddMaximal(cliques, sets[rng.IntN(len(sets))])
		}
		limit := rng.Float64() * 1500
		admitted := Filter(nil, sets, cliques, cliques, limit, size)
		isAdmitted := map[int]bool{}
		for _, i := range admitted {
			isAdmitted[i] = true
		}
		for i, s := range sets {
			fits := size(append(slices.Clone(cliques), s)) <= limit
			inside := ContainedIn(s, cliques)
			if isAdmitted[i] != (fits || inside) {
				t.Fatalf("trial %d: set %v admitted=%v but fits=%v inside=%v (limit %v)",
					trial, s, isAdmitted[i], fits, inside, limit)
			}
			if isAdmitted[i] && !inside && size(append(slices.Clone(cliques), s)) > limit {
				t.Fatalf("trial %d: admitted %v breaks the limit", trial, s)
			}
		}
	}
}

// TestSizerKeepsSizes: one Sizer across rounds of growing (and in-place
// reused) clique lists admits what a fresh Filter admits, and sizes a
// candidate again only after the cliques change.
func TestSizerKeepsSizes(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	sizes := []int{2, 3, 5, 7, 11, 13}
	calls := 0
	size := func(cliques [][]int) float64 {
		calls++
		s := 0.0
		for _, c := range cliques {
			n := 1
			for _, a := range c {
				n *= sizes[a]
			}
			s += float64(n)
		}
		return s
	}
	var sets [][]int
	for range 20 {
		perm := rng.Perm(len(sizes))[:1+rng.IntN(3)]
		slices.Sort(perm)
		sets = append(sets, perm)
	}
	z := Sizer{Size: size}
	var cliques [][]int
	for round := range 40 {
		if round%3 == 0 {
			cliques = AddMaximal(cliques, sets[rng.IntN(len(sets))])
		}
		limit := rng.Float64() * 600
		want := Filter(nil, sets, cliques, cliques, limit, size)
		calls = 0
		got := z.Filter(nil, sets, cliques, cliques, limit)
		if !slices.Equal(got, want) {
			t.Fatalf("round %d: Sizer admits %v, Filter %v", round, got, want)
		}
		if round%3 != 0 && calls != 0 {
			t.Fatalf("round %d: cliques unchanged, but %d sizes computed again", round, calls)
		}
	}
}

func TestAddMaximal(t *testing.T) {
	var s [][]int
	for _, a := range [][]int{{1}, {1, 2}, {2}, {3}, {1, 2, 3}, {0, 4}} {
		s = AddMaximal(s, a)
	}
	want := [][]int{{1, 2, 3}, {0, 4}}
	if !slices.EqualFunc(s, want, slices.Equal[[]int]) {
		t.Errorf("maximal sets %v, want %v", s, want)
	}
}

// TestTracker checks that only the snapshots of some candidate's last
// round survive, against a direct recomputation.
func TestTracker(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	const n, rounds = 12, 40
	models := make([]*pgm.Model, rounds+1)
	for i := range models {
		models[i] = new(pgm.Model)
	}
	tr := NewTracker(n)
	last := make([]int, n)
	for t := 1; t <= rounds; t++ {
		var c []int
		for i := 0; i < n; i++ {
			// Later rounds drop candidates more often.
			if rng.Float64() > float64(t)/rounds*0.8 {
				c = append(c, i)
				last[i] = t
			}
		}
		tr.Round(t, c, models[t-1])
	}
	attrs := make([][]int, n)
	for i := range attrs {
		attrs[i] = []int{i}
	}
	var res synth.Result
	tr.Fill(&res, attrs)
	wantRounds := map[int]bool{}
	for i, cr := range res.LastCandidate {
		if cr.Round != last[i] {
			t.Errorf("candidate %d: last round %d, want %d", i, cr.Round, last[i])
		}
		if last[i] != 0 {
			wantRounds[last[i]] = true
		}
	}
	if len(res.Snapshots) != len(wantRounds) {
		t.Errorf("%d snapshots, want %d", len(res.Snapshots), len(wantRounds))
	}
	for k, s := range res.Snapshots {
		if !wantRounds[s.Round] || s.Model != models[s.Round-1] {
			t.Errorf("snapshot %d: round %d model mismatch or not a last round", k, s.Round)
		}
		if k > 0 && s.Round <= res.Snapshots[k-1].Round {
			t.Error("snapshots out of order")
		}
	}
}

// TestFilterWithModelSize repeats the capacity check with the engine's real
// junction-tree size: whatever Filter admits outside the current cliques
// keeps pgm.ModelSize within the limit.
func TestFilterWithModelSize(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	sizes := []int{30, 20, 50, 40, 10, 60, 25}
	names := []string{"a", "b", "c", "d", "e", "f", "g"}
	dom, err := pgm.NewDomain(names, sizes)
	if err != nil {
		t.Fatal(err)
	}
	size := func(c [][]int) float64 { return pgm.ModelSize(dom, c) }
	var sets [][]int
	for i := 0; i < 40; i++ {
		perm := rng.Perm(len(sizes))[:1+rng.IntN(3)]
		slices.Sort(perm)
		sets = append(sets, perm)
	}
	for trial := 0; trial < 100; trial++ {
		var cliques [][]int
		for i := 0; i < rng.IntN(6); i++ {
			cliques = AddMaximal(cliques, sets[rng.IntN(len(sets))])
		}
		limit := rng.Float64() * 2 // MB; 3-way sets here are up to 0.7 MB
		for _, i := range Filter(nil, sets, cliques, cliques, limit, size) {
			if ContainedIn(sets[i], cliques) {
				continue
			}
			if got := size(append(slices.Clone(cliques), sets[i])); got > limit {
				t.Fatalf("trial %d: admitted %v: model %v MB > limit %v", trial, sets[i], got, limit)
			}
		}
	}
}

// TestTrackerCompact: with Compact, a snapshot that no later round can serve
// is kept as the marginals of the candidates whose last round it is and of
// its round's measured set, when they are fewer cells than the model — and
// those marginals are the model's, bit for bit, so the error bounds read
// the same values; the other snapshots stay (lean) models.
func TestTrackerCompact(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	sizes := []int{6, 7, 8, 5, 6, 7}
	dom, err := pgm.NewDomain([]string{"a", "b", "c", "d", "e", "f"}, sizes)
	if err != nil {
		t.Fatal(err)
	}
	var sets [][]int // the candidates: every 1-, 2- and 3-way set
	for a := range sizes {
		sets = append(sets, []int{a})
		for b := a + 1; b < len(sizes); b++ {
			sets = append(sets, []int{a, b})
			for c := b + 1; c < len(sizes); c++ {
				sets = append(sets, []int{a, b, c})
			}
		}
	}
	const rounds = 30
	// p̂_0 … p̂_rounds: fits to a growing list of noisy measurements on a
	// chain of 3-way sets (models of about 800 cells).
	models := fitSequence(t, rng, dom, rounds+1, [][]int{{0, 1, 2}, {2, 3, 4}, {3, 4, 5}, {1, 2}, {4, 5}})
	tr := NewTracker(len(sets))
	tr.Compact(sets)
	last := make([]int, len(sets))
	measured := make([][]int, rounds+1)
	// Candidate i is a candidate for the last time in round retire[i] (as
	// the capacity filter drops candidates for good), and before that in
	// a random half of the rounds; a third stay to the last round.
	retire := make([]int, len(sets))
	for i := range retire {
		retire[i] = rounds
		if rng.IntN(3) > 0 {
			retire[i] = 1 + rng.IntN(rounds)
		}
	}
	for r := 1; r <= rounds; r++ {
		var c []int
		for i := range sets {
			if r == retire[i] || (r < retire[i] && rng.IntN(2) == 0) {
				c = append(c, i)
				last[i] = r
			}
		}
		tr.Round(r, c, models[r-1])
		measured[r] = sets[rng.IntN(len(sets))]
		tr.Measured(r, measured[r])
	}
	var res synth.Result
	tr.Fill(&res, sets)
	compacted, kept := 0, 0
	for _, s := range res.Snapshots {
		m := models[s.Round-1]
		need := [][]int{measured[s.Round]}
		for i, l := range last {
			if l == s.Round {
				need = append(need, sets[i])
			}
		}
		if s.Model != nil {
			kept++
			if s.Marginals != nil || s.Model.Size() != m.Size() {
				t.Errorf("round %d: snapshot holds a model and marginals, or another model", s.Round)
			}
		} else {
			compacted++
			cells := 0
			for _, x := range s.Marginals {
				cells += len(x.X)
			}
			if float64(cells) >= m.Size()*(1<<20)/8 {
				t.Errorf("round %d: compacted into %d cells, the model has %v", s.Round, cells, m.Size()*(1<<20)/8)
			}
		}
		for _, attrs := range need {
			x, ok := s.Marginal(attrs)
			if !ok || !slices.Equal(x, m.Marginal(attrs)) {
				t.Errorf("round %d: snapshot marginal %v missing or not the model's (%v)", s.Round, attrs, ok)
			}
		}
	}
	if compacted == 0 || kept == 0 {
		t.Errorf("%d snapshots compacted, %d kept as models: the case should have both", compacted, kept)
	}
	// heldMB counts what the snapshots hold: each model's marginals, each
	// compacted snapshot's cells.
	var held float64
	for _, s := range res.Snapshots {
		if s.Model != nil {
			held += s.Model.Size()
		}
		for _, x := range s.Marginals {
			held += float64(len(x.X)) * 8 / (1 << 20)
		}
	}
	if got := heldMB(tr); math.Abs(got-held) > 1e-9*held {
		t.Errorf("heldMB = %v MB, the snapshots hold %v MB", got, held)
	}
	t.Logf("%d snapshots: %d compacted, %d models", len(res.Snapshots), compacted, kept)
}

// TestTrackerSpill: a tracker that spills its earlier snapshots holds only
// the latest in memory between rounds, and once loaded fills the same
// snapshots as one that kept them: every marginal the bounds read is the
// same, bit for bit. With Compact, Load compacts each snapshot as it reads
// it back, calling between after each: what it holds then is what it keeps
// plus the snapshots in hand, never all of them at once.
func TestTrackerSpill(t *testing.T) {
	for _, compact := range []bool{false, true} {
		t.Run(fmt.Sprint("compact=", compact), func(t *testing.T) { testTrackerSpill(t, compact) })
	}
}

func testTrackerSpill(t *testing.T, compact bool) {
	defer func(mb float64) { spillMB = mb }(spillMB)
	spillMB = 0
	rng := rand.New(rand.NewPCG(13, 14))
	dom, err := pgm.NewDomain([]string{"a", "b", "c", "d", "e"}, []int{6, 7, 8, 5, 6})
	if err != nil {
		t.Fatal(err)
	}
	sets := [][]int{{0, 1, 2}, {1, 2, 3}, {2, 3, 4}, {0, 4}, {1, 3}, {0, 1, 2, 3}}
	const rounds = 12
	models := fitSequence(t, rng, dom, rounds, sets[:3])
	f, err := os.CreateTemp(t.TempDir(), "snapshots-*")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	kept, spilled := NewTracker(len(sets)), NewTracker(len(sets))
	spilled.SpillTo(f)
	if compact {
		kept.Compact(sets)
		spilled.Compact(sets)
	}
	// Candidate i's last round is i+1 for the first five. The last, larger
	// than the models, is a candidate in two rounds of three: the snapshot
	// before its absence serves it through that round, so it is spilled
	// whole, and only Load can compact it.
	var total, largest float64 // MB of every snapshot, of the largest
	for r := 1; r <= rounds; r++ {
		var c []int
		for i := range sets {
			if i < len(sets)-1 && i+1 >= r || i == len(sets)-1 && r%3 != 0 {
				c = append(c, i)
			}
		}
		for _, tr := range []*Tracker{kept, spilled} {
			tr.Measured(r, sets[r%3])
			tr.Round(r, c, models[r-1])
		}
		want := models[r-1].Size()
		if len(c) == 0 {
			want = 0 // a round without candidates keeps no snapshot
		}
		if got := heldMB(spilled); !compact && got != want {
			t.Fatalf("round %d: the spilling tracker holds %v MB, want the latest snapshot's %v", r, got, want)
		}
		total += models[r-1].Size()
		largest = max(largest, models[r-1].Size())
	}
	var calls int
	var peak float64
	left := len(spilled.spilled)
	spills := left
	if left < 2 {
		t.Fatalf("%d snapshots spilled: the case needs several", left)
	}
	if err := spilled.Load(func() {
		calls++
		peak = max(peak, heldMB(spilled))
		if n := len(spilled.spilled); n > left {
			t.Errorf("call %d: %d snapshots spilled, %d before", calls, n, left)
		} else {
			left = n
		}
	}); err != nil {
		t.Fatal(err)
	}
	if calls < spills {
		t.Errorf("between called %d times for %d spilled snapshots", calls, spills)
	}
	var a, b synth.Result
	kept.Fill(&a, sets)
	spilled.Fill(&b, sets)
	if len(a.Snapshots) != len(b.Snapshots) || len(a.Snapshots) < 3 {
		t.Fatalf("%d snapshots kept, %d after spilling", len(a.Snapshots), len(b.Snapshots))
	}
	if compact {
		// Held at any call: what is kept in the end, the snapshot being
		// compacted and the latest (in memory all along).
		if limit := heldMB(spilled) + 2*largest; peak > limit || limit >= total {
			t.Errorf("Load held up to %v MB, want at most %v (all snapshots: %v)", peak, limit, total)
		}
	}
	for k := range a.Snapshots {
		sa, sb := a.Snapshots[k], b.Snapshots[k]
		if sa.Round != sb.Round || (sa.Model == nil) != (sb.Model == nil) || len(sa.Marginals) != len(sb.Marginals) {
			t.Fatalf("snapshot %d: rounds %d and %d, kept as %v and %v", k, sa.Round, sb.Round, sa.Model == nil, sb.Model == nil)
		}
		for i, l := range a.LastCandidate {
			if l.Round != sa.Round {
				continue
			}
			x, okA := sa.Marginal(sets[i])
			y, okB := sb.Marginal(sets[i])
			if !okA || !okB || !slices.Equal(x, y) {
				t.Fatalf("round %d: marginal %v differs after spilling (%v, %v)", sa.Round, sets[i], okA, okB)
			}
		}
	}
}

// fitSequence returns n models over dom, the k-th fitted (briefly) to the
// first k+1 of a list of noisy measurements on sets drawn from choices:
// the p̂_0, p̂_1, … of an adaptive run.
func fitSequence(t *testing.T, rng *rand.Rand, dom *pgm.Domain, n int, choices [][]int) []*pgm.Model {
	t.Helper()
	var meas []pgm.Measurement
	models := make([]*pgm.Model, n)
	for i := range models {
		attrs := choices[rng.IntN(len(choices))]
		y := make([]float64, dom.Cells(attrs))
		for j := range y {
			y[j] = 10 * rng.Float64()
		}
		meas = append(meas, pgm.Measurement{Attrs: attrs, Y: y, Sigma: 1})
		var err error
		if models[i], err = pgm.Estimate(t.Context(), dom, meas, &pgm.EstimateOptions{Iters: 3}); err != nil {
			t.Fatal(err)
		}
	}
	return models
}

// heldMB is the memory tr's snapshots hold, in MB: the marginals of the
// rounds kept as models in memory (lean: their marginals only) and the
// compacted marginals of others; spilled snapshots hold none.
func heldMB(tr *Tracker) float64 {
	var mb float64
	for _, m := range tr.snaps {
		mb += m.Size()
	}
	for _, ms := range tr.kept {
		for _, m := range ms {
			mb += float64(len(m.X)) * 8 / (1 << 20)
		}
	}
	return mb
}
