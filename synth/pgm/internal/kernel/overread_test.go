//go:build linux

package kernel

import (
	"math/rand/v2"
	"syscall"
	"testing"
	"unsafe"
)

// fenced maps pages with an inaccessible page on either side, so that a
// kernel reading or writing past either end of a slice placed against a
// fence faults.
type fenced struct {
	mem  []byte // all pages
	body []byte // the accessible pages
}

func newFenced(t *testing.T, bodyPages int) *fenced {
	t.Helper()
	ps := syscall.Getpagesize()
	mem, err := syscall.Mmap(-1, 0, (bodyPages+2)*ps, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Skipf("mmap: %v", err)
	}
	f := &fenced{mem: mem, body: mem[ps : (bodyPages+1)*ps]}
	for _, p := range [][]byte{mem[:ps], mem[(bodyPages+1)*ps:]} {
		if err := syscall.Mprotect(p, syscall.PROT_NONE); err != nil {
			t.Skipf("mprotect: %v", err)
		}
	}
	t.Cleanup(func() { syscall.Munmap(mem) })
	return f
}

// floats returns n float64s ending at the end of the body (atEnd) or
// starting at its beginning.
func (f *fenced) floats(n int, atEnd bool) []float64 {
	all := unsafe.Slice((*float64)(unsafe.Pointer(&f.body[0])), len(f.body)/8)
	if atEnd {
		return all[len(all)-n:]
	}
	return all[:n:n]
}

func (f *fenced) int32s(n int, atEnd bool) []int32 {
	all := unsafe.Slice((*int32)(unsafe.Pointer(&f.body[0])), len(f.body)/4)
	if atEnd {
		return all[len(all)-n:]
	}
	return all[:n:n]
}

// TestArchNoOverread runs every kernel on slices placed against inaccessible
// pages, at both ends and every tail length: an access beyond a slice
// crashes the test.
func TestArchNoOverread(t *testing.T) {
	fa, fb, fc, fi := newFenced(t, 2), newFenced(t, 2), newFenced(t, 2), newFenced(t, 1)
	rng := rand.New(rand.NewPCG(51, 52))
	forLevels(t, func(t *testing.T) {
		for n := 0; n <= 300; n++ {
			for _, atEnd := range []bool{true, false} {
				a, b, c := fa.floats(n, atEnd), fb.floats(n, atEnd), fc.floats(n, atEnd)
				idx := fi.int32s(n, atEnd)
				for i := range n {
					a[i], b[i], c[i] = rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64()
					idx[i] = int32(rng.IntN(n))
				}
				switch {
				case n > 8 && n%2 == 0:
					for i := range 8 { // a run of consecutive indices ending at n-1
						idx[n-8+i] = int32(n - 8 + i)
					}
				case n > 16:
					for i := range 16 { // indices repeated, ending at n-1
						idx[n-16+i] = int32(n - 8 + i/2)
					}
				}
				Expand(a, b, idx)
				Scale(a, b, idx)
				ExpShiftGather(a, b, idx)
				ExpShiftTotal(a, 0.5)
				ExpShift(b, 0.5)
				Max(a)
				ScaleAll(a, 0.5)
				Axpy(a, 0.5, b)
				AxpyTo(a, b, 0.5, c)
				DotDiff(a, b, c)
				// Reductions of every shape that fits in n cells.
				for inner := 1; inner <= n && inner <= 40; inner++ {
					for s := 1; s*inner <= n && s <= 5; s++ {
						outer := n / (s * inner)
						st := step{outer, s, inner}
						src := a[n-outer*s*inner:]
						if !atEnd {
							src = a[:outer*s*inner]
						}
						dst := c[:outer*inner]
						if atEnd {
							dst = c[n-outer*inner:]
						}
						reduceAxis(dst, src, st, false)
						reduceAxis(dst, src, st, true)
						lo := inner / 3
						reduceColumns(dst[:inner-lo], src[:s*inner], s, inner, lo, false)
						reduceColumns(dst[:inner-lo], src[:s*inner], s, inner, lo, true)
					}
				}
			}
		}
	})
}
