// Package synthtest generates small correlated datasets for the
// mechanisms' tests, so that they run without the shared data files.
package synthtest

import (
	"fmt"
	"math/rand/v2"

	"github.com/dpsql/dpsql/synth/pgm"
)

// Chain returns rows records over attributes with the given sizes that form
// a Markov chain: attribute 0 is skewed (value v with weight ∝ 1/(v+1)), and
// attribute i copies attribute i−1 (mod its size) with probability 0.8 and
// is uniform otherwise. Strong 2-way dependence makes an independent model
// measurably worse than one with 2-way cliques. The seed fixes the data.
func Chain(seed uint64, rows int, sizes []int) *pgm.Dataset {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	names := make([]string, len(sizes))
	cols := make([][]uint16, len(sizes))
	for i := range sizes {
		names[i] = fmt.Sprintf("a%d", i)
		cols[i] = make([]uint16, rows)
	}
	var wsum float64
	for v := range sizes[0] {
		wsum += 1 / float64(v+1)
	}
	for r := range rows {
		u := rng.Float64() * wsum
		v := 0
		for ; v < sizes[0]-1; v++ {
			u -= 1 / float64(v+1)
			if u < 0 {
				break
			}
		}
		cols[0][r] = uint16(v)
		for i := 1; i < len(sizes); i++ {
			if rng.Float64() < 0.8 {
				cols[i][r] = uint16(int(cols[i-1][r]) % sizes[i])
			} else {
				cols[i][r] = uint16(rng.IntN(sizes[i]))
			}
		}
	}
	dom, err := pgm.NewDomain(names, sizes)
	if err != nil {
		panic(err)
	}
	ds, err := pgm.NewDataset(dom, cols)
	if err != nil {
		panic(err)
	}
	return ds
}
