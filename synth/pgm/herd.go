package pgm

import (
	"math"
	"math/rand/v2"
	"slices"
)

// herder deals a group's values to its rows so that, for every key
// attribute (an attribute generated earlier that the model makes
// independent of the one being dealt, given the group), the rows with each
// value of the key receive each value in proportion to its count, within a
// few records: kernel herding on the two-way counts.
//
// The stratified deal (deal) achieves that for the first sort key only;
// the rows of one value of a later key lie in many short runs, each off by
// a record or so, and their errors add up. On marginals that span cliques
// (a candidate whose attributes no clique holds together), the rows then
// differed from the model's answers by 3.4 times what rounding to whole
// records requires (adult, ε = 1), and herding over all the keys removed a
// third of the rows' extra error; on wide30 a third too (0.0816 → 0.0756)
// (docs/aim-performance.md, "Issue 19, twenty-second pass").
//
// Each row, taken in stratification order, receives the value v (among
// those with records left to deal) of the largest total deficit
//
//	Σ_k (seen_k(u_k) · q_v/g − dealt_k(u_k, v)) + (t · q_v/g − used_v),
//
// where u_k is the row's value of key k, seen_k(u) the group's rows so far
// with that value, dealt_k(u, v) those of them that received v, q_v the
// group's count of v, g its size and t the rows dealt so far (the last term
// is a key that every row shares). Scores are compared as integers
// (multiplied by g). The counts of the group's values are exactly q, as
// with deal; ties go to the first value in a random order.
type herder struct {
	na   int32
	keys []int // the key attributes
	// rowwise, unless nil, holds the generated values row by row (stride
	// values a row), so that a row's keys are one or two cache lines: read
	// from the columns cols, in stratification order, they miss the
	// cache once per key and row on a wide table (BenchmarkSynthesizeWide:
	// 1.63 s from the columns, 1.28–1.39 s row-wise).
	cols    [][]uint16
	rowwise []uint16
	stride  int
	touch   uint16 // what deal's prefetching loads sum to (kept, unused)
	// dealt holds dealt_k(u, ·) as a row of na counts at rowAt[k] + u·na,
	// seen holds seen_k(u) at seenAt[k] + u; both are zero outside a
	// group's deal, which resets the slots it touched (touched: pairs of a
	// seen index and a dealt offset).
	dealt, seen   []int32
	rowAt, seenAt []int32
	touched       []int32
	deficit       []int32
	used, q       []int64 // per value: records dealt, and to deal
	open          []int32 // the values with records left to deal
	at, seenIdx   []int32 // a chunk's offsets in dealt and seen, row-major
}

// herdKeys is the most keys a herding balances: on wide30 (ε = 1, two
// models paired) its rows' error was 0.0774 with all 29, 0.0776 with 16
// and 0.0788 with 8, and each key costs a row of counts per record.
const herdKeys = 16

// herdCells bounds the keys' counts (dealt): keys whose counts would pass
// it are left out, so that attributes of tens of thousands of values cost
// no more than 16 MB.
const herdCells = 1 << 22

// herdRowCells bounds the counts a row reads (keys × values): an attribute
// of more values than herdKeys × herdRowCells allows is herded on fewer
// keys, and one of more than herdRowCells is dealt (deal), so that a row
// costs at most a few microseconds whatever the domain. Adult's largest
// attribute (100 values) and wide tables keep all 16 keys.
const herdRowCells = 2048

// reset prepares h for the groups of an attribute with na values, with
// keys (attributes already generated, most wanted first) whose values cols
// holds, and rowwise too unless nil: row r's value of attribute b at
// rowwise[r·stride + b]. It reports whether any key is kept (herdKeys,
// herdCells, herdRowCells); without one the groups are dealt as by deal.
func (h *herder) reset(cols [][]uint16, rowwise []uint16, stride int, keys []int, dom *Domain, na, rows int) bool {
	h.na, h.cols, h.rowwise, h.stride = int32(na), cols, rowwise, stride
	h.keys, h.rowAt, h.seenAt = h.keys[:0], h.rowAt[:0], h.seenAt[:0]
	var dealt, seen int
	most := min(herdKeys, herdRowCells/max(na, 1))
	for _, k := range keys {
		if len(h.keys) == most {
			break
		}
		if dealt+dom.sizes[k]*na > herdCells {
			continue
		}
		h.keys = append(h.keys, k)
		h.rowAt = append(h.rowAt, int32(dealt))
		h.seenAt = append(h.seenAt, int32(seen))
		dealt += dom.sizes[k] * na
		seen += dom.sizes[k]
	}
	if len(h.keys) == 0 {
		return false
	}
	h.dealt = grown(h.dealt, dealt)
	h.seen = grown(h.seen, seen)
	h.deficit = slices.Grow(h.deficit[:0], na)[:na]
	h.used = slices.Grow(h.used[:0], na)[:na]
	h.q = slices.Grow(h.q[:0], na)[:na]
	h.open = slices.Grow(h.open[:0], na)
	n := min(herdChunk, rows) * len(h.keys)
	h.at = slices.Grow(h.at[:0], n)[:n]
	h.seenIdx = slices.Grow(h.seenIdx[:0], n)[:n]
	return true
}

