package audit

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"gonum.org/v1/gonum/stat"
	"gonum.org/v1/gonum/stat/distuv"

	"github.com/dpsql/dpsql/budget"
	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/noise"
)

// DefaultAlpha is the default level of each Clopper–Pearson bound.
const DefaultAlpha = 1e-3

// NoiseProvider returns the noise source of a server's release-th release
// (0, 1, …) of the same request.
type NoiseProvider func(release int) *noise.Source

// Derivation is how a server keys its noise: every call is a new server
// (a new secret, if it has one) and returns its NoiseProvider.
type Derivation func() NoiseProvider

// Fresh is dpsql's derivation: every release gets a source keyed from
// crypto/rand.
func Fresh() NoiseProvider {
	return func(int) *noise.Source { return noise.NewSource() }
}

// Config describes one audit.
type Config struct {
	// Mechanism names the audited mechanism in the report.
	Mechanism string
	// Runner is the mechanism with its options fixed.
	Runner synth.Runner
	// Scenario is the pair of neighbouring datasets; nil means
	// DefaultScenario.
	Scenario *Scenario
	// Epsilon and Delta are the claimed guarantee of one release: the runner
	// is given ρ = budget.RhoFromEpsilonDelta(Epsilon, Delta).
	Epsilon, Delta float64
	// Runs is the number of runs on each dataset (Release) or of trials per
	// dataset (Repeat). The first half chooses the test, the second half
	// evaluates it; at least 20.
	Runs int
	// Alpha is the level of each Clopper–Pearson bound; 0 means
	// DefaultAlpha.
	Alpha float64
	// Noise keys the releases; nil means Fresh.
	Noise Derivation
	// Workers bounds the runs in parallel; 0 means GOMAXPROCS.
	Workers int
}

// Report is the outcome of an audit.
type Report struct {
	Mechanism string
	// Attack is "release" (one release, Release) or "repeat" (two releases
	// of the same request, Repeat).
	Attack string
	// Epsilon, Delta and Rho are the claimed guarantee of what the attacker
	// sees: one release, or two for Repeat (ρ doubled, ε converted back).
	Epsilon, Delta, Rho float64
	Runs                int
	Alpha               float64
	// Statistic is the test statistic chosen on the first half of the runs,
	// Event the threshold event on it, and Favours the dataset on which the
	// event is likelier ("D'" with the target row, "D" without).
	Statistic, Event, Favours string
	// P and Q are the frequencies of the event on the favoured and the other
	// dataset in the second half of the runs, PLo and QHi their
	// Clopper–Pearson bounds.
	P, Q, PLo, QHi float64
	// EpsilonHat = ln((PLo − Delta)/QHi) is a lower bound on the ε of the
	// mechanism, valid with probability at least 1 − 2·Alpha.
	EpsilonHat float64
	// Correlation is, for Repeat, the correlation of the statistic of two
	// releases on the same data (0 for independent noise), Correlated
	// whether it is significant at level Alpha, and Identical the number of
	// trials whose two releases on the same data were identical.
	Correlation float64
	Correlated  bool
	Identical   int
	// Pass is EpsilonHat ≤ Epsilon and, for Repeat, not Correlated.
	Pass    bool
	Elapsed time.Duration
}

// String formats r as one line of key=value fields.
func (r *Report) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "mechanism=%s epsilon=%.4g delta=%.3g runs=%d statistic=%s p=%.4f q=%.4f epsilon_hat=%.4f pass=%t",
		r.Mechanism, r.Epsilon, r.Delta, r.Runs, r.Event, r.P, r.Q, r.EpsilonHat, r.Pass)
	fmt.Fprintf(&b, " attack=%s favours=%s p_lo=%.4f q_hi=%.4f alpha=%.3g", r.Attack, r.Favours, r.PLo, r.QHi, r.Alpha)
	if r.Attack == "repeat" {
		fmt.Fprintf(&b, " correlation=%.4f identical=%d", r.Correlation, r.Identical)
	}
	fmt.Fprintf(&b, " seconds=%.1f", r.Elapsed.Seconds())
	return b.String()
}

