package pgm

import (
	"math"
	"slices"

	"github.com/dpsql/dpsql/synth/pgm/internal/kernel"
)

// bpWork is the reusable workspace of belief propagation over one junction
// tree. It is not safe for concurrent use.
type bpWork struct {
	jt   *junctionTree
	team team
	// Per non-root clique v, over sep[v]: the upward message (log), the
	// per-cell shift used for it, the sum of shifted exponentials, the
	// message combined with those of nested siblings, the separator
	// marginal and the downward scale factor.
	msg, shift, acc, comb, marg, down [][]float64
	// red is the scratch of reductions.
	red []float64
	// upBlock[v] > 0 when v's upward reduction goes block by block
	// (kernel.Reduction.Blocks) with blocks of at most maxUpBlock cells;
	// upInner[v] is the result cells per block.
	upBlock, upInner []int
	// rootScale holds the root's chunk scales between the passes.
	rootScale [maxParts]float64
	// Set by bind: the downward pass's piecewise reductions, whether a
	// child's separator marginal is among them, and the objective whose
	// projections are.
	fin        []finPlan
	kidFused   []bool
	obj        *objective
	finScratch []float64 // scratch of the finItems' rest steps
	// up[v], set by bind on one core, streams v's upward reduction
	// (upStreamed); upScratch is the scratch of its rest steps.
	up        []*upStream
	upScratch []float64
	interLeft int // cells of intermediate tables bind may still allocate
	// lazy[v], set by bind, leaves clique v's marginal unscaled in p
	// (finalize reduces a scaled copy of each piece) until materialize;
	// tmp holds each chunk's piece.
	lazy []bool
	tmp  [maxParts][]float64
}

// fuseLazy enables lazy cliques (bind); tests turn it off to compare.
var fuseLazy = true

// fuseDown enables the downward pass's piecewise reductions (bind); tests
// turn it off to compare with the separate sweeps.
var fuseDown = true

// maxUpBlock bounds the blocks that the upward pass reduces while in cache
// (256 KB): larger ones go through upward's three sweeps. Tests lower it.
var maxUpBlock = 1 << 15

// fuseUp enables the block-by-block upward pass; tests turn it off to
// compare with upward's sweeps.
var fuseUp = true

func newBPWork(jt *junctionTree) *bpWork {
	k := len(jt.cliques)
	w := &bpWork{jt: jt}
	bufs := []*[][]float64{&w.msg, &w.shift, &w.acc, &w.comb, &w.marg, &w.down}
	for _, b := range bufs {
		*b = make([][]float64, k)
	}
	for v := range k {
		if jt.parent[v] < 0 {
			continue
		}
		n := jt.dom.Cells(jt.sep[v])
		buf := make([]float64, len(bufs)*n)
		for i, b := range bufs {
			(*b)[v] = buf[i*n : (i+1)*n : (i+1)*n]
		}
	}
	w.red = make([]float64, jt.maxScratch)
	w.upBlock, w.upInner = make([]int, k), make([]int, k)
	for v := range k {
		if jt.parent[v] < 0 || !fuseUp {
			continue
		}
		if block, inner, ok := jt.upRed[v].Blocks(); ok && block <= maxUpBlock {
			w.upBlock[v], w.upInner[v] = block, inner
		}
	}
	return w
}

// run computes the clique marginals of the model exp(Σ_C theta_C) / Z as
// probabilities (each clique's block of p sums to 1) and returns log Z. theta
// and p are arenas laid out by the junction tree. It does not allocate
// beyond goroutine hand-offs.
//
// Upward pass (log space, per-separator-cell max shift): the belief of v is
// theta_v plus its children's messages; its message to the parent is the
// logsumexp of the belief over v \ sep(v), and exp(belief − shift) is kept in
// p_v. Downward pass (probabilities): the root's marginal is exp(belief −
// log Z); a child's marginal is its parent's marginal projected on the
// separator times the child's conditional given the separator, which is
// p_v / acc. A child whose separator lies inside a sibling's has its message
// folded into the sibling's, and its separator marginal projected from the
// sibling's, so the parent's table is swept once per distinct separator.
func (w *bpWork) run(p, theta []float64) float64 { return w.runStep(p, theta, 0, nil) }

