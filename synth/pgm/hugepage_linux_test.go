package pgm

import (
	"bufio"
	"fmt"
	"os"
	"strings"
	"testing"
	"unsafe"
)

// vmFlags returns the VmFlags of the mapping of /proc/self/smaps that
// holds addr.
func vmFlags(t *testing.T, addr uintptr) []string {
	t.Helper()
	f, err := os.Open("/proc/self/smaps")
	if err != nil {
		t.Skipf("no /proc/self/smaps: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	in := false
	for sc.Scan() {
		line := sc.Text()
		var lo, hi uintptr
		if n, _ := fmt.Sscanf(line, "%x-%x ", &lo, &hi); n == 2 && strings.Contains(line[:strings.IndexByte(line, ' ')], "-") {
			in = lo <= addr && addr < hi
			continue
		}
		if in && strings.HasPrefix(line, "VmFlags:") {
			return strings.Fields(strings.TrimPrefix(line, "VmFlags:"))
		}
	}
	t.Fatalf("no mapping holds %#x", addr)
	return nil
}

// TestHugePages: a large arena's aligned interior is marked for huge pages
// ("hg"), its values unchanged; small and empty slices are left alone.
func TestHugePages(t *testing.T) {
	if b, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled"); err != nil || strings.Contains(string(b), "[never]") {
		t.Skip("transparent huge pages are not available")
	}
	hugePages(nil)
	small := make([]float64, 1000)
	hugePages(small)
	x := make([]float64, 3*hugePage/8)
	for i := range x {
		x[i] = float64(i)
	}
	hugePages(x)
	for i, v := range x {
		if v != float64(i) {
			t.Fatalf("x[%d] = %v after hugePages", i, v)
		}
	}
	start := uintptr(unsafe.Pointer(&x[0]))
	mid := (start + hugePage - 1) &^ (hugePage - 1)
	flags := vmFlags(t, mid)
	found := false
	for _, f := range flags {
		found = found || f == "hg"
	}
	if !found {
		t.Errorf("the aligned interior's mapping has VmFlags %v, without hg", flags)
	}
}
