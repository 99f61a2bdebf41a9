package oracle

import (
	"math"
	"math/rand/v2"
	"testing"
)

// randomProblem draws terms of 1–3 literals with weights of both signs and,
// optionally, unary scores.
func randomProblem(r *rand.Rand, sizes []int, nterms int, unary bool) *Problem {
	p := &Problem{Sizes: sizes}
	d := len(sizes)
	for range nterms {
		k := 1 + r.IntN(min(3, d))
		perm := r.Perm(d)[:k]
		t := Term{Attrs: perm, Vals: make([]int, k), Weight: float64(r.IntN(7) - 2)}
		for j, a := range perm {
			t.Vals[j] = r.IntN(sizes[a])
		}
		p.Terms = append(p.Terms, t)
	}
	if unary {
		p.Unary = make([][]float64, d)
		for a := range d {
			if r.IntN(3) == 0 {
				continue
			}
			p.Unary[a] = make([]float64, sizes[a])
			for v := range p.Unary[a] {
				p.Unary[a][v] = -r.ExpFloat64()
			}
		}
	}
	return p
}

// bruteForce returns the maximum of p over every record.
func bruteForce(p *Problem) float64 {
	x := make([]int, len(p.Sizes))
	best := math.Inf(-1)
	for {
		best = max(best, p.Score(x))
		i := 0
		for ; i < len(x); i++ {
			x[i]++
			if x[i] < p.Sizes[i] {
				break
			}
			x[i] = 0
		}
		if i == len(x) {
			return best
		}
	}
}

func TestSolveMatchesBruteForce(t *testing.T) {
	cases := []struct {
		name   string
		sizes  []int
		terms  int
		unary  bool
		opt    Options
		exact  bool // the search must be complete
		strict bool // the answer must be optimal
	}{
		{"binary", []int{2, 2, 2, 2, 2, 2}, 12, false, Options{}, true, true},
		{"categorical", []int{3, 4, 2, 5, 3}, 20, false, Options{}, true, true},
		{"unary", []int{3, 4, 2, 5, 3}, 15, true, Options{}, true, true},
		{"many terms", []int{4, 3, 3, 2, 4, 2}, 80, true, Options{}, true, true},
		// Beyond the limit: the heuristic then a bounded search large
		// enough to finish, which proves optimality.
		{"heuristic+bb", []int{4, 3, 3, 2, 4, 2}, 40, true, Options{ExactLimit: 10, Nodes: 1 << 20}, true, true},
		// Heuristic only: a valid record, never better than the optimum.
		{"heuristic", []int{4, 3, 3, 2, 4, 2}, 40, true, Options{ExactLimit: 10, Nodes: -1}, false, false},
	}
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range cases {
		for trial := range 40 {
			p := randomProblem(r, c.sizes, c.terms, c.unary)
			want := bruteForce(p)
			s := NewSolver(c.sizes, c.opt)
			x := make([]int, len(c.sizes))
			got, exact := s.Solve(p, x, r)
			if sc := p.Score(x); math.Abs(sc-got) > 1e-9 {
				t.Fatalf("%s/%d: reported %v, record scores %v", c.name, trial, got, sc)
			}
			if got > want+1e-9 {
				t.Fatalf("%s/%d: %v above the brute-force optimum %v", c.name, trial, got, want)
			}
			if c.exact && !exact {
				t.Fatalf("%s/%d: search not complete", c.name, trial)
			}
			if (c.strict || exact) && math.Abs(got-want) > 1e-9 {
				t.Fatalf("%s/%d: exact=%v got %v, brute force %v", c.name, trial, exact, got, want)
			}
		}
	}
}

// The heuristic finds the optimum of a planted problem: one positive
// conjunction per attribute pair consistent with a hidden record.
func TestHeuristicPlanted(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	sizes := []int{9, 16, 7, 14, 6, 5, 2, 41, 2, 12, 8, 10, 4, 3, 2}
	hidden := make([]int, len(sizes))
	for a := range sizes {
		hidden[a] = r.IntN(sizes[a])
	}
	p := &Problem{Sizes: sizes}
	for a := range sizes {
		for b := a + 1; b < len(sizes); b++ {
			p.Terms = append(p.Terms, Term{Attrs: []int{a, b}, Vals: []int{hidden[a], hidden[b]}, Weight: 1})
			// A distractor with a wrong value.
			p.Terms = append(p.Terms, Term{Attrs: []int{a, b}, Vals: []int{(hidden[a] + 1) % sizes[a], hidden[b]}, Weight: 0.5})
		}
	}
	s := NewSolver(sizes, Options{})
	x := make([]int, len(sizes))
	got, _ := s.Solve(p, x, r)
	if want := p.Score(hidden); got < want {
		t.Fatalf("heuristic score %v, planted %v", got, want)
	}
}

// Free attributes (in no term) keep the caller's values.
func TestFreeAttributesKept(t *testing.T) {
	sizes := []int{3, 3, 3, 3}
	p := &Problem{Sizes: sizes, Terms: []Term{{Attrs: []int{1, 2}, Vals: []int{2, 1}, Weight: 1}}}
	x := []int{2, 0, 0, 1}
	s := NewSolver(sizes, Options{})
	if got, exact := s.Solve(p, x, rand.New(rand.NewPCG(1, 1))); got != 1 || !exact {
		t.Fatalf("score %v exact %v", got, exact)
	}
	if x[0] != 2 || x[3] != 1 || x[1] != 2 || x[2] != 1 {
		t.Fatalf("x = %v", x)
	}
}

func BenchmarkSolveHeuristic(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	sizes := []int{9, 16, 7, 14, 6, 5, 2, 41, 2, 12, 8, 10, 4, 3, 2}
	p := randomProblem(r, sizes, 1000, false)
	s := NewSolver(sizes, Options{})
	x := make([]int, len(sizes))
	for b.Loop() {
		s.Solve(p, x, r)
	}
}
