// Package nn is the small dense network of GEM (Liu, Vietri, Wu, NeurIPS
// 2021, Sec. 5): a generator that maps a fixed batch of latent vectors z to
// one product distribution per row, with a hand-written backward pass, Adam
// and an exponential moving average of the weights. It is CPU only, in
// float64, with matrix products by gonum's BLAS (pure Go with assembly
// kernels; measured faster than the naive loops kept here as the test
// reference, see BenchmarkMatMul).
//
// The architecture is the reference code's CTGAN-style residual MLP without
// BatchNorm: h₀ = z, h_{k+1} = concat(ReLU(h_k·W_k + b_k), h_k), logits =
// h_K·W_K + b_K, and a softmax within each attribute's block of the logits.
// The activations of all blocks live in one row-major matrix H whose
// columns are [a_K … a_1 z], so that every h_k is a contiguous suffix of
// columns and the concatenation costs nothing.
package nn

import (
	"fmt"
	"math"
	"math/rand/v2"

	"gonum.org/v1/gonum/blas"
	"gonum.org/v1/gonum/blas/blas64"
)

var impl = blas64.Implementation()

// Gemm computes C = alpha·op(A)·op(B) + beta·C for row-major matrices with
// leading dimensions lda, ldb, ldc; op(A) is m×k, op(B) is k×n.
func Gemm(transA, transB bool, m, n, k int, alpha float64, a []float64, lda int, b []float64, ldb int, beta float64, c []float64, ldc int) {
	if m == 0 || n == 0 || k == 0 {
		return // callers never ask for an empty inner dimension
	}
	ta, tb := blas.NoTrans, blas.NoTrans
	if transA {
		ta = blas.Trans
	}
	if transB {
		tb = blas.Trans
	}
	impl.Dgemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)
}

// Arch is a generator's shape.
type Arch struct {
	Latent int   // dimension of z
	Hidden []int // width of each residual block
	Blocks []int // sizes of the softmax blocks (attribute domain sizes)
}

// Out is the output width d' = Σ Blocks.
func (a Arch) Out() int {
	n := 0
	for _, s := range a.Blocks {
		n += s
	}
	return n
}

// Width is the width of H: Latent + Σ Hidden.
func (a Arch) Width() int {
	w := a.Latent
	for _, h := range a.Hidden {
		w += h
	}
	return w
}

// NumParams is the number of weights and biases.
func (a Arch) NumParams() int {
	n, in := 0, a.Latent
	for _, h := range a.Hidden {
		n += in*h + h
		in += h
	}
	return n + in*a.Out() + a.Out()
}

// Check reports whether the shape is usable.
func (a Arch) Check() error {
	if a.Latent < 1 {
		return fmt.Errorf("nn: latent dimension %d, want ≥ 1", a.Latent)
	}
	for _, h := range a.Hidden {
		if h < 1 {
			return fmt.Errorf("nn: hidden width %d, want ≥ 1", h)
		}
	}
	if len(a.Blocks) == 0 {
		return fmt.Errorf("nn: no output blocks")
	}
	for _, s := range a.Blocks {
		if s < 1 {
			return fmt.Errorf("nn: output block of size %d", s)
		}
	}
	return nil
}

// layer is one Linear: in×out weights (row-major, y = x·W + b) and biases,
// views into the network's parameter and gradient vectors.
type layer struct {
	in, out  int
	w, b     []float64
	gw, gb   []float64
	inCol    int // first column of its input in H (its input is H[:, inCol:])
	outCol   int // first column of its output in H (hidden layers only)
	isOutput bool
}

// Net is a generator evaluated on a fixed batch of B latent rows. It is not
// safe for concurrent use.
type Net struct {
	Arch
	B      int
	params []float64
	grads  []float64
	layers []layer

	h      []float64 // B × Width: [a_K … a_1 z]
	dh     []float64 // B × Width
	logits []float64 // B × Out, then the probabilities
	dl     []float64 // B × Out
}

// New returns a network for arch on the latent batch z (B rows of
// arch.Latent values, row-major, copied), with PyTorch's default Linear
// initialisation U(−1/√in, 1/√in) drawn from rng (zero weights if rng is
// nil).
func New(arch Arch, z []float64, rng *rand.Rand) (*Net, error) {
	if err := arch.Check(); err != nil {
		return nil, err
	}
	if len(z) == 0 || len(z)%arch.Latent != 0 {
		return nil, fmt.Errorf("nn: %d latent values for dimension %d", len(z), arch.Latent)
	}
	n := &Net{Arch: arch, B: len(z) / arch.Latent}
	n.Hidden = append([]int(nil), arch.Hidden...)
	n.Blocks = append([]int(nil), arch.Blocks...)
	np := arch.NumParams()
	n.params = make([]float64, np)
	n.grads = make([]float64, np)
	W := arch.Width()
	off := 0
	take := func(k int) ([]float64, []float64) {
		p, g := n.params[off:off+k:off+k], n.grads[off:off+k:off+k]
		off += k
		return p, g
	}
	in, inCol := arch.Latent, W-arch.Latent
	for _, h := range arch.Hidden {
		l := layer{in: in, out: h, inCol: inCol, outCol: inCol - h}
		l.w, l.gw = take(in * h)
		l.b, l.gb = take(h)
		n.layers = append(n.layers, l)
		in += h
		inCol -= h
	}
	l := layer{in: in, out: arch.Out(), inCol: 0, isOutput: true}
	l.w, l.gw = take(in * l.out)
	l.b, l.gb = take(l.out)
	n.layers = append(n.layers, l)
	for _, l := range n.layers {
		if rng == nil {
			break // the caller sets the parameters
		}
		bound := 1 / math.Sqrt(float64(l.in))
		for i := range l.w {
			l.w[i] = (2*rng.Float64() - 1) * bound
		}
		for i := range l.b {
			l.b[i] = (2*rng.Float64() - 1) * bound
		}
	}
	n.h = make([]float64, n.B*W)
	n.dh = make([]float64, n.B*W)
	n.logits = make([]float64, n.B*arch.Out())
	n.dl = make([]float64, n.B*arch.Out())
	for b := range n.B {
		copy(n.h[b*W+W-arch.Latent:(b+1)*W], z[b*arch.Latent:(b+1)*arch.Latent])
	}
	return n, nil
}