// runStep is run at the potentials theta + a·dir without forming them: each
// clique's belief starts from theta_v + a·dir_v, computed as kernel.AxpyTo
// does, so the result is run's at the arena AxpyTo would give, bit for bit.
// A line search thereby saves a sweep over the arena per trial step. A nil
// dir means theta itself.
func (w *bpWork) runStep(p, theta []float64, a float64, dir []float64) float64 {
	return w.runFused(p, theta, a, dir, nil)
}

// fuseCells is the length of the pieces in which runFused prepares a
// chunk's beliefs: small enough that the potentials, the belief and the
// children's messages stay in L1 between the kernels that read them.
var fuseCells = 2048

// runFused is runStep, or with obj non-nil run at the potentials of obj's
// trial step (objective.initSteps): each clique's belief starts from
// theta_v plus obj's trial tables broadcast, formed piece by piece while
// the piece is in cache (potentialChunk) in the arithmetic that
// objective.applySteps later writes into theta, so the result is run's at
// those potentials, bit for bit. A mirror-descent iteration then streams
// the starting potentials and writes the beliefs: no gradient arena, no
// write of θ (a and dir are unused).
func (w *bpWork) runFused(p, theta []float64, a float64, dir []float64, obj *objective) float64 {
	jt := w.jt
	if len(p) != jt.total || (len(theta) != jt.total && (obj == nil || theta != nil)) || (dir != nil && len(dir) != jt.total) {
		panic("pgm: arena length mismatch")
	}
	var logZ float64
	for _, v := range jt.post {
		b := jt.block(p, v)
		var th []float64 // nil: no starting potentials (obj's step tables alone)
		if theta != nil {
			th = jt.block(theta, v)
		}
		var dv []float64
		if dir != nil {
			dv = jt.block(dir, v)
		}
		kids := jt.sorted[v]
		for _, c := range kids {
			copy(w.comb[c], w.msg[c])
		}
		for _, c := range slices.Backward(kids) {
			if n := jt.nest[c]; n >= 0 {
				kernel.Expand(w.comb[n], w.comb[c], jt.nestMap[c])
			}
		}
		root := jt.parent[v] < 0
		// With upBlock > 0 the upward message is computed block by block
		// while each is in cache (upPiece) instead of by three sweeps.
		upBlock := w.upBlock[v]
		// With up non-nil (one core, bind) the upward maximum is taken
		// by streaming rows while the belief is built, and the
		// exponentials and sums in one more sweep (upStream): two sweeps
		// instead of four.
		var up *upStream
		if upBlock == 0 && w.up != nil {
			up = w.up[v]
		}
		align, piece := 1, 0 // piece 0: the chunk at once
		switch {
		case upBlock > 0:
			align, piece = upBlock, max(1, fuseCells/upBlock)*upBlock
		case obj != nil || up != nil:
			piece = fuseCells
		}
		var partMax, partSum [maxParts]float64
		w.team.run(len(b), align, func(lo, hi, part int) {
			step := piece
			if step == 0 {
				step = max(1, hi-lo)
			}
			for s := lo; s < hi; s += step {
				e := min(s+step, hi)
				switch {
				case obj != nil:
					// The potentials, the belief and the children's
					// messages while the piece is in L1.
					var base []float64
					if th != nil {
						base = th[s:e]
					}
					obj.potentialChunk(v, b[s:e], base, s)
				case dv == nil:
					copy(b[s:e], th[s:e])
				default:
					kernel.AxpyTo(b[s:e], th[s:e], a, dv[s:e])
				}
				w.expandKids(v, b[s:e], s)
				switch {
				case upBlock > 0:
					w.upPiece(v, b[s:e], s)
				case up != nil:
					up.first.MaxStream(up.maxTo(w.shift[v]), b[s:e], s)
				}
			}
			if root {
				// The root is exponentiated by chunks while they are in
				// cache, each shifted by its own maximum; normalizeRoot
				// rescales the chunks to a common one.
				partMax[part] = kernel.Max(b[lo:hi])
				partSum[part] = kernel.ExpShiftTotal(b[lo:hi], partMax[part])
			}
		})
		switch {
		case root:
			k := w.team.parts(len(b))
			logZ = w.rootScales(partMax[:k], partSum[:k])
		case upBlock > 0:
			w.message(v)
		case up != nil:
			w.upStreamed(v, b, up)
		default:
			w.upward(v, b)
		}
	}
	for _, v := range slices.Backward(jt.post) {
		// v's marginal is final once scaled (by the root's chunk scales,
		// or by its separator's marginal over the upward sums); the
		// tables that fin[v] plans are reduced from it piece by piece.
		w.finalize(v, p)
		pv := jt.block(p, v)
		for _, c := range jt.sorted[v] {
			m := w.marg[c]
			switch n := jt.nest[c]; {
			case n >= 0:
				clear(m)
				kernel.Project(m, w.marg[n], jt.nestMap[c])
			case w.kidFused == nil || !w.kidFused[c]:
				jt.downRed[c].SumPar(m, pv, w.red, w.team.split)
			}
			d, acc := w.down[c], w.acc[c]
			for s := range d {
				if acc[s] > 0 {
					d[s] = m[s] / acc[s]
				} else {
					d[s] = 0
				}
			}
		}
	}
	return logZ
}

