package nn

import (
	"math"
	"math/rand/v2"
	"testing"
)

// naiveGemm is the reference for Gemm: three loops over op(A) and op(B).
func naiveGemm(transA, transB bool, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	at := func(i, p int) float64 {
		if transA {
			return a[p*lda+i]
		}
		return a[i*lda+p]
	}
	bt := func(p, j int) float64 {
		if transB {
			return b[j*ldb+p]
		}
		return b[p*ldb+j]
	}
	for i := range m {
		for j := range n {
			s := 0.0
			for p := range k {
				s += at(i, p) * bt(p, j)
			}
			c[i*ldc+j] = alpha*s + beta*c[i*ldc+j]
		}
	}
}

func randSlice(rng *rand.Rand, n int) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = rng.NormFloat64()
	}
	return x
}

func TestGemmMatchesNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct {
		ta, tb  bool
		m, n, k int
	}{
		{false, false, 3, 4, 5}, {true, false, 7, 2, 9}, {false, true, 1, 8, 3}, {true, true, 6, 6, 1},
		{false, false, 70, 90, 130}, {true, false, 65, 33, 200},
	} {
		lda, ldb, ldc := c.k+2, c.n+1, c.n+3
		if c.ta {
			lda = c.m + 2
		}
		if c.tb {
			ldb = c.k + 1
		}
		ra, rb := c.m, c.k
		if c.ta {
			ra = c.k
		}
		if c.tb {
			rb = c.n
		}
		a, b := randSlice(rng, ra*lda), randSlice(rng, rb*ldb)
		c1 := randSlice(rng, c.m*ldc)
		c2 := append([]float64(nil), c1...)
		Gemm(c.ta, c.tb, c.m, c.n, c.k, 0.7, a, lda, b, ldb, 0.3, c1, ldc)
		naiveGemm(c.ta, c.tb, c.m, c.n, c.k, 0.7, a, lda, b, ldb, 0.3, c2, ldc)
		for i := range c1 {
			if math.Abs(c1[i]-c2[i]) > 1e-10*(1+math.Abs(c2[i])) {
				t.Fatalf("%+v: C[%d] = %v, naive %v", c, i, c1[i], c2[i])
			}
		}
	}
}

func testNet(t *testing.T, hidden []int, seed uint64) *Net {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 3))
	arch := Arch{Latent: 4, Hidden: hidden, Blocks: []int{3, 1, 2, 4}}
	n, err := New(arch, randSlice(rng, 5*arch.Latent), rng)
	if err != nil {
		t.Fatal(err)
	}
	// Spread the weights so that ReLUs switch and the softmax is not flat.
	for i := range n.params {
		n.params[i] *= 3
	}
	return n
}

// naiveForward recomputes the network from its definition, with explicit
// concatenation: the reference for the packed layout of H.
func naiveForward(n *Net) [][]float64 {
	out := make([][]float64, n.B)
	W := n.Width()
	for b := range n.B {
		h := append([]float64(nil), n.h[b*W+W-n.Latent:(b+1)*W]...)
		for _, l := range n.layers {
			y := make([]float64, l.out)
			for j := range l.out {
				y[j] = l.b[j]
				for i := range l.in {
					y[j] += h[i] * l.w[i*l.out+j]
				}
			}
			if l.isOutput {
				h = y
				break
			}
			for j := range y {
				y[j] = max(y[j], 0)
			}
			h = append(y, h...)
		}
		Softmax(h, 1, n.Blocks)
		out[b] = h
	}
	return out
}

func TestForwardMatchesNaive(t *testing.T) {
	for _, hidden := range [][]int{nil, {5}, {6, 3}, {2, 7, 4}} {
		n := testNet(t, hidden, 9)
		p := n.Forward()
		want := naiveForward(n)
		for b := range n.B {
			sum := 0.0
			for j, v := range want[b] {
				got := p[b*n.Out()+j]
				if math.Abs(got-v) > 1e-12 {
					t.Fatalf("hidden %v row %d col %d: %v, naive %v", hidden, b, j, got, v)
				}
				sum += got
			}
			if math.Abs(sum-float64(len(n.Blocks))) > 1e-12 {
				t.Errorf("row %d sums to %v, want one per block", b, sum)
			}
		}
	}
}

