package kernel

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// The per-kernel benchmarks run on the largest clique of the adult benchmark
// model (age, education-num, marital-status, relationship, income: 114 240
// cells) and report ns/cell.

var adultSizes = []int{85, 16, 7, 6, 2}

const adultCells = 85 * 16 * 7 * 6 * 2

// adultMaps are index maps of the shapes belief propagation uses: contiguous
// runs, pairs repeated along a run, each value repeated, and a mix.
var adultMaps = []struct {
	name string
	keep []int
}{
	{"contig", []int{1, 2, 3, 4}}, // idx = i mod 1344
	{"pairs", []int{0, 4}},        // 0 1 0 1 … 2 3 2 3 …
	{"repeat", []int{0, 1, 2}},    // each value 12 times
	{"mixed", []int{0, 3}},        // 0 0 1 1 … 5 5 0 0 …
}

func perCell(b *testing.B, cells int) {
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(cells), "ns/cell")
}

func benchData(n int, scale float64) []float64 {
	rng := rand.New(rand.NewPCG(7, uint64(n)))
	x := make([]float64, n)
	for i := range x {
		x[i] = -rng.Float64() * scale
	}
	return x
}

func BenchmarkExpShiftTotal(b *testing.B) {
	src := benchData(adultCells, 30)
	x := make([]float64, len(src))
	var sum float64
	for b.Loop() {
		copy(x, src) // keeps the arguments realistic; a copy is cheap next to exp
		sum += ExpShiftTotal(x, 0.5)
	}
	perCell(b, len(x))
	_ = sum
}

func BenchmarkExpShift(b *testing.B) {
	src := benchData(adultCells, 30)
	x := make([]float64, len(src))
	for b.Loop() {
		copy(x, src)
		ExpShift(x, 0.5)
	}
	perCell(b, len(x))
}

func BenchmarkCopy(b *testing.B) { // the copy the exp benchmarks include
	src := benchData(adultCells, 30)
	x := make([]float64, len(src))
	for b.Loop() {
		copy(x, src)
	}
	perCell(b, len(x))
}

func BenchmarkExpShiftGather(b *testing.B) {
	src := benchData(adultCells, 30)
	x := make([]float64, len(src))
	for _, m := range adultMaps {
		idx := Map(adultSizes, m.keep)
		shift := benchData(int(maxIdx(idx))+1, 3)
		b.Run(m.name, func(b *testing.B) {
			for b.Loop() {
				copy(x, src)
				ExpShiftGather(x, shift, idx)
			}
			perCell(b, len(x))
		})
	}
}

func maxIdx(idx []int32) int32 {
	m := int32(0)
	for _, v := range idx {
		m = max(m, v)
	}
	return m
}

func BenchmarkExpand(b *testing.B) {
	dst := benchData(adultCells, 30)
	for _, m := range adultMaps {
		idx := Map(adultSizes, m.keep)
		src := benchData(int(maxIdx(idx))+1, 1e-9)
		b.Run(m.name, func(b *testing.B) {
			for b.Loop() {
				Expand(dst, src, idx)
			}
			perCell(b, len(dst))
		})
	}
}

func BenchmarkScale(b *testing.B) {
	x := benchData(adultCells, 30)
	for _, m := range adultMaps {
		idx := Map(adultSizes, m.keep)
		f := make([]float64, int(maxIdx(idx))+1)
		for i := range f {
			f[i] = 1
		}
		b.Run(m.name, func(b *testing.B) {
			for b.Loop() {
				Scale(x, f, idx)
			}
			perCell(b, len(x))
		})
	}
}

