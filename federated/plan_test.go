package federated

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/dpsql/dpsql/internal/adultgen"
	"github.com/dpsql/dpsql/synth/pgm"
)

func adultPlanDomain(t *testing.T) *pgm.Domain {
	t.Helper()
	d := adultgen.Domain()
	dom, err := pgm.NewDomain(d.Names(), d.Sizes())
	if err != nil {
		t.Fatal(err)
	}
	return dom
}

func all3(n int) [][]int {
	var sets [][]int
	for a := range n {
		for b := a + 1; b < n; b++ {
			for c := b + 1; c < n; c++ {
				sets = append(sets, []int{a, b, c})
			}
		}
	}
	return sets
}

// TestChooseLeads checks the greedy choice against a brute-force
// recomputation: each new lead carries the most fetch cells among the
// fetch sets without an earlier lead, and existing tables keep theirs.
func TestChooseLeads(t *testing.T) {
	dom := adultPlanDomain(t)
	fetch, _ := coverSets(dom, all3(dom.Len()), DefaultCoverCells, DefaultCoverCells, nil)
	conns := []*pgx.Conn{new(pgx.Conn), new(pgx.Conn), new(pgx.Conn)}
	for _, fixed := range []map[int]int{nil, {1: 5}, {0: -1}} {
		sn := &Snapshot{dom: dom, coded: map[*pgx.Conn]int{}}
		for i, l := range fixed {
			sn.coded[conns[i]] = l
		}
		leads := sn.chooseLeads(conns, fetch)
		for i, l := range leads {
			if f, ok := fixed[i]; ok {
				if l != f {
					t.Errorf("fixed %v: lead %d = %d, want the existing %d", fixed, i, l, f)
				}
				continue
			}
			// The earlier leads, then the weight of each attribute.
			var before []int
			for j, lj := range leads {
				if _, ok := fixed[j]; ok || j < i {
					if lj >= 0 {
						before = append(before, lj)
					}
				}
			}
			weight := make([]float64, dom.Len())
			for _, f := range fetch {
				if slices.ContainsFunc(before, func(b int) bool { return slices.Contains(f, b) }) {
					continue
				}
				for _, a := range f {
					weight[a] += float64(dom.Cells(f))
				}
			}
			best := slices.Max(weight)
			if l < 0 || weight[l] != best || slices.Contains(before, l) {
				t.Errorf("fixed %v: lead %d = %d (weight %v), want one of weight %v, not in %v", fixed, i, l, weight[max(l, 0)], best, before)
			}
		}
	}
}

// TestQueues hands out fetch sets to workers polling in a random order:
// every set exactly once, a worker's own sets (those with its lead) before
// anything else, then the shared ones, then other workers' ones.
func TestQueues(t *testing.T) {
	dom := adultPlanDomain(t)
	r := rand.New(rand.NewPCG(3, 4))
	for _, cover := range []float64{1, 1 << 12, DefaultCoverCells, 1 << 22} {
		fetch, _ := coverSets(dom, all3(dom.Len()), cover, cover, nil)
		for _, leads := range [][]int{{-1}, {11}, {11, 2}, {2, 2, -1}, {0, 9, 11, 12}} {
			q := newQueues(dom, fetch, leads)
			// Every set in a worker's own queue has its lead.
			for w, l := range leads {
				for _, k := range q.own[w] {
					if !slices.Contains(fetch[k], l) {
						t.Fatalf("cover %g, leads %v: worker %d owns %v", cover, leads, w, fetch[k])
					}
				}
			}
			seen := make([]bool, len(fetch))
			done := make([]bool, len(leads))
			for n := 0; n < len(fetch)+len(leads); {
				w := r.IntN(len(leads))
				if done[w] {
					continue
				}
				want := -2 // any other worker's
				switch shared := q.own[len(leads)]; {
				case len(q.own[w]) > 0:
					want = q.own[w][0]
				case len(shared) > 0:
					want = shared[0]
				}
				k := q.next(w)
				n++
				if k < 0 {
					done[w] = true
					continue
				}
				if want >= 0 && k != want {
					t.Fatalf("cover %g, leads %v: worker %d got %d, want %d (own first, then shared)", cover, leads, w, k, want)
				}
				if seen[k] {
					t.Fatalf("cover %g, leads %v: fetch set %d handed out twice", cover, leads, k)
				}
				seen[k] = true
			}
			for k, ok := range seen {
				if !ok {
					t.Errorf("cover %g, leads %v: fetch set %v never handed out", cover, leads, fetch[k])
				}
			}
		}
	}
}