// finPlan is what is reduced from a clique's final marginal piece by piece
// (see finalize); pieces are whole multiples of align cells.
type finPlan struct {
	align int
	items []finItem
}

// finItem is one table reduced piece by piece: a child's separator
// marginal (kid ≥ 0) or the projection of objective measurement meas. first
// is the reduction (nil: a copy) or its first step, rest the steps after
// it (nil if none), run over inter once every piece has been reduced. A
// narrow first step (kernel.Reduction.Narrow) keeps its accumulators in
// narrow between the pieces.
type finItem struct {
	kid, meas   int
	first, rest *kernel.Reduction
	inter       []float64
	narrow      []float64
}

// maxInter bounds the intermediate table of one multi-step reduction that
// is run piece by piece (2 MB; takeInter bounds them all).
const maxInter = 1 << 18

// downBlocks × maxUpBlock bounds the blocks that the downward pass reduces
// piece by piece. Its pieces are only scaled and reduced, so they may be
// larger than the upward pass's, which also build and exponentiate the
// belief: on adult at ε = 10 the root's largest projection has blocks of
// 35 640 cells, and reduced from the whole clique it cost a sweep over
// 41 MB and kept the clique from being lazy.
const downBlocks = 2

// takeInter reserves n cells of intermediate tables if the budget of the
// bound work allows: all of them take at most a sixteenth of the model and
// 8 MB, the fits' memory being the other limit on AIM's models.
func (w *bpWork) takeInter(n int) bool {
	if n > maxInter || n > w.interLeft {
		return false
	}
	w.interLeft -= n
	return true
}

// pieceAlign returns the piece alignment at which r's first step can reduce
// a table piece by piece, or 0, with the split of r (see
// kernel.Reduction.Split): whole blocks (Blocks) when they are small, else
// pieces of any length (align 1, SumStream or SumNarrow) or whole rows
// (Rows). Streams and rows must come in order, so only without a pool (one
// core): chunks then run in order.
func (w *bpWork) pieceAlign(r *kernel.Reduction) (align int, it finItem) {
	first, rest := r.Split()
	if rest != nil && first.Out() > maxInter {
		return 0, it
	}
	narrow := 0
	if block, _, ok := first.Blocks(); ok && block <= downBlocks*maxUpBlock {
		align = block
	} else if w.team.p == nil {
		if first.Streams() {
			align = 1
		} else if n, ok := first.Narrow(); ok {
			align, narrow = 1, n
		} else if inner, ok := first.Rows(); ok && inner <= maxUpBlock {
			align = inner
		}
	}
	if align == 0 || (rest != nil && !w.takeInter(first.Out())) {
		return 0, it
	}
	it = finItem{kid: -1, meas: -1, first: first, rest: rest}
	if narrow > 0 {
		it.narrow = make([]float64, narrow)
	}
	return align, it
}

