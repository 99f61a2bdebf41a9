package pgm

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// hugePage is the size of the x86-64 and arm64 transparent huge page.
const hugePage = 2 << 20

// hugePages asks the kernel to back the 2 MB-aligned interior of a model
// arena with transparent huge pages (MADV_HUGEPAGE), before it is first
// touched: the fits stream arenas of tens of megabytes tens of times per
// iteration, and every collection between rounds returns their pages, so
// with 4 KB pages a run takes hundreds of thousands of page faults and
// TLB misses. Where the system leaves huge pages to madvise (Debian's
// default), this took 4–8 % less CPU at ε = 10 (docs/aim-performance.md,
// Issue 19, eleventh pass). It is advice: it changes no value, and an
// error (a kernel without THP) is ignored.
func hugePages(x []float64) {
	if len(x)*8 < 2*hugePage {
		return
	}
	start := uintptr(unsafe.Pointer(&x[0]))
	end := start + uintptr(len(x))*8
	lo, hi := (start+hugePage-1)&^(hugePage-1), end&^(hugePage-1)
	if hi <= lo {
		return
	}
	interior := unsafe.Slice((*byte)(unsafe.Add(unsafe.Pointer(&x[0]), lo-start)), hi-lo)
	_ = unix.Madvise(interior, unix.MADV_HUGEPAGE)
}
