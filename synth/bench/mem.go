package bench

import (
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"time"
)

// memWatch measures one run's own peak memory: the resident set (RSS) and
// the Go heap's live-plus-unswept objects. Between runs the heap is
// collected and returned to the OS, and on Linux the kernel's high-water
// mark VmHWM is reset (writing "5" to /proc/self/clear_refs), so a run's
// peak does not include an earlier run's. A sampler goroutine also reads
// the resident set and the heap every few milliseconds: it is the only
// RSS figure where VmHWM cannot be reset, and the only heap figure at all
// (so a heap peak shorter than the period can be missed).
//
// The resident set includes what the process holds whatever runs: the
// pages of the binary it has touched (file-backed, ~35–40 MB of dpsql's),
// the runtime's own memory, the loaded data and the bench's state. baseMB
// is the resident set when the run starts, after the collection above: the
// run's own growth is its peak minus that.
type memWatch struct {
	hwmReset bool
	baseMB   float64
	stop     chan struct{}
	wg       sync.WaitGroup
	// statm, kept open, gives the sampler the resident set in one pread
	// (a few µs; reading /proc/self/status whole took ~55 µs, 1 % of a
	// run's CPU at the sampling period); nil where it cannot be opened.
	statm *os.File
	buf   [128]byte

	mu              sync.Mutex
	rssPeak, heapMB float64
}

// samplePeriod is the sampler's period.
const samplePeriod = 5 * time.Millisecond

// startMemWatch frees what earlier runs left, resets the high-water mark and
// starts sampling.
func startMemWatch() *memWatch {
	runtime.GC()
	debug.FreeOSMemory()
	w := &memWatch{stop: make(chan struct{})}
	w.hwmReset = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
	w.baseMB = statusMB("VmRSS:")
	if f, err := os.Open("/proc/self/statm"); err == nil {
		w.statm = f
	}
	w.sample()
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		t := time.NewTicker(samplePeriod)
		defer t.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-t.C:
				w.sample()
			}
		}
	}()
	return w
}

// heapSample is the heap objects metric, reused by sample.
var heapSample = []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}

func (w *memWatch) sample() {
	rss := w.rssMB()
	metrics.Read(heapSample)
	var heap float64
	if heapSample[0].Value.Kind() == metrics.KindUint64 {
		heap = float64(heapSample[0].Value.Uint64()) / (1 << 20)
	}
	w.mu.Lock()
	w.rssPeak = max(w.rssPeak, rss)
	w.heapMB = max(w.heapMB, heap)
	w.mu.Unlock()
}

// rssMB returns the resident set in MB, from statm if open. Only the
// sampler calls it (w.buf is its scratch).
func (w *memWatch) rssMB() float64 {
	if w.statm != nil {
		if mb, ok := statmMB(w.statm, w.buf[:]); ok {
			return mb
		}
	}
	return statusMB("VmRSS:")
}

// statmMB reads the resident set in MB from an open /proc/self/statm (its
// second field, in pages: status's VmRSS), using buf.
func statmMB(f *os.File, buf []byte) (float64, bool) {
	n, err := f.ReadAt(buf, 0)
	if n == 0 || (err != nil && err != io.EOF) {
		return 0, false
	}
	fields := strings.Fields(string(buf[:n]))
	if len(fields) < 2 {
		return 0, false
	}
	pages, err := strconv.ParseFloat(fields[1], 64)
	if err != nil {
		return 0, false
	}
	return pages * float64(os.Getpagesize()) / (1 << 20), true
}

// end stops sampling and returns the run's peak RSS (0 if unknown) and
// sampled peak heap, in MB.
func (w *memWatch) end() (rssMB, heapMB float64) {
	close(w.stop)
	w.wg.Wait()
	w.sample()
	if w.statm != nil {
		w.statm.Close()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	rssMB = w.rssPeak
	if w.hwmReset {
		rssMB = max(rssMB, statusMB("VmHWM:"))
	}
	return rssMB, w.heapMB
}

// statusMB reads a kB field of /proc/self/status in MB (0 if unavailable).
func statusMB(field string) float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			if f := strings.Fields(v); len(f) > 0 {
				if kb, err := strconv.ParseFloat(f[0], 64); err == nil {
					return kb / 1024
				}
			}
		}
	}
	return 0
}

// peakMB is the process's peak resident set since it started or since the
// last reset (VmHWM), falling back to the memory the Go runtime obtained.
func peakMB() float64 {
	if mb := statusMB("VmHWM:"); mb > 0 {
		return mb
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return float64(ms.Sys) / (1 << 20)
}