// reducePiece reduces b, the cells [lo, lo+len(b)) of a table, into dst
// with the single-step r as pieceAlign allowed (a narrow one goes through
// finItem.narrow).
func reducePiece(r *kernel.Reduction, dst, b []float64, lo int) {
	if block, inner, ok := r.Blocks(); ok && len(b)%block == 0 && lo%block == 0 {
		r.SumBlocks(dst[lo/block*inner:(lo+len(b))/block*inner], b)
		return
	}
	if r.Streams() {
		r.SumStream(dst, b, lo)
		return
	}
	r.SumRows(dst, b, lo == 0)
}

// bind plans the reductions that the downward pass does piece by piece:
// children's separator marginals and, when obj is non-nil, the
// projections of obj's measurements taken from cliques, which obj's
// valueBP then skips. Call it once the team is set. The alignments of one
// clique's reductions are suffix products of its axis sizes, so they divide
// one another and the largest serves all.
func (w *bpWork) bind(obj *objective) {
	jt := w.jt
	w.obj = obj
	w.kidFused = make([]bool, len(jt.cliques))
	w.fin = make([]finPlan, len(jt.cliques))
	w.interLeft = min(1<<20, jt.total/16)
	w.bindUp()
	if !fuseDown {
		return
	}
	scratch := 0
	add := func(v int, it finItem, a int) {
		if it.rest != nil {
			it.inter = make([]float64, it.first.Out())
			scratch = max(scratch, it.rest.Scratch())
		}
		f := &w.fin[v]
		f.align = max(f.align, a)
		f.items = append(f.items, it)
	}
	for v := range jt.cliques {
		for _, c := range jt.sorted[v] {
			if jt.nest[c] >= 0 {
				continue
			}
			if a, it := w.pieceAlign(jt.downRed[c]); a > 0 {
				it.kid = c
				add(v, it, a)
				w.kidFused[c] = true
			}
		}
	}
	if obj != nil {
		for i := range obj.meas {
			m := &obj.meas[i]
			if m.src >= 0 {
				continue
			}
			if m.red == nil {
				add(m.clique, finItem{kid: -1, meas: i}, 1)
				m.byBP = true
			} else if a, it := w.pieceAlign(m.red); a > 0 {
				it.meas = i
				add(m.clique, it, a)
				m.byBP = true
			}
		}
	}
	w.finScratch = make([]float64, scratch)
	if obj == nil || !fuseLazy {
		return
	}
	// A clique is lazy when the downward pass reduces everything read
	// from its marginal: its non-nested children's separator marginals
	// and the measurements projected from it.
	w.lazy = make([]bool, len(jt.cliques))
	for v := range jt.cliques {
		w.lazy[v] = true
		for _, c := range jt.sorted[v] {
			if jt.nest[c] < 0 && !w.kidFused[c] {
				w.lazy[v] = false
			}
		}
	}
	for i := range obj.meas {
		if m := &obj.meas[i]; m.src < 0 && !m.byBP {
			w.lazy[m.clique] = false
		}
	}
	piece := 0
	for v, f := range w.fin {
		if w.lazy[v] && f.align > 0 {
			piece = max(piece, max(1, fuseCells/f.align)*f.align)
		}
	}
	w.tmp = w.partBuffers(piece)
}

// partBuffers returns a scratch buffer of n cells for each chunk of a team
// run; on one core the chunks run in turn and share one.
func (w *bpWork) partBuffers(n int) (bufs [maxParts][]float64) {
	for i := range bufs {
		if i == 0 || w.team.p != nil {
			bufs[i] = make([]float64, n)
		} else {
			bufs[i] = bufs[0]
		}
	}
	return bufs
}

// bindUp plans the upward reductions streamed by upStreamed; streaming
// the maximum needs the cliques' pieces in order, so only on one core.
func (w *bpWork) bindUp() {
	jt := w.jt
	if w.team.p != nil || !fuseUp {
		return
	}
	w.up = make([]*upStream, len(jt.cliques))
	upScratch := 0
	for v := range jt.cliques {
		if jt.parent[v] < 0 || w.upBlock[v] > 0 {
			continue
		}
		first, rest := jt.upRed[v].Split()
		if !first.Streams() || (rest != nil && !w.takeInter(first.Out())) {
			continue
		}
		u := &upStream{first: first, rest: rest}
		if rest != nil {
			u.inter = make([]float64, first.Out())
			upScratch = max(upScratch, rest.Scratch())
		}
		w.up[v] = u
	}
	w.upScratch = make([]float64, upScratch)
}

