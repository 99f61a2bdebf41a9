package kernel

import (
	"fmt"
	"testing"
)

// BenchmarkProjectVsReduction compares the index-map scatter with the
// axis reduction on the largest clique of the adult benchmark model
// (age, education-num, marital-status, relationship, income: 114 240 cells).
func BenchmarkProjectVsReduction(b *testing.B) {
	sizes := []int{85, 16, 7, 6, 2}
	src := make([]float64, 114240)
	for i := range src {
		src[i] = float64(i%7) * 0.1
	}
	for _, keep := range [][]int{{0, 1, 4}, {0, 3, 4}, {0, 2}, {2, 3}, {1, 2, 3, 4}} {
		idx := Map(sizes, keep)
		r := NewReduction(sizes, keep)
		dst := make([]float64, r.Out())
		scratch := make([]float64, r.Scratch())
		b.Run(fmt.Sprint("map", keep), func(b *testing.B) {
			for b.Loop() {
				clear(dst)
				Project(dst, src, idx)
			}
		})
		b.Run(fmt.Sprint("reduce", keep), func(b *testing.B) {
			for b.Loop() {
				r.Sum(dst, src, scratch)
			}
		})
	}
}
