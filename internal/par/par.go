// Package par runs independent loop iterations on several goroutines and
// carries a panic in any of them back to the caller's goroutine.
//
// A panic in a goroutine of its own ends the process, whoever recovers in
// the goroutine that started it. dpsql runs mechanisms after charging a
// privacy budget, and a crash there would leave the charge reserved and
// every other client disconnected, so every worker goroutine of the
// numeric code runs through this package: the first panic is recovered,
// the remaining iterations are skipped, and the caller panics again with a
// *Panic holding the value and the worker's stack, where the engine's
// recover turns it into a failed ledger entry.
package par

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
	"sync/atomic"
)

// Panic is a panic recovered in a worker goroutine and raised again in
// the goroutine that waited for it.
type Panic struct {
	Value any    // the value passed to panic
	Stack []byte // the worker's stack when it panicked
}

func (p *Panic) Error() string {
	return fmt.Sprintf("panic in a worker goroutine: %v\n%s", p.Value, p.Stack)
}

// Catcher records the first panic of a group of goroutines.
type Catcher struct {
	p atomic.Pointer[Panic]
}

// Recover is deferred by a worker goroutine: it recovers a panic and
// records it if it is the first.
func (c *Catcher) Recover() {
	if v := recover(); v != nil {
		c.p.CompareAndSwap(nil, &Panic{Value: v, Stack: debug.Stack()})
	}
}

// Panicked reports whether a worker has panicked.
func (c *Catcher) Panicked() bool { return c.p.Load() != nil }

// Repanic panics with the recorded *Panic, if any. Call it in the
// goroutine that waited for the workers.
func (c *Catcher) Repanic() {
	if p := c.p.Load(); p != nil {
		panic(p)
	}
}

// For calls f(k) for every k in [0, n) on up to workers goroutines
// (GOMAXPROCS when workers ≤ 0), each claiming the next k in turn. It
// stops claiming when ctx is cancelled (some calls are then skipped) and
// returns ctx's error. If a call panics, the others stop claiming and For
// panics with a *Panic once every goroutine has returned. f must be safe
// for concurrent use with distinct k.
func For(ctx context.Context, n, workers int, f func(k int)) error {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	var (
		next  atomic.Int64
		wg    sync.WaitGroup
		catch Catcher
	)
	for range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer catch.Recover()
			for !catch.Panicked() && ctx.Err() == nil {
				k := int(next.Add(1)) - 1
				if k >= n {
					return
				}
				f(k)
			}
		}()
	}
	wg.Wait()
	catch.Repanic()
	return ctx.Err()
}