// finalize scales clique v's block of p into its marginal and reduces the
// tables of fin[v] from it piece by piece.
func (w *bpWork) finalize(v int, p []float64) {
	jt := w.jt
	b := jt.block(p, v)
	root := jt.parent[v] < 0
	// scale writes the marginal's cells [lo, lo+len(x)) into x, which
	// holds their unscaled values.
	scale := func(x []float64, lo int) {
		if !root {
			jt.upMap[v].Scale(x, w.down[v], lo)
			return
		}
		// The root's chunks of the upward pass each have their scale.
		k := w.team.parts(len(b))
		step := len(b) / k
		for hi := lo + len(x); lo < hi; {
			c := min(lo/step, k-1)
			e := hi
			if c < k-1 {
				e = min(hi, (c+1)*step)
			}
			kernel.ScaleAll(x[:e-lo], w.rootScale[c])
			x, lo = x[e-lo:], e
		}
	}
	var f finPlan
	if w.fin != nil {
		f = w.fin[v]
	}
	lazy := w.lazy != nil && w.lazy[v]
	if f.align == 0 {
		if !lazy {
			w.team.run(len(b), 1, func(lo, hi, _ int) { scale(b[lo:hi], lo) })
		}
		return
	}
	// dst returns where item it's first step writes.
	dst := func(it *finItem) []float64 {
		switch {
		case it.rest != nil:
			return it.inter
		case it.kid >= 0:
			return w.marg[it.kid]
		}
		return w.obj.meas[it.meas].x
	}
	for i := range f.items {
		clear(f.items[i].narrow)
	}
	piece := max(1, fuseCells/f.align) * f.align
	w.team.run(len(b), f.align, func(lo, hi, part int) {
		for s := lo; s < hi; s += piece {
			e := min(s+piece, hi)
			x := b[s:e]
			if lazy {
				// Nothing else reads the marginal before the next
				// propagation overwrites it: scale a copy.
				x = w.tmp[part][:e-s]
				copy(x, b[s:e])
			}
			scale(x, s)
			for i := range f.items {
				it := &f.items[i]
				switch {
				case it.first == nil:
					copy(dst(it)[s:e], x)
				case it.narrow != nil:
					it.first.SumNarrow(it.narrow, x, s)
				default:
					reducePiece(it.first, dst(it), x, s)
				}
			}
		}
	})
	for i := range f.items {
		it := &f.items[i]
		if it.narrow != nil {
			it.first.FinishNarrow(dst(it), it.narrow)
		}
		if it.rest != nil {
			var to []float64
			if it.kid >= 0 {
				to = w.marg[it.kid]
			} else {
				to = w.obj.meas[it.meas].x
			}
			it.rest.Sum(to, it.inter, w.finScratch)
		}
	}
}

// materialize scales the blocks of p that the last propagation left
// unscaled (lazy cliques), so that p holds its marginals, bit for bit
// those a propagation without lazy cliques writes.
func (w *bpWork) materialize(p []float64) {
	jt := w.jt
	for v, lazy := range w.lazy {
		if !lazy {
			continue
		}
		b := jt.block(p, v)
		if jt.parent[v] >= 0 {
			w.team.run(len(b), 1, func(lo, hi, _ int) { jt.upMap[v].Scale(b[lo:hi], w.down[v], lo) })
			continue
		}
		w.team.run(len(b), 1, func(lo, hi, c int) { kernel.ScaleAll(b[lo:hi], w.rootScale[c]) })
	}
}

// expandKids adds into b, the cells [lo, lo+len(b)) of clique v's belief,
// the messages of v's children whose separators are not nested in a
// sibling's (those are folded into the sibling's message).
func (w *bpWork) expandKids(v int, b []float64, lo int) {
	jt := w.jt
	for _, c := range jt.sorted[v] {
		if jt.nest[c] < 0 {
			jt.downMap[c].Expand(b, w.comb[c], lo)
		}
	}
}

