// Package adaptive holds what the select–measure–estimate mechanisms (AIM,
// MWEM+PGM) share: the model-capacity filter, maximal clique sets, parallel
// scoring, and the record of each candidate's last candidate round with the
// model snapshots that uncertainty quantification needs.
package adaptive

import (
	"fmt"
	"maps"
	"os"
	"slices"

	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/internal/marginal"
	"github.com/dpsql/dpsql/synth/pgm"
)

// Filter appends to dst the indexes i of the sets whose addition keeps the
// model within capacity: the junction tree of cliques ∪ {sets[i]} is at most
// limit MB, or sets[i] is contained in one of free (the current model's
// cliques). size is the junction-tree size of a clique list; cliques is not
// modified.
func Filter(dst []int, sets [][]int, cliques, free [][]int, limit float64, size func([][]int) float64) []int {
	return (&Sizer{Size: size}).Filter(dst, sets, cliques, free, limit)
}

// Sizer is Filter across rounds: a candidate's model size (the junction
// tree of the measured cliques and the candidate) depends only on the
// cliques, so it is computed again only after they change, and a round
// that measures inside a measured set sizes nothing. Size must be set; a
// Sizer serves one list of candidate sets.
type Sizer struct {
	Size func(cliques [][]int) float64

	cliques [][]int   // the cliques the sizes are for (a copy)
	sizes   []float64 // per candidate, valid where sized
	sized   []bool
}

// Filter is the package's Filter, with the sizes kept between calls.
func (z *Sizer) Filter(dst []int, sets [][]int, cliques, free [][]int, limit float64) []int {
	if len(z.sizes) != len(sets) {
		z.sizes, z.sized = make([]float64, len(sets)), make([]bool, len(sets))
	}
	if !slices.EqualFunc(z.cliques, cliques, slices.Equal[[]int]) {
		clear(z.sized)
		z.cliques = z.cliques[:0]
		for _, c := range cliques {
			z.cliques = append(z.cliques, slices.Clone(c))
		}
	}
	buf := make([][]int, len(cliques)+1)
	copy(buf, cliques)
	for i, s := range sets {
		if ContainedIn(s, free) {
			dst = append(dst, i)
			continue
		}
		if !z.sized[i] {
			buf[len(cliques)] = s
			z.sizes[i], z.sized[i] = z.Size(buf), true
		}
		if z.sizes[i] <= limit {
			dst = append(dst, i)
		}
	}
	return dst
}

// SizeOf returns candidate i's model size as the last Filter computed it;
// ok is false if it was not sized (it lay in one of free).
func (z *Sizer) SizeOf(i int) (size float64, ok bool) {
	if i < 0 || i >= len(z.sized) || !z.sized[i] {
		return 0, false
	}
	return z.sizes[i], true
}

// ContainedIn reports whether attrs is a subset of some set in sets.
func ContainedIn(attrs []int, sets [][]int) bool {
	for _, s := range sets {
		if marginal.Subset(attrs, s) {
			return true
		}
	}
	return false
}

// AddMaximal adds a copy of attrs to the list of maximal sets, dropping the
// sets it contains; it returns sets unchanged if attrs is contained in one of
// them. It may reuse sets' backing array.
func AddMaximal(sets [][]int, attrs []int) [][]int {
	if ContainedIn(attrs, sets) {
		return sets
	}
	out := sets[:0]
	for _, s := range sets {
		if !marginal.Subset(s, attrs) {
			out = append(out, s)
		}
	}
	return append(out, slices.Clone(attrs))
}

// Tracker records, for each of n candidates, the last round in which it was
// a candidate, and keeps the pre-measurement model of exactly those rounds.
type Tracker struct {
	last  []int
	refs  map[int]int        // round → candidates whose last round it is
	snaps map[int]*pgm.Model // round → p̂_{round−1}
	// With Compact: the candidates' sets, each round's measured set, and
	// the snapshots kept as marginals instead of models.
	sets     [][]int
	measured map[int][]int
	kept     map[int][]synth.SnapshotMarginal
	// With SpillTo: the earlier rounds' snapshots kept as models are
	// written to spill, and Load reads them back.
	spill   *os.File
	spilled map[int]*pgm.Spilled
}

