package audit

import (
	"context"
	"errors"
	"math"
	"testing"

	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/noise"
	"github.com/dpsql/dpsql/synth/registry"
)

// The audits here run at ε = 1, δ = 10⁻⁶ with ShortRuns runs per dataset
// and α = 10⁻³ per Clopper–Pearson bound (DefaultAlpha). A correct
// mechanism fails an audit only if one of its two bounds is wrong, with
// probability at most 2α = 0.2%, and in fact far less: at this size the
// attack cannot come near ε = 1 against the Gaussian noise of ρ(1, 10⁻⁶)
// (its ε̂ is 0 in practice). The broken mechanisms below are separated from
// D' nearly or exactly deterministically, so they fail with overwhelming
// probability.
const (
	testEpsilon = 1
	testDelta   = 1e-6
)

func newRunner(t *testing.T, name string) synth.Runner {
	t.Helper()
	m, err := registry.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	r, err := m.New(Options(name))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// audit runs attack (Release or Repeat) at the test's size and claim.
func audit(t *testing.T, attack func(context.Context, Config) (*Report, error), c Config) *Report {
	t.Helper()
	c.Epsilon, c.Delta, c.Runs = testEpsilon, testDelta, ShortRuns
	r, err := attack(context.Background(), c)
	if err != nil {
		t.Fatal(err)
	}
	t.Log(r)
	return r
}

// overspend gives its mechanism factor times the ρ it is given while
// claiming to have spent only that: an under-noised mechanism.
type overspend struct {
	synth.Runner
	factor float64
}

func (o overspend) Run(ctx context.Context, in *synth.Input) (*synth.Result, error) {
	more := *in
	more.Rho *= o.factor
	res, err := o.Runner.Run(ctx, &more)
	if res != nil {
		res.RhoUsed /= o.factor
	}
	return res, err
}

// fixedKey keys every release of every server with the same secret, seed
// and label: the noise never changes at all.
func fixedKey() Derivation {
	secret := noise.NewSecret()
	return func() NoiseProvider {
		return func(int) *noise.Source { return noise.Derive(secret, 7, "same") }
	}
}

// seededRequest is the derivation of item 1: each server has its own
// secret, and keys a seeded request's noise by (secret, SEED, table ID,
// target), so running the same request again repeats its noise.
func seededRequest() NoiseProvider {
	secret := noise.NewSecret()
	return func(int) *noise.Source { return noise.Derive(secret, 7, "dpsql/create-synthetic/v1/1/db.t") }
}

// TestAuditShort is the CI version of dpsql audit: every registered
// mechanism passes, and the audit flags an under-noised mechanism and
// noise that does not change between runs.
func TestAuditShort(t *testing.T) {
	for _, m := range registry.All() {
		t.Run(m.Name(), func(t *testing.T) {
			r := audit(t, Release, Config{Mechanism: m.Name(), Runner: newRunner(t, m.Name())})
			if !r.Pass || r.EpsilonHat > r.Epsilon || r.Attack != "release" {
				t.Errorf("%s fails its audit: %v", m.Name(), r)
			}
			if math.Abs(r.Epsilon-testEpsilon) > 1e-6 {
				t.Errorf("claimed ε %v, want %v", r.Epsilon, testEpsilon)
			}
		})
	}
	// 100 times the claimed ρ: σ ten times too small, a true ε near 11.
	for _, name := range []string{"gaussian", "independent"} {
		t.Run(name+"-underpriced", func(t *testing.T) {
			r := audit(t, Release, Config{Mechanism: name, Runner: overspend{newRunner(t, name), 100}})
			if r.Pass || !(r.EpsilonHat > r.Epsilon) {
				t.Errorf("under-noised %s passes: %v", name, r)
			}
		})
	}
	t.Run("gaussian-fixed-key", func(t *testing.T) {
		r := audit(t, Release, Config{Mechanism: "gaussian", Runner: newRunner(t, "gaussian"), Noise: fixedKey()})
		if r.Pass || r.P != 1 || r.Q != 0 {
			t.Errorf("deterministic noise passes: %v", r)
		}
	})
}

// TestRepeat is the audit of the noise derivation: running the same request
// twice with fresh noise reveals no more than two releases may, and with
// item 1's derivation the two releases subtract to the target row.
func TestRepeat(t *testing.T) {
	gauss := newRunner(t, "gaussian")
	t.Run("fresh", func(t *testing.T) {
		r := audit(t, Repeat, Config{Mechanism: "gaussian", Runner: gauss})
		if !r.Pass || r.Correlated || r.Identical != 0 || r.Attack != "repeat" {
			t.Errorf("fresh noise fails the repeat audit: %v", r)
		}
	})
	for _, c := range []struct {
		name string
		d    Derivation
	}{{"seeded-request", seededRequest}, {"fixed-key", fixedKey()}} {
		t.Run(c.name, func(t *testing.T) {
			r := audit(t, Repeat, Config{Mechanism: "gaussian", Runner: gauss, Noise: c.d})
			if r.Pass || !(r.EpsilonHat > r.Epsilon) || !r.Correlated || r.Identical != ShortRuns {
				t.Errorf("repeated noise passes: %v", r)
			}
			// The difference of the two releases is exactly the row.
			if r.P != 1 || r.Q != 0 || r.Favours != "D'" {
				t.Errorf("the difference of two releases does not give the row away: %v", r)
			}
		})
	}
	// One release keyed by item 1's derivation is a correct release.
	t.Run("seeded-request-once", func(t *testing.T) {
		r := audit(t, Release, Config{Mechanism: "gaussian", Runner: gauss, Noise: seededRequest})
		if !r.Pass {
			t.Errorf("one seeded release fails: %v", r)
		}
	})
}

// TestAnswer checks the exact answers the likelihood ratio is computed
// from against releases with negligible noise, for every mechanism and so
// for MST's coarse and Query measurements too.
func TestAnswer(t *testing.T) {
	sc := DefaultScenario()
	for _, m := range registry.All() {
		res, err := newRunner(t, m.Name()).Run(context.Background(), &synth.Input{
			Data: sc.D, Workload: sc.Workload, Rho: 1e8, Noise: noise.NewSource(), Public: sc.D})
		if err != nil {
			t.Fatal(err)
		}
		coarse := false
		for i := range res.Measurements {
			ms := &res.Measurements[i]
			coarse = coarse || ms.Coarse != nil
			a, err := answer(ms, sc.D)
			if err != nil {
				t.Fatal(err)
			}
			if len(a) != len(ms.Y) {
				t.Fatalf("%s: measurement %d on %v: %d answers for %d values", m.Name(), i, ms.Attrs, len(a), len(ms.Y))
			}
			for j := range a {
				if math.Abs(a[j]-ms.Y[j]) > 1e-6*max(1, math.Abs(a[j])) {
					t.Fatalf("%s: measurement %d on %v: answer %v, released %v (σ %v)", m.Name(), i, ms.Attrs, a, ms.Y, ms.Sigma)
				}
			}
		}
		if m.Name() == "mst" && !coarse {
			t.Error("mst: no coarse measurement; the scenario's rare value should be merged")
		}
	}
}

func TestCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := Release(ctx, Config{Mechanism: "gaussian", Runner: newRunner(t, "gaussian"), Epsilon: 1, Delta: 1e-6, Runs: 100})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled audit: %v, want context.Canceled", err)
	}
	if _, err := Release(context.Background(), Config{Runner: newRunner(t, "gaussian"), Epsilon: 1, Delta: 1e-6, Runs: 10}); err == nil {
		t.Error("10 runs accepted")
	}
}
