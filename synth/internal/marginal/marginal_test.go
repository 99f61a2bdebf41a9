package marginal

import (
	"math/rand/v2"
	"testing"

	"github.com/dpsql/dpsql/synth/pgm"
)

// TestProjectTo compares ProjectTo with a brute-force projection that
// decodes every cell's values.
func TestProjectTo(t *testing.T) {
	dom, err := pgm.NewDomain([]string{"a", "b", "c", "d"}, []int{2, 3, 4, 5})
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	attrs := []int{0, 1, 2, 3}
	x := make([]float64, dom.Cells(attrs))
	for i := range x {
		x[i] = float64(rng.IntN(10))
	}
	for mask := 0; mask < 16; mask++ {
		var sub []int
		for a := 0; a < 4; a++ {
			if mask&(1<<a) != 0 {
				sub = append(sub, a)
			}
		}
		want := make([]float64, dom.Cells(sub))
		for cell, v := range x {
			// Decode cell into values, last attribute fastest.
			vals := make([]int, 4)
			c := cell
			for a := 3; a >= 0; a-- {
				vals[a] = c % dom.Size(a)
				c /= dom.Size(a)
			}
			off := 0
			for _, a := range sub {
				off = off*dom.Size(a) + vals[a]
			}
			want[off] += v
		}
		got := ProjectTo([]float64{99}, dom, attrs, x, sub)
		if L1(got, want) != 0 {
			t.Errorf("project to %v: %v, want %v", sub, got, want)
		}
	}
}

func TestSetAlgebra(t *testing.T) {
	tests := []struct {
		a, b   []int
		subset bool
		inter  int
	}{
		{nil, []int{1}, true, 0},
		{[]int{1, 3}, []int{1, 2, 3}, true, 2},
		{[]int{1, 4}, []int{1, 2, 3}, false, 1},
		{[]int{0}, []int{1, 2}, false, 0},
	}
	for _, tt := range tests {
		if got := Subset(tt.a, tt.b); got != tt.subset {
			t.Errorf("Subset(%v, %v) = %v", tt.a, tt.b, got)
		}
		if got := Intersect(tt.a, tt.b); got != tt.inter {
			t.Errorf("Intersect(%v, %v) = %v", tt.a, tt.b, got)
		}
	}
}