// check validates c and fills in defaults; it returns ρ.
func (c *Config) check() (float64, error) {
	if c.Runner == nil {
		return 0, errors.New("audit: no runner")
	}
	if c.Runs < 20 {
		return 0, fmt.Errorf("audit: %d runs, want at least 20", c.Runs)
	}
	if c.Alpha == 0 {
		c.Alpha = DefaultAlpha
	}
	if !(c.Alpha > 0 && c.Alpha < 0.5) {
		return 0, fmt.Errorf("audit: alpha %v outside (0, 0.5)", c.Alpha)
	}
	if c.Scenario == nil {
		c.Scenario = DefaultScenario()
	}
	if c.Noise == nil {
		c.Noise = Fresh
	}
	if c.Workers <= 0 {
		c.Workers = runtime.GOMAXPROCS(0)
	}
	rho, err := budget.RhoFromEpsilonDelta(c.Epsilon, c.Delta)
	if err != nil {
		return 0, fmt.Errorf("audit: %w", err)
	}
	return rho, nil
}

// Release audits one release: it runs the mechanism Runs times on D and on
// D', each with its own noise, computes every test statistic of each
// release, chooses the statistic and threshold event that best separate D
// from D' on the first half of the runs, and bounds ε from that event's
// frequencies on the second half.
func Release(ctx context.Context, c Config) (*Report, error) {
	start := time.Now()
	rho, err := c.check()
	if err != nil {
		return nil, err
	}
	samples := newSamples(c.Runs)
	err = parallel(ctx, c.Workers, 2*c.Runs, func(i int) error {
		x, run := i%2, i/2
		_, v, err := c.release(ctx, x, rho, c.Noise()(0))
		if err != nil {
			return err
		}
		samples.set(x, run, v)
		return nil
	})
	if err != nil {
		return nil, err
	}
	eps, err := budget.EpsilonFromRhoDelta(rho, c.Delta)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	r := &Report{Mechanism: c.Mechanism, Attack: "release", Epsilon: eps, Delta: c.Delta, Rho: rho, Runs: c.Runs, Alpha: c.Alpha}
	if err := samples.judge(r, ""); err != nil {
		return nil, err
	}
	r.Pass = r.EpsilonHat <= r.Epsilon
	r.Elapsed = time.Since(start)
	return r, nil
}

