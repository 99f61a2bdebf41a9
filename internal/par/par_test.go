package par

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
)

func TestForCallsEveryIndexOnce(t *testing.T) {
	for _, tc := range []struct{ n, workers int }{{0, 0}, {1, 0}, {7, 3}, {1000, 0}, {5, 1}} {
		counts := make([]atomic.Int32, tc.n)
		if err := For(context.Background(), tc.n, tc.workers, func(k int) { counts[k].Add(1) }); err != nil {
			t.Fatalf("n=%d: %v", tc.n, err)
		}
		for k := range counts {
			if c := counts[k].Load(); c != 1 {
				t.Fatalf("n=%d workers=%d: f(%d) ran %d times", tc.n, tc.workers, k, c)
			}
		}
	}
}

func TestForCarriesAWorkerPanicToTheCaller(t *testing.T) {
	defer func() {
		v := recover()
		p, ok := v.(*Panic)
		if !ok {
			t.Fatalf("recovered %T %v, want *Panic", v, v)
		}
		if p.Value != "boom 3" || len(p.Stack) == 0 {
			t.Fatalf("panic value %v, stack %d bytes", p.Value, len(p.Stack))
		}
	}()
	For(context.Background(), 100, 4, func(k int) {
		if k == 3 {
			panic("boom 3")
		}
	})
	t.Fatal("For returned after a worker panicked")
}

func TestForStopsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	var ran atomic.Int32
	err := For(ctx, 100, 2, func(int) { ran.Add(1) })
	if !errors.Is(err, context.Canceled) || ran.Load() != 0 {
		t.Fatalf("err %v after %d calls, want context.Canceled after none", err, ran.Load())
	}
}
