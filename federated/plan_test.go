package federated

import (
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
	fetch, _ := coverSets(dom, all3(dom.Len()), DefaultCoverCells)
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
		fetch, _ := coverSets(dom, all3(dom.Len()), cover)
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