// Repeat audits the derivation of the noise by the attack of running the
// same request twice: each trial is a new server (c.Noise()) that releases
// once on D and once more on D or D'. The test statistics are the
// differences between the two releases' statistics, so noise that repeats
// cancels and the second release gives the target row away. The claim
// checked is the one of two releases (2ρ); besides, the statistic of the two
// releases on the same data must not be correlated.
func Repeat(ctx context.Context, c Config) (*Report, error) {
	start := time.Now()
	rho, err := c.check()
	if err != nil {
		return nil, err
	}
	samples := newSamples(c.Runs)
	// first and second: the llr (statistic 0) of both releases of the
	// trials on D alone.
	first, second := make([]float64, c.Runs), make([]float64, c.Runs)
	var identical atomic.Int64
	err = parallel(ctx, c.Workers, 2*c.Runs, func(i int) error {
		x, trial := i%2, i/2
		provider := c.Noise()
		var res [2]*synth.Result
		var v [2][]float64
		for k, data := range [2]int{0, x} {
			var err error
			if res[k], v[k], err = c.release(ctx, data, rho, provider(k)); err != nil {
				return err
			}
		}
		diff := make([]float64, len(v[0]))
		for s := range diff {
			diff[s] = v[1][s] - v[0][s]
		}
		samples.set(x, trial, diff)
		if x == 0 {
			first[trial], second[trial] = v[0][0], v[1][0]
			if sameMeasurements(res[0], res[1]) {
				identical.Add(1)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	eps, err := budget.EpsilonFromRhoDelta(2*rho, c.Delta)
	if err != nil {
		return nil, fmt.Errorf("audit: %w", err)
	}
	r := &Report{Mechanism: c.Mechanism, Attack: "repeat", Epsilon: eps, Delta: c.Delta, Rho: 2 * rho, Runs: c.Runs, Alpha: c.Alpha}
	if err := samples.judge(r, "diff-"); err != nil {
		return nil, err
	}
	r.Identical = int(identical.Load())
	// Fisher's z of the correlation is about N(0, 1/(n−3)) for independent
	// releases; a constant statistic (NaN) is not what fresh noise gives.
	r.Correlation = stat.Correlation(first, second, nil)
	z := math.Atanh(r.Correlation) * math.Sqrt(float64(c.Runs-3))
	r.Correlated = !(math.Abs(z) <= distuv.UnitNormal.Quantile(1-c.Alpha/2))
	r.Pass = r.EpsilonHat <= r.Epsilon && !r.Correlated
	r.Elapsed = time.Since(start)
	return r, nil
}

// release runs the mechanism once on dataset x (0: D, 1: D') with budget
// rho and noise src, and returns the release and its statistics.
func (c *Config) release(ctx context.Context, x int, rho float64, src *noise.Source) (*synth.Result, []float64, error) {
	sc := c.Scenario
	// Public: D stands in for a public table for mechanisms that need one
	// (fixed across the neighbours; the others ignore it).
	res, err := c.Runner.Run(ctx, &synth.Input{Data: sc.data(x), Workload: sc.Workload, Rho: rho, Noise: src, Public: sc.D})
	if err != nil {
		return nil, nil, fmt.Errorf("audit: %s on %s: %w", c.Mechanism, datasetName(x), err)
	}
	v, err := sc.values(res)
	if err != nil {
		return nil, nil, err
	}
	return res, v, nil
}

// sameMeasurements reports whether a and b released exactly the same
// measurements.
func sameMeasurements(a, b *synth.Result) bool {
	if len(a.Measurements) != len(b.Measurements) {
		return false
	}
	for i := range a.Measurements {
		x, y := a.Measurements[i], b.Measurements[i]
		if synth.Key(x.Attrs) != synth.Key(y.Attrs) || len(x.Y) != len(y.Y) {
			return false
		}
		for j := range x.Y {
			if x.Y[j] != y.Y[j] {
				return false
			}
		}
	}
	return true
}

func datasetName(x int) string {
	if x == 0 {
		return "D"
	}
	return "D'"
}

// samples holds the statistics of every run: v[x][s][run] is statistic s of
// run run on dataset x (0: D, 1: D').
type samples struct {
	runs int
	v    [2][][]float64
}

func newSamples(runs int) *samples {
	s := &samples{runs: runs}
	for x := range s.v {
		s.v[x] = make([][]float64, len(statistics))
		for k := range s.v[x] {
			s.v[x][k] = make([]float64, runs)
		}
	}
	return s
}

// set stores the statistics of one run; runs write disjoint entries.
func (s *samples) set(x, run int, v []float64) {
	for k, val := range v {
		s.v[x][k][run] = val
	}
}

// judge chooses the statistic and event on the first half of the runs and
// fills r's event, frequencies, bounds and EpsilonHat from the second half.
// prefix is put before the statistic's name.
func (s *samples) judge(r *Report, prefix string) error {
	h := s.runs / 2
	n2 := s.runs - h
	first, second := newBounds(h, r.Alpha), newBounds(n2, r.Alpha)
	best, bestEps := event{Stat: -1}, math.Inf(-1)
	for k := range statistics {
		if hasNaN(s.v[0][k]) || hasNaN(s.v[1][k]) {
			continue // not applicable to this mechanism
		}
		e, eps := bestEvent(k, s.v[0][k][:h], s.v[1][k][:h], r.Delta, first)
		if best.Stat < 0 || eps > bestEps {
			best, bestEps = e, eps
		}
	}
	if best.Stat < 0 {
		return errors.New("audit: no test statistic applies to the releases")
	}
	fav, other := s.v[best.Favours][best.Stat][h:], s.v[1-best.Favours][best.Stat][h:]
	kx, ky := best.count(fav), best.count(other)
	r.Statistic = prefix + statistics[best.Stat].name
	op := ">="
	if best.Below {
		op = "<"
	}
	r.Event = fmt.Sprintf("%s%s%.4g", r.Statistic, op, best.Threshold)
	r.Favours = datasetName(best.Favours)
	r.P, r.Q = float64(kx)/float64(n2), float64(ky)/float64(n2)
	r.PLo, r.QHi = second.lower(kx), second.upper(ky)
	r.EpsilonHat = EpsilonLowerBound(r.PLo, r.QHi, r.Delta)
	return nil
}

func hasNaN(xs []float64) bool {
	for _, x := range xs {
		if math.IsNaN(x) {
			return true
		}
	}
	return false
}

// parallel calls f(0), …, f(n−1) on up to workers goroutines. It stops
// starting calls at the first error or when ctx is done, and returns that
// error.
func parallel(ctx context.Context, workers, n int, f func(i int) error) error {
	var next atomic.Int64
	var mu sync.Mutex
	var first error
	fail := func(err error) {
		mu.Lock()
		if first == nil {
			first = err
		}
		mu.Unlock()
	}
	failed := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return first != nil
	}
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= n || failed() {
					return
				}
				if err := ctx.Err(); err != nil {
					fail(fmt.Errorf("audit: %w", err))
					return
				}
				if err := f(i); err != nil {
					fail(err)
					return
				}
			}
		})
	}
	wg.Wait()
	return first
}