// spillMB is the size from which SpillTo writes a snapshot model out: a
// smaller one is not worth a write (tests lower it). On a 30-attribute
// table whose models stay at 2–3 MB, the snapshots kept in memory under
// 4 MB were three models' arenas at the peak; from 1 MB that peak fell by
// 5 MB at no measured CPU (docs/aim-performance.md, Issue 19, fourteenth
// pass).
var spillMB = 1.0

// SpillTo makes the tracker write the model snapshots of earlier rounds
// of spillMB or more to f once they are no longer the latest (the
// latest is the model the next round starts from, in memory anyway):
// nothing reads them until the run is over, and an adaptive run at large
// ε keeps several, each a third to a whole of the final model. Load reads
// them back; f stays open until then. A snapshot that cannot be written
// is kept in memory.
func (tr *Tracker) SpillTo(f *os.File) { tr.spill = f }

// Load reads the spilled snapshots back into memory before Fill, in round
// order, and with Compact compacts every snapshot where that pays (as Fill
// would), one at a time, calling between (if non-nil) after each one it
// loads or compacts and within a compaction (see compact). At large ε a
// run spills a dozen snapshots, each up to a model: read back all at once
// and then compacted, they and the compactions' elimination tables were
// live together, and the collector's headroom doubled them, which set an
// AIM run's peak at its end; now one snapshot's work is live beside what
// was kept of the earlier ones, and between lets the caller collect its
// garbage. The snapshots and marginals kept are the same either way.
func (tr *Tracker) Load(between func()) error {
	rounds := slices.Sorted(maps.Keys(tr.spilled))
	for _, r := range rounds {
		m, err := tr.spilled[r].Load()
		if err != nil {
			return fmt.Errorf("snapshot of round %d: %w", r, err)
		}
		tr.snaps[r] = m
		delete(tr.spilled, r)
		if tr.sets != nil {
			tr.compact(r, between)
		}
		if between != nil {
			between()
		}
	}
	if tr.sets != nil {
		for _, r := range slices.Sorted(maps.Keys(tr.snaps)) {
			if tr.compact(r, between) && between != nil {
				between()
			}
		}
	}
	return nil
}

// NewTracker tracks n candidates.
func NewTracker(n int) *Tracker {
	return &Tracker{last: make([]int, n), refs: map[int]int{}, snaps: map[int]*pgm.Model{},
		measured: map[int][]int{}, kept: map[int][]synth.SnapshotMarginal{}, spilled: map[int]*pgm.Spilled{}}
}

// Compact makes the tracker keep a snapshot as the marginals the error
// bounds read of it once no later round can add to them: those of the
// candidates whose last round it is, and of the round's measured set
// (see Measured), when they are smaller than the model and cheap to
// compute (compactCost). A round's candidates that are not candidates of
// the next round (the capacity filter dropped them) keep its snapshot, so
// without this an adaptive run at large ε keeps a model for most rounds,
// each the size of the final one. sets[i] is candidate i's attribute set,
// ascending; the tracker keeps the slice.
func (tr *Tracker) Compact(sets [][]int) { tr.sets = sets }

// Measured records the set round t measured (ascending).
func (tr *Tracker) Measured(t int, attrs []int) { tr.measured[t] = attrs }

// compactCost bounds the inference a snapshot's compaction may sweep, in
// multiples of the snapshot model's cells: the candidates it serves left
// the eligible set for being too large to add to the model, and a few of
// them can take far longer to infer than the model is large.
const compactCost = 64

