package noise

import (
	"math"
	"math/big"
	"testing"
)

func TestBernoulliExp(t *testing.T) {
	const n = 200000
	s := testSource("bernoulli-exp")
	for _, tc := range []struct{ a, b uint64 }{
		{0, 1}, {1, 3}, {1, 1}, {7, 3}, {5, 2}, {9, 1}, {12345, 100000},
	} {
		gamma := float64(tc.a) / float64(tc.b)
		p := math.Exp(-gamma)

		k := 0
		for range n {
			if s.bernoulliExp64(tc.a, tc.b) {
				k++
			}
		}
		zTest(t, "bernoulliExp64", k, n, p)

		// The same ratio scaled into the high word exercises 128-bit
		// arithmetic.
		a, _ := mul128(tc.a, 3).shl(100)
		b, _ := mul128(tc.b, 3).shl(100)
		k = 0
		for range n {
			if s.bernoulliExp128(a, b) {
				k++
			}
		}
		zTest(t, "bernoulliExp128", k, n, p)

		var sc bigScratch
		ba := new(big.Int).Lsh(new(big.Int).SetUint64(tc.a*3), 300)
		bb := new(big.Int).Lsh(new(big.Int).SetUint64(tc.b*3), 300)
		k = 0
		for range n {
			if s.bernoulliExpBig(ba, bb, &sc) {
				k++
			}
		}
		zTest(t, "bernoulliExpBig", k, n, p)
	}
}

func TestBernoulliRat(t *testing.T) {
	const n = 200000
	s := testSource("bernoulli-rat")
	for _, tc := range []struct{ r, b uint64 }{
		{0, 5}, {1, 2}, {1, 3}, {2, 3}, {999, 1000}, {1, 1000},
	} {
		p := float64(tc.r) / float64(tc.b)
		r, _ := mul128(tc.r, 0xfedcba987).shl(70)
		b, _ := mul128(tc.b, 0xfedcba987).shl(70)
		k := 0
		for range n {
			if s.bernoulliRat128(r, b) {
				k++
			}
		}
		zTest(t, "bernoulliRat128", k, n, p)

		var sc bigScratch
		br, bb := new(big.Int).SetUint64(tc.r), new(big.Int).SetUint64(tc.b)
		k = 0
		for range n {
			if s.bernoulliRatBig(br, bb, &sc) {
				k++
			}
		}
		zTest(t, "bernoulliRatBig", k, n, p)
	}
}

func TestU128Shl(t *testing.T) {
	tests := []struct {
		x    u128
		k    uint
		want u128
		ok   bool
	}{
		{u128{0, 1}, 0, u128{0, 1}, true},
		{u128{0, 1}, 126, u128{1 << 62, 0}, true},
		{u128{0, 1}, 127, u128{}, false},
		{u128{0, 3}, 63, u128{1, 1 << 63}, true},
		{u128{0, 3}, 125, u128{3 << 61, 0}, true},
		{u128{0, 3}, 126, u128{}, false},
		{u128{1, 0}, 62, u128{1 << 62, 0}, true},
		{u128{1, 0}, 63, u128{}, false},
		{u128{}, 500, u128{}, true},
	}
	for _, tc := range tests {
		got, ok := tc.x.shl(tc.k)
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("%v.shl(%d) = %v, %v; want %v, %v", tc.x, tc.k, got, ok, tc.want, tc.ok)
		}
	}
}