// TestBackwardFiniteDifferences checks every parameter's gradient of the
// loss L = Σ g ⊙ P against central differences.
func TestBackwardFiniteDifferences(t *testing.T) {
	for _, hidden := range [][]int{nil, {5}, {6, 3}, {2, 7, 4}} {
		n := testNet(t, hidden, 11)
		rng := rand.New(rand.NewPCG(5, 5))
		g := randSlice(rng, n.B*n.Out())
		loss := func() float64 {
			p := n.Forward()
			s := 0.0
			for i := range p {
				s += g[i] * p[i]
			}
			return s
		}
		loss()
		dp := append([]float64(nil), g...)
		n.Backward(dp)
		grad := append([]float64(nil), n.Grads()...)
		const h = 1e-6
		for i := range n.params {
			old := n.params[i]
			n.params[i] = old + h
			up := loss()
			n.params[i] = old - h
			down := loss()
			n.params[i] = old
			fd := (up - down) / (2 * h)
			if math.Abs(fd-grad[i]) > 1e-6*(1+math.Abs(fd)) {
				t.Fatalf("hidden %v: param %d: backward %v, finite difference %v", hidden, i, grad[i], fd)
			}
		}
	}
}

func TestAdamMatchesReference(t *testing.T) {
	// Minimise ½‖x − c‖²; compare with the textbook update written out.
	c := []float64{1, -2, 3}
	x := []float64{0, 0, 0}
	ref := []float64{0, 0, 0}
	m, v := make([]float64, 3), make([]float64, 3)
	a := NewAdam(3)
	g := make([]float64, 3)
	for step := 1; step <= 500; step++ {
		for i := range x {
			g[i] = x[i] - c[i]
		}
		a.Step(x, g, 0.05)
		for i := range ref {
			gi := ref[i] - c[i]
			m[i] = 0.9*m[i] + 0.1*gi
			v[i] = 0.999*v[i] + 0.001*gi*gi
			mh := m[i] / (1 - math.Pow(0.9, float64(step)))
			vh := v[i] / (1 - math.Pow(0.999, float64(step)))
			ref[i] -= 0.05 * mh / (math.Sqrt(vh) + 1e-8)
		}
	}
	for i := range x {
		if math.Abs(x[i]-ref[i]) > 1e-9 || math.Abs(x[i]-c[i]) > 1e-2 {
			t.Errorf("x[%d] = %v, reference %v, optimum %v", i, x[i], ref[i], c[i])
		}
	}
}

func TestEMAAndCosine(t *testing.T) {
	e := []float64{1, 2}
	EMA(e, []float64{3, 4}, 0.25)
	if e[0] != 2.5 || e[1] != 3.5 {
		t.Errorf("EMA = %v", e)
	}
	if Cosine(1, 0, 0, 10) != 1 || math.Abs(Cosine(1, 0, 10, 10)) > 1e-15 || math.Abs(Cosine(1, 0, 5, 10)-0.5) > 1e-15 {
		t.Error("cosine schedule endpoints")
	}
}

// BenchmarkMatMul compares gonum's Dgemm with the naive loops at GEM's
// sizes (B = 1000 rows): the reason Gemm uses gonum.
func BenchmarkMatMul(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	const m, k, n = 1000, 192, 128
	x, w, y := randSlice(rng, m*k), randSlice(rng, k*n), make([]float64, m*n)
	b.Run("gonum", func(b *testing.B) {
		for b.Loop() {
			Gemm(false, false, m, n, k, 1, x, k, w, n, 0, y, n)
		}
	})
	b.Run("naive", func(b *testing.B) {
		for b.Loop() {
			naiveGemm(false, false, m, n, k, 1, x, k, w, n, 0, y, n)
		}
	})
}