// rootScales sets the scales that turn the root's chunks, chunk c holding
// exp(belief − chunkMax[c]) and summing to chunkSum[c], into probabilities
// (finalize applies them), and returns log Z.
func (w *bpWork) rootScales(chunkMax, chunkSum []float64) float64 {
	mx := math.Inf(-1)
	for _, x := range chunkMax {
		mx = math.Max(mx, x)
	}
	if math.IsInf(mx, -1) { // every cell has probability 0 (b is all 0)
		for c := range chunkMax {
			w.rootScale[c] = 1
		}
		return mx
	}
	var total float64
	for c, x := range chunkMax {
		w.rootScale[c] = 0
		if !math.IsInf(x, -1) {
			w.rootScale[c] = math.Exp(x - mx)
			total += chunkSum[c] * w.rootScale[c]
		}
	}
	for c := range chunkMax {
		w.rootScale[c] /= total
	}
	return mx + math.Log(total)
}

// upward computes the message of non-root clique v from its belief b, and
// leaves exp(b − shift) in b.
func (w *bpWork) upward(v int, b []float64) {
	jt := w.jt
	shift, acc, idx := w.shift[v], w.acc[v], jt.upMap[v]
	jt.upRed[v].MaxPar(shift, b, w.red, w.team.split)
	w.team.run(len(b), 1, func(lo, hi, _ int) {
		idx.ExpShiftGather(b[lo:hi], shift, lo)
	})
	jt.upRed[v].SumPar(acc, b, w.red, w.team.split)
	w.message(v)
}

// upPiece is upward on the whole blocks (kernel.Reduction.Blocks) of
// clique v's belief that b holds, from cell lo: each separator cell's shift
// and sum come from one block, so the piece is reduced, exponentiated and
// summed while in cache, with upward's arithmetic bit for bit.
func (w *bpWork) upPiece(v int, b []float64, lo int) {
	jt := w.jt
	block, inner := w.upBlock[v], w.upInner[v]
	o0, o1 := lo/block*inner, (lo+len(b))/block*inner
	jt.upRed[v].MaxBlocks(w.shift[v][o0:o1], b)
	jt.upMap[v].ExpShiftGather(b, w.shift[v], lo)
	jt.upRed[v].SumBlocks(w.acc[v][o0:o1], b)
}

// upStream is the upward reduction of a clique whose first step streams
// rows (kernel.Reduction.Streams): first, and the steps after it (rest, or
// nil) over inter.
type upStream struct {
	first, rest *kernel.Reduction
	inter       []float64
}

// maxTo returns where the first step's maximum goes: shift, or inter.
func (u *upStream) maxTo(shift []float64) []float64 {
	if u.rest != nil {
		return u.inter
	}
	return shift
}

// upStreamed finishes upward for clique v whose belief b has been
// streamed through u.first.MaxStream: the rest of the maximum, then one
// sweep that exponentiates and streams the sums, then the message; upward's
// arithmetic bit for bit.
func (w *bpWork) upStreamed(v int, b []float64, u *upStream) {
	jt := w.jt
	shift, acc, idx := w.shift[v], w.acc[v], jt.upMap[v]
	sumTo := acc
	if u.rest != nil {
		u.rest.Max(shift, u.inter, w.upScratch)
		sumTo = u.inter
	}
	for s := 0; s < len(b); s += fuseCells {
		e := min(s+fuseCells, len(b))
		idx.ExpShiftGather(b[s:e], shift, s)
		u.first.SumStream(sumTo, b[s:e], s)
	}
	if u.rest != nil {
		u.rest.Sum(acc, u.inter, w.upScratch)
	}
	w.message(v)
}

// message sets clique v's upward message from its shifts and sums.
func (w *bpWork) message(v int) {
	shift, acc, m := w.shift[v], w.acc[v], w.msg[v]
	for s := range m {
		if math.IsInf(shift[s], -1) {
			m[s] = math.Inf(-1)
		} else {
			m[s] = shift[s] + math.Log(acc[s])
		}
	}
}
