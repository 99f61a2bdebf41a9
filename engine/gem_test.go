package engine

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/dolthub/go-mysql-server/sql"
	"github.com/dolthub/vitess/go/mysql"

	"github.com/dpsql/dpsql/budget"
	"github.com/dpsql/dpsql/synth"
)

// TestCreateSyntheticGEMAndRAP: gem, rap_softmax and rap run end to end
// through SQL: the ledger is charged the statement's ρ once, the table
// holds the requested rows in the domain, and the release keeps the
// measurements and the mechanism's artifact (generator weights or relaxed
// table).
func TestCreateSyntheticGEMAndRAP(t *testing.T) {
	f := newSynthFixture(t)
	for _, c := range []struct{ mech, opts, magic string }{
		{"gem", "ROUNDS = 3, BATCH = 100, LATENT = 8, HIDDEN = 16", "DPGEM"},
		{"rap_softmax", "ROUNDS = 2, PER_ROUND = 1, RELAXED = 100, MAX_ITERS = 100", "DPRAP"},
		{"rap", "ROUNDS = 2, PER_ROUND = 1, RELAXED = 100, MAX_ITERS = 100", "DPRAP"},
	} {
		before := f.budget()
		f.exec("CREATE SYNTHETIC TABLE syn." + c.mech + " FROM raw.people USING " + c.mech +
			" WITH EPSILON = 1, ROWS = 300, SEED = 5, " + c.opts)
		spent := f.budget().RhoSpent - before.RhoSpent
		if rho := wantRho(t, 1); spent < rho || spent > rho+math.Ldexp(1, -40) {
			t.Errorf("%s: ρ spent %.15g, want %.15g rounded up", c.mech, spent, rho)
		}
		es := f.entries()
		if last := es[len(es)-1]; last.Status != budget.StatusCommitted || last.Mechanism != c.mech || last.Rho != spent {
			t.Errorf("%s: ledger entry %+v", c.mech, last)
		}
		if n := f.rows("SELECT COUNT(*) FROM syn." + c.mech); toInt(n[0][0]) != 300 {
			t.Errorf("%s: COUNT(*) = %v, want 300", c.mech, n)
		}
		for _, r := range f.rows("SELECT age, COUNT(*) FROM syn." + c.mech + " GROUP BY age") {
			if a := toInt(r[0]); a < 0 || a > 9 {
				t.Errorf("%s: age %d outside the domain", c.mech, a)
			}
		}
		rec, _, release := f.record("syn", c.mech)
		if rec.Output != "synthetic rows" || rec.Rounds == 0 {
			t.Errorf("%s: record output %q, %d rounds", c.mech, rec.Output, rec.Rounds)
		}
		res, err := synth.UnmarshalRelease(release)
		if err != nil {
			t.Fatalf("%s: release: %v", c.mech, err)
		}
		if len(res.Measurements) != rec.Rounds || !strings.HasPrefix(string(res.Artifact), c.magic) || res.RhoUsed > spent {
			t.Errorf("%s: release has %d measurements for %d rounds, artifact %.5q, ρ used %g", c.mech,
				len(res.Measurements), rec.Rounds, res.Artifact, res.RhoUsed)
		}
	}
}

// TestCreateSyntheticGEMCancelled: KILL QUERY during GEM's second round
// stops it; the charge stays spent and no table is left.
func TestCreateSyntheticGEMCancelled(t *testing.T) {
	f := newSynthFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pl := &cancelOnRound{round: "round 2,", cancel: cancel}
	base := sql.NewBaseSessionWithClientServer("", sql.Client{User: RootUser, Address: localhost}, 9)
	sctx := sql.NewContext(ctx, sql.WithSession(f.e.store.NewSession(base)), sql.WithProcessList(pl))
	_, _, err := query(f.e, sctx, "CREATE SYNTHETIC TABLE syn.k FROM raw.people USING gem WITH EPSILON = 1, BATCH = 100, LATENT = 8, HIDDEN = 16")
	if got := errCode(err); got != mysql.ERQueryInterrupted {
		t.Fatalf("code %d (%v), want %d", got, err, mysql.ERQueryInterrupted)
	}
	if f.tableExists("syn", "k") {
		t.Fatal("a cancelled synthesis left a table")
	}
	es := f.entries()
	if last := es[len(es)-1]; last.Status != budget.StatusFailed || last.Mechanism != "gem" {
		t.Errorf("entry %+v, want failed", last)
	}
}

// TestCreateSyntheticGEMPub: gem_pub reads a table declared public beside
// the private source (PUBLIC = db.t), at no extra charge, and is refused
// without one before anything is charged.
func TestCreateSyntheticGEMPub(t *testing.T) {
	f := newSynthFixture(t)
	f.exec("CREATE TABLE raw.pubpeople (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, sex ENUM('F','M') NOT NULL,"+
		" age INT NOT NULL CHECK (age BETWEEN 0 AND 9), city VARCHAR(10) CHECK (city IN ('a','b','c')))",
		"INSERT INTO raw.pubpeople (sex, age, city) SELECT sex, age, city FROM raw.people WHERE id % 4 = 0",
		"ALTER TABLE raw.pubpeople SET PUBLIC")
	before := f.budget()
	if _, _, err := query(f.e, f.root, "CREATE SYNTHETIC TABLE syn.gp FROM raw.people USING gem_pub WITH EPSILON = 1"); err == nil {
		t.Fatal("gem_pub without PUBLIC ran")
	}
	if b := f.budget(); b.RhoSpent != before.RhoSpent {
		t.Errorf("refused gem_pub spent ρ %g", b.RhoSpent-before.RhoSpent)
	}
	f.exec("CREATE SYNTHETIC TABLE syn.gp FROM raw.people USING gem_pub WITH EPSILON = 1, ROWS = 200, PUBLIC = raw.pubpeople," +
		" ROUNDS = 2, BATCH = 100, LATENT = 8, HIDDEN = 16, PRETRAIN_ITERS = 50")
	spent := f.budget().RhoSpent - before.RhoSpent
	if rho := wantRho(t, 1); spent < rho || spent > rho+math.Ldexp(1, -40) {
		t.Errorf("ρ spent %.15g, want %.15g rounded up", spent, rho)
	}
	if n := f.rows("SELECT COUNT(*) FROM syn.gp"); toInt(n[0][0]) != 200 {
		t.Errorf("COUNT(*) = %v, want 200", n)
	}
}