// BenchmarkReduction runs Sum and Max for the reductions of the adult
// benchmark's largest clique (one step each: outer × s × inner noted).
func BenchmarkReduction(b *testing.B) {
	src := benchData(adultCells, 30)
	for _, keep := range [][]int{
		{0, 4},       // 85 × 672 × 2
		{0, 2, 3, 4}, // 85 × 16 × 84
		{0, 1, 4},    // 1360 × 42 × 2
		{1, 2, 3, 4}, // 1 × 85 × 1344
		{0, 1, 2},    // 1360 × 12 × 1
		{0, 1, 3},    // 1360 × 7 × 12 ... then × 2
	} {
		r := NewReduction(adultSizes, keep)
		dst := make([]float64, r.Out())
		scratch := make([]float64, r.Scratch())
		b.Run(fmt.Sprint("sum", r.steps), func(b *testing.B) {
			for b.Loop() {
				r.Sum(dst, src, scratch)
			}
			perCell(b, len(src))
		})
		b.Run(fmt.Sprint("max", r.steps), func(b *testing.B) {
			for b.Loop() {
				r.Max(dst, src, scratch)
			}
			perCell(b, len(src))
		})
	}
}

func BenchmarkVector(b *testing.B) {
	x := benchData(adultCells, 1)
	y := benchData(adultCells+1, 1)[:adultCells]
	z := benchData(adultCells+2, 1)[:adultCells]
	dst := make([]float64, adultCells)
	var s float64
	b.Run("AxpyTo", func(b *testing.B) {
		for b.Loop() {
			AxpyTo(dst, y, 0.5, x)
		}
		perCell(b, adultCells)
	})
	b.Run("Axpy", func(b *testing.B) {
		for b.Loop() {
			Axpy(dst, 1e-9, x)
		}
		perCell(b, adultCells)
	})
	b.Run("ScaleAll", func(b *testing.B) {
		for b.Loop() {
			ScaleAll(dst, 1)
		}
		perCell(b, adultCells)
	})
	b.Run("Max", func(b *testing.B) {
		for b.Loop() {
			s += Max(x)
		}
		perCell(b, adultCells)
	})
	b.Run("DotDiff", func(b *testing.B) {
		for b.Loop() {
			s += DotDiff(z, x, y)
		}
		perCell(b, adultCells)
	})
	_ = s
}

// BenchmarkLevels runs the kernels at every implementation level the CPU
// supports (0 Go, 1 AVX2, 2 AVX-512 on amd64).
func BenchmarkLevels(b *testing.B) {
	saved := level
	defer func() { level = saved }()
	src := benchData(adultCells, 30)
	x := make([]float64, len(src))
	y := benchData(adultCells+1, 1)[:adultCells]
	mixed := Map(adultSizes, []int{0, 3})
	pairs := Map(adultSizes, []int{0, 4})
	shift := benchData(int(maxIdx(mixed))+1, 3)
	sub := benchData(int(maxIdx(pairs))+1, 1e-9)
	reds := []*Reduction{NewReduction(adultSizes, []int{0, 4}), NewReduction(adultSizes, []int{0, 2, 3, 4})}
	dst := make([]float64, adultCells)
	kernels := []struct {
		name string
		f    func()
	}{
		{"ExpShiftTotal", func() { copy(x, src); ExpShiftTotal(x, 0.5) }},
		{"ExpShiftGather/mixed", func() { copy(x, src); ExpShiftGather(x, shift, mixed) }},
		{"Expand/pairs", func() { Expand(x, sub, pairs) }},
		{"Scale/pairs", func() { Scale(x, sub, pairs) }},
		{"sum" + fmt.Sprint(reds[0].steps), func() { reds[0].Sum(dst[:reds[0].Out()], src, nil) }},
		{"max" + fmt.Sprint(reds[0].steps), func() { reds[0].Max(dst[:reds[0].Out()], src, nil) }},
		{"sum" + fmt.Sprint(reds[1].steps), func() { reds[1].Sum(dst[:reds[1].Out()], src, nil) }},
		{"max" + fmt.Sprint(reds[1].steps), func() { reds[1].Max(dst[:reds[1].Out()], src, nil) }},
		{"AxpyTo", func() { AxpyTo(x, y, 0.5, src) }},
		{"Max", func() { Max(src) }},
	}
	for _, l := range levels {
		level = l
		for _, k := range kernels {
			b.Run(fmt.Sprint(k.name, "/level", l), func(b *testing.B) {
				for b.Loop() {
					k.f()
				}
				perCell(b, adultCells)
			})
		}
	}
}