// TestCoverSets checks covers of random families of sets, with and
// without leads, against the definitions: every set lies in exactly the
// one fetch set it is projected from; a fetch set is the union of its
// sets; only a set beyond the caps by itself may exceed them; the hot
// cells are the cells divided by the largest lead's size.
func TestCoverSets(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	adult := adultPlanDomain(t)
	for trial := range 300 {
		dom := adult
		if trial%3 != 0 {
			n := 2 + r.IntN(9)
			names, sizes := make([]string, n), make([]int, n)
			for a := range n {
				names[a], sizes[a] = string(rune('a'+a)), 1+r.IntN(40)
			}
			var err error
			if dom, err = pgm.NewDomain(names, sizes); err != nil {
				t.Fatal(err)
			}
		}
		n := dom.Len()
		// Distinct sorted sets of 1 to 4 attributes.
		var sets [][]int
		seen := map[string]bool{}
		for range 1 + r.IntN(60) {
			s := r.Perm(n)[:1+r.IntN(min(4, n))]
			slices.Sort(s)
			if k := fmt.Sprint(s); !seen[k] {
				seen[k] = true
				sets = append(sets, s)
			}
		}
		var leads []int
		for range r.IntN(3) {
			leads = append(leads, r.IntN(n+1)-1)
		}
		maxHot := float64(int(1) << r.IntN(14))
		maxCells := maxHot * float64(int(1)<<r.IntN(6))
		fetch, of := coverSets(dom, sets, maxHot, maxCells, leads)
		name := fmt.Sprintf("trial %d (%d sets, leads %v, caps %g/%g)", trial, len(sets), leads, maxHot, maxCells)
		if len(of) != len(sets) {
			t.Fatalf("%s: %d fetch indexes for %d sets", name, len(of), len(sets))
		}
		members := make([][]int, len(fetch))
		for i, f := range of {
			if f < 0 || f >= len(fetch) {
				t.Fatalf("%s: set %v in fetch set %d of %d", name, sets[i], f, len(fetch))
			}
			members[f] = append(members[f], i)
		}
		for f, fs := range fetch {
			var u []int
			for _, i := range members[f] {
				u = union(u, sets[i])
			}
			if len(members[f]) == 0 || !slices.Equal(u, fs) {
				t.Fatalf("%s: fetch set %v is not the union %v of its %d sets", name, fs, u, len(members[f]))
			}
			// Brute-force hot cells.
			cells, div := 1.0, 1.0
			for _, a := range fs {
				cells *= float64(dom.Size(a))
			}
			for _, l := range leads {
				if l >= 0 && slices.Contains(fs, l) {
					div = max(div, float64(dom.Size(l)))
				}
			}
			if h := hotCells(dom, fs, leads); h != cells/div {
				t.Fatalf("%s: hot cells of %v = %g, want %g", name, fs, h, cells/div)
			}
			if (cells/div > maxHot || cells > maxCells) && len(members[f]) != 1 {
				t.Fatalf("%s: fetch set %v beyond the caps (hot %g, cells %g) covers %d sets", name, fs, cells/div, cells, len(members[f]))
			}
		}
	}
}

// TestCoverSetsAdult pins the plan of the benchmark workload (all 364
// 3-way marginals of the adult-like domain): the plain cover and the one
// that knows the leads, whose fetch sets with a lead are larger (fewer
// scans) while their hot cells stay within the cap.
func TestCoverSetsAdult(t *testing.T) {
	dom := adultPlanDomain(t)
	sets := all3(dom.Len())
	plain, _ := coverSets(dom, sets, DefaultCoverCells, DefaultCoverCells, nil)
	sn := &Snapshot{dom: dom, coded: map[*pgx.Conn]int{}}
	leads := sn.chooseLeads([]*pgx.Conn{new(pgx.Conn), new(pgx.Conn)}, plain)
	fetch, _ := coverSets(dom, sets, DefaultCoverCells, maxFetchCells, leads)
	wide, _ := coverSets(dom, sets, DefaultCoverCells, 1<<22, leads)
	if len(plain) != 131 || !slices.Equal(leads, []int{11, 2}) || len(fetch) > len(plain) || len(wide) > 95 {
		t.Errorf("plain cover %d fetch sets, leads %v, cover with leads %d (2^22 cells: %d) fetch sets; want 131, [11 2], at most 131 (95)",
			len(plain), leads, len(fetch), len(wide))
	}
}
