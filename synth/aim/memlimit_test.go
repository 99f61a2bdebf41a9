package aim

import (
	"math"
	"runtime/debug"
	"testing"
)

// TestMemLimit: a run takes the runtime's memory limit only when nobody set
// one, sets it from the model size (never below the live heap), leaves it
// alone while another run holds it, and restores it on release; an
// operator's limit (GOMEMLIMIT) is never touched.
func TestMemLimit(t *testing.T) {
	orig := debug.SetMemoryLimit(-1)
	defer debug.SetMemoryLimit(orig)
	debug.SetMemoryLimit(math.MaxInt64)

	a := acquireMemLimit()
	if !a.owned {
		t.Fatal("the free limit was not taken")
	}
	b := acquireMemLimit()
	if b.owned {
		t.Error("a second run took the limit the first holds")
	}
	a.set(10)
	got := debug.SetMemoryLimit(-1)
	if got < 4*10<<20+memLimitSlack {
		t.Errorf("limit %d for a 10 MB model, want at least %d", got, 4*10<<20+memLimitSlack)
	}
	if live := liveHeap(); !(float64(got) > live) {
		t.Errorf("limit %d below the live heap %v", got, live)
	}
	b.set(1000)
	if l := debug.SetMemoryLimit(-1); l != got {
		t.Errorf("a run without the limit changed it to %d", l)
	}
	b.release()
	a.release()
	if l := debug.SetMemoryLimit(-1); l != math.MaxInt64 {
		t.Errorf("limit %d after release, want none", l)
	}
	if c := acquireMemLimit(); !c.owned {
		t.Error("the limit was not free again after release")
	} else {
		c.release()
	}

	const operator = 3 << 30
	debug.SetMemoryLimit(operator)
	d := acquireMemLimit()
	d.set(10)
	d.release()
	if d.owned || debug.SetMemoryLimit(-1) != operator {
		t.Errorf("the operator's limit became %d", debug.SetMemoryLimit(-1))
	}
}