// fits reports whether deal's integer scores stay within int64 for a
// group of g rows (up to g·g·(keys + 1)).
func (h *herder) fits(g int) bool {
	return float64(g)*float64(g)*float64(len(h.keys)+1) < 1<<62
}

// grown returns s resized to n zeroed entries, reusing its array.
func grown(s []int32, n int) []int32 {
	s = slices.Grow(s[:0], n)[:n]
	clear(s)
	return s
}

// herdChunk is how many rows' offsets deal gathers at once.
const herdChunk = 1024

// deal writes into col the values of the group's rows (in stratification
// order): counts[v] rows receive v.
func (h *herder) deal(col []uint16, rows []int32, counts []int, rng *rand.Rand) {
	na, nk := int(h.na), len(h.keys)
	g := int64(len(rows))
	clear(h.used)
	// The values with records left to deal, in a random order (ties go to
	// the first), and their counts.
	open := h.open[:0]
	q := h.q[:na]
	for v, c := range counts {
		q[v] = int64(c)
		if c > 0 {
			open = append(open, int32(v))
		}
	}
	rng.Shuffle(len(open), func(i, j int) { open[i], open[j] = open[j], open[i] })
	deficit := h.deficit[:na]
	for lo := 0; lo < len(rows); lo += herdChunk {
		chunk := rows[lo:min(lo+herdChunk, len(rows))]
		// at[t·nk + k] is the offset of dealt_k(u_k, ·) for chunk row t,
		// seenAt its seen_k(u_k).
		at := h.at[:len(chunk)*nk]
		seenAt := h.seenIdx[:len(chunk)*nk]
		h.gather(at, seenAt, chunk)
		for t, r := range chunk {
			rowAt, rowSeen := at[t*nk:(t+1)*nk], seenAt[t*nk:(t+1)*nk]
			// seen = Σ_k seen_k(u_k) + rows dealt; deficit[v] + used_v =
			// Σ_k dealt_k(u_k, v) + used_v.
			seen := int64(lo + t)
			for _, s := range rowSeen {
				seen += int64(h.seen[s])
			}
			if 2*len(open) < na {
				// Few values left: their deficits only.
				for _, v := range open {
					deficit[v] = 0
				}
				for _, a := range rowAt {
					row := h.dealt[a : a+h.na]
					for _, v := range open {
						deficit[v] += row[v]
					}
				}
			} else {
				clear(deficit)
				for _, a := range rowAt {
					addTo(deficit, h.dealt[a:a+h.na])
				}
			}
			best, i := int64(math.MinInt64), 0
			for j, v := range open {
				if s := seen*q[v] - g*(h.used[v]+int64(deficit[v])); s > best {
					best, i = s, j
				}
			}
			pick := open[i]
			if h.used[pick]+1 == q[pick] {
				// Its last record: the value leaves the list.
				open[i] = open[len(open)-1]
				open = open[:len(open)-1]
			}
			col[r] = uint16(pick)
			h.used[pick]++
			for k, a := range rowAt {
				s := rowSeen[k]
				if h.seen[s] == 0 {
					h.touched = append(h.touched, s, a)
				}
				h.seen[s]++
				h.dealt[a+int32(pick)]++
			}
		}
	}
	for i := 0; i < len(h.touched); i += 2 {
		h.seen[h.touched[i]] = 0
		a := h.touched[i+1]
		clear(h.dealt[a : a+h.na])
	}
	h.touched = h.touched[:0]
}

// gather writes the offsets of the chunk's rows (see deal).
func (h *herder) gather(at, seenAt []int32, chunk []int32) {
	nk := len(h.keys)
	if h.rowwise == nil {
		for k, b := range h.keys {
			col, rowAt, seenBase := h.cols[b], h.rowAt[k], h.seenAt[k]
			for t, r := range chunk {
				u := int32(col[r])
				at[t*nk+k] = rowAt + u*h.na
				seenAt[t*nk+k] = seenBase + u
			}
		}
		return
	}
	// Touch every row's values first: independent loads, whose cache
	// misses overlap, where the gather's inner loop let one or two at a
	// time be outstanding.
	var touch uint16
	for _, r := range chunk {
		vals := h.rowwise[int(r)*h.stride:][:h.stride]
		touch += vals[0] + vals[h.stride-1]
	}
	h.touch += touch
	for t, r := range chunk {
		vals := h.rowwise[int(r)*h.stride:][:h.stride]
		for k, b := range h.keys {
			u := int32(vals[b])
			at[t*nk+k] = h.rowAt[k] + u*h.na
			seenAt[t*nk+k] = h.seenAt[k] + u
		}
	}
}

// addTo is `for i := range dst { dst[i] += x[i] }`, four at a time.
func addTo(dst, x []int32) {
	x = x[:len(dst)]
	i := 0
	for ; i+4 <= len(dst); i += 4 {
		d, y := dst[i:i+4:i+4], x[i:i+4:i+4]
		d[0] += y[0]
		d[1] += y[1]
		d[2] += y[2]
		d[3] += y[3]
	}
	for ; i < len(dst); i++ {
		dst[i] += x[i]
	}
}
