package gctest

import (
	"runtime"
	"testing"
)

type box struct{ _ [64]byte }

func TestCollected(t *testing.T) {
	free := func() <-chan struct{} {
		ch := make(chan struct{})
		runtime.AddCleanup(new(box), func(ch chan struct{}) { close(ch) }, ch)
		return ch
	}
	if !Collected(free()) {
		t.Error("an unreachable object was not collected")
	}
	kept := new(box)
	ch := make(chan struct{})
	runtime.AddCleanup(kept, func(ch chan struct{}) { close(ch) }, ch)
	if Collected(ch) {
		t.Error("a reachable object was reported collected")
	}
	runtime.KeepAlive(kept)
}