// Params is the parameter vector (weights then biases, layer by layer); the
// caller may change it in place (optimiser steps, EMA swaps).
func (n *Net) Params() []float64 { return n.params }

// Grads is the gradient vector Backward fills, laid out like Params.
func (n *Net) Grads() []float64 { return n.grads }

// Rows is B.
func (n *Net) Rows() int { return n.B }

// Forward evaluates the network and returns the B × Out row-major matrix of
// per-block probabilities. The slice is reused by the next Forward.
func (n *Net) Forward() []float64 {
	W, B := n.Width(), n.B
	for _, l := range n.layers {
		var out []float64
		ldo := W
		if l.isOutput {
			out, ldo = n.logits, l.out
		} else {
			out = n.h[l.outCol:]
		}
		for b := range B {
			copy(out[b*ldo:b*ldo+l.out], l.b)
		}
		Gemm(false, false, B, l.out, l.in, 1, n.h[l.inCol:], W, l.w, l.out, 1, out, ldo)
		if !l.isOutput {
			for b := range B {
				row := out[b*ldo : b*ldo+l.out]
				for i, v := range row {
					if v < 0 {
						row[i] = 0
					}
				}
			}
		}
	}
	Softmax(n.logits, B, n.Blocks)
	return n.logits
}

// Softmax replaces each block of each of the rows of x by its softmax.
func Softmax(x []float64, rows int, blocks []int) {
	width := len(x) / max(rows, 1)
	for r := range rows {
		row := x[r*width : (r+1)*width]
		off := 0
		for _, s := range blocks {
			blk := row[off : off+s]
			m := blk[0]
			for _, v := range blk[1:] {
				m = max(m, v)
			}
			sum := 0.0
			for i, v := range blk {
				e := math.Exp(v - m)
				blk[i] = e
				sum += e
			}
			inv := 1 / sum
			for i := range blk {
				blk[i] *= inv
			}
			off += s
		}
	}
}

// SoftmaxBackward turns dp, the gradient with respect to the softmax
// outputs p, into the gradient with respect to its inputs, in place:
// dx = p ⊙ (dp − Σ_block p·dp).
func SoftmaxBackward(dp, p []float64, rows int, blocks []int) {
	width := len(p) / max(rows, 1)
	for r := range rows {
		prow, drow := p[r*width:(r+1)*width], dp[r*width:(r+1)*width]
		off := 0
		for _, s := range blocks {
			pb, db := prow[off:off+s], drow[off:off+s]
			dot := 0.0
			for i := range pb {
				dot += pb[i] * db[i]
			}
			for i := range pb {
				db[i] = pb[i] * (db[i] - dot)
			}
			off += s
		}
	}
}

// Backward sets Grads to the gradient of a loss whose gradient with respect
// to the last Forward's probabilities is dp (B × Out, row-major; it is
// overwritten). Forward must have been called since the parameters last
// changed.
func (n *Net) Backward(dp []float64) {
	W, B := n.Width(), n.B
	clear(n.grads)
	SoftmaxBackward(dp, n.logits, B, n.Blocks)
	// Output layer: dW = Hᵀ·dl, db = Σ_rows dl, dH = dl·Wᵀ.
	out := n.layers[len(n.layers)-1]
	Gemm(true, false, out.in, out.out, B, 1, n.h, W, dp, out.out, 0, out.gw, out.out)
	colSum(out.gb, dp, B, out.out, out.out)
	if len(n.layers) == 1 {
		return
	}
	Gemm(false, true, B, W, out.out, 1, dp, out.out, out.w, out.out, 0, n.dh, W)
	for k := len(n.layers) - 2; k >= 0; k-- {
		l := n.layers[k]
		// dpre = dH[:, a_{k+1}] ⊙ 1(a_{k+1} > 0), in place in dh.
		for b := range B {
			a := n.h[b*W+l.outCol : b*W+l.outCol+l.out]
			d := n.dh[b*W+l.outCol : b*W+l.outCol+l.out]
			for i, v := range a {
				if v <= 0 {
					d[i] = 0
				}
			}
		}
		dpre := n.dh[l.outCol:]
		Gemm(true, false, l.in, l.out, B, 1, n.h[l.inCol:], W, dpre, W, 0, l.gw, l.out)
		colSum(l.gb, dpre, B, l.out, W)
		if k > 0 { // the latent batch is fixed: no gradient for z
			Gemm(false, true, B, l.in, l.out, 1, dpre, W, l.w, l.out, 1, n.dh[l.inCol:], W)
		}
	}
}

// colSum sets dst[j] = Σ_r x[r·ld + j] for j < cols.
func colSum(dst, x []float64, rows, cols, ld int) {
	clear(dst[:cols])
	for r := range rows {
		row := x[r*ld : r*ld+cols]
		for j, v := range row {
			dst[j] += v
		}
	}
}
