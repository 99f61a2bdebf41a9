package pgm

import "golang.org/x/sys/unix"

// osYield gives the CPU to another runnable thread, if any, for a spinning
// pool goroutine: runtime.Gosched only yields to goroutines, so a spinner
// would keep its core from other processes on a busy machine.
func osYield() { _, _, _ = unix.RawSyscall(unix.SYS_SCHED_YIELD, 0, 0, 0) }