// Round records that candidates (indexes) were the candidates of round t,
// scored against model (p̂_{t−1}). Rounds must increase. The snapshot kept
// is model.Lean(): the bounds read only its marginals, and a snapshot that
// held the potentials too would keep them alive through the next fit, which
// starts from model and replaces it (peak memory). With Compact, the
// snapshots of earlier rounds, which no later round can serve, are then
// compacted where that pays.
func (tr *Tracker) Round(t int, candidates []int, model *pgm.Model) {
	for _, i := range candidates {
		if old := tr.last[i]; old != 0 {
			if tr.refs[old]--; tr.refs[old] == 0 {
				delete(tr.refs, old)
				delete(tr.snaps, old)
				delete(tr.kept, old)
				delete(tr.spilled, old)
			}
		}
		tr.last[i] = t
		tr.refs[t]++
	}
	if tr.sets != nil {
		for r := range tr.snaps {
			tr.compact(r, nil)
		}
	}
	if tr.spill != nil {
		for r, m := range tr.snaps {
			if m.Size() < spillMB {
				continue
			}
			if s, err := m.Spill(tr.spill); err == nil {
				tr.spilled[r] = s
				delete(tr.snaps, r)
			}
		}
	}
	if len(candidates) > 0 {
		tr.snaps[t] = model.Lean()
	}
}

// compact replaces the model of round r's snapshot by the marginals the
// bounds read of it, if they are fewer cells than the model and cheap,
// and reports whether it did. It calls between (if non-nil) after each
// marginal whose inference swept a sixteenth of the model or more: its
// elimination tables are garbage then (at ε = 10 on adult, compacting one
// 35 MB snapshot left 96 MB of them, on top of the final model).
func (tr *Tracker) compact(r int, between func()) bool {
	m := tr.snaps[r]
	meas, ok := tr.measured[r]
	if m == nil || !ok {
		return false
	}
	dom := m.Domain()
	limit := m.Size() * (1 << 20) / 8 // the model's cells
	sets := [][]int{meas}
	cells := float64(dom.Cells(meas))
	for i, l := range tr.last {
		if l != r || slices.ContainsFunc(sets, func(s []int) bool { return slices.Equal(s, tr.sets[i]) }) {
			continue
		}
		sets = append(sets, tr.sets[i])
		if cells += float64(dom.Cells(tr.sets[i])); cells >= limit {
			return false
		}
	}
	var cost float64
	costs := make([]float64, len(sets))
	for k, s := range sets {
		costs[k] = m.MarginalCost(s)
		if cost += costs[k]; cost > compactCost*limit {
			return false
		}
	}
	out := make([]synth.SnapshotMarginal, len(sets))
	for k, s := range sets {
		out[k] = synth.SnapshotMarginal{Attrs: slices.Clone(s), X: m.Marginal(s)}
		if between != nil && costs[k] >= limit/16 {
			between()
		}
	}
	tr.kept[r] = out
	delete(tr.snaps, r)
	return true
}

// Fill sets res.LastCandidate (attrs[i] is candidate i's attribute set) and
// res.Snapshots.
func (tr *Tracker) Fill(res *synth.Result, attrs [][]int) {
	res.LastCandidate = make([]synth.CandidateRound, len(attrs))
	for i, a := range attrs {
		res.LastCandidate[i] = synth.CandidateRound{Attrs: a, Round: tr.last[i]}
	}
	if tr.sets != nil {
		for r := range tr.snaps {
			tr.compact(r, nil)
		}
	}
	rounds := make([]int, 0, len(tr.snaps)+len(tr.kept))
	for t := range tr.snaps {
		rounds = append(rounds, t)
	}
	for t := range tr.kept {
		rounds = append(rounds, t)
	}
	slices.Sort(rounds)
	res.Snapshots = res.Snapshots[:0]
	for _, t := range rounds {
		res.Snapshots = append(res.Snapshots, synth.Snapshot{Round: t, Model: tr.snaps[t], Marginals: tr.kept[t]})
	}
}
