package engine

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/dolthub/go-mysql-server/sql"

	"github.com/dpsql/dpsql/synth"
)

// The State texts of a running synthesis, exactly (README, *Progress*).
var (
	roundState = regexp.MustCompile(`^synthesizing syn\.p: round \d+, rho used [0-9.e+-]+ of [0-9.e+-]+, model \d+\.\d\d MB$`)
	finalState = regexp.MustCompile(`^synthesizing syn\.p: final estimation, iteration \d+ of 200, rho used [0-9.e+-]+ of [0-9.e+-]+, model \d+\.\d\d MB$`)
	otherState = regexp.MustCompile(`^synthesizing syn\.p: (reading the source|writing the table|sampling rows, rho used [0-9.e+-]+ of [0-9.e+-]+, model \d+\.\d\d MB)$`)
)

func TestSynthState(t *testing.T) {
	for _, c := range []struct {
		s    synth.Status
		rows bool
		want string
	}{
		{synth.Status{Phase: "init"}, true, "synthesizing db.t: round 0, rho used 0 of 0.5, model 0.00 MB"},
		{synth.Status{Phase: "round", Round: 3, RhoUsed: 0.123456, ModelSize: 1.234}, true, "synthesizing db.t: round 3, rho used 0.1235 of 0.5, model 1.23 MB"},
		{synth.Status{Phase: "final", Round: 3, RhoUsed: 0.5, ModelSize: 2, Iter: 300, Iters: 1000}, true,
			"synthesizing db.t: final estimation, iteration 300 of 1000, rho used 0.5 of 0.5, model 2.00 MB"},
		{synth.Status{Phase: "final", Round: 3, RhoUsed: 0.5, ModelSize: 2}, true, "synthesizing db.t: sampling rows, rho used 0.5 of 0.5, model 2.00 MB"},
		{synth.Status{Phase: "final", RhoUsed: 0.5}, false, "synthesizing db.t: writing the table"},
		{synth.Status{Phase: "sample", Round: 3, RhoUsed: 0.5, ModelSize: 2}, true, "synthesizing db.t: writing the table"},
	} {
		if got := synthState("db.t", c.s, 0.5, c.rows); got != c.want {
			t.Errorf("synthState(%+v) = %q, want %q", c.s, got, c.want)
		}
	}
}

// stateRecorder is a process list that records every progress entry a
// statement adds.
type stateRecorder struct {
	sql.EmptyProcessList
	mu     sync.Mutex
	states []string
}

func (r *stateRecorder) AddTableProgress(_ uint64, name string, _ int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.states = append(r.states, name)
}

// TestSynthesisStates runs syntheses and checks every State they show: one
// line each, in the documented forms, with the final estimation reporting
// its iterations as it goes.
func TestSynthesisStates(t *testing.T) {
	f := newSynthFixture(t)
	for _, mech := range []string{"aim", "mst"} {
		t.Run(mech, func(t *testing.T) {
			rec := &stateRecorder{}
			base := sql.NewBaseSessionWithClientServer("", sql.Client{User: RootUser, Address: localhost}, 9)
			ctx := sql.NewContext(context.Background(), sql.WithSession(f.e.store.NewSession(base)), sql.WithProcessList(rec))
			opts := ""
			if mech == "aim" {
				opts = ", ROUNDS = 6, PGM_ITERS = 10, FINAL_ITERS = 200"
			}
			if _, _, err := query(f.e, ctx, "CREATE SYNTHETIC TABLE syn.p FROM raw.people USING "+mech+" WITH EPSILON = 0.5"+opts); err != nil {
				t.Fatal(err)
			}
			f.exec("DROP TABLE syn.p")
			var rounds, finals int
			for _, s := range rec.states {
				switch {
				case strings.ContainsAny(s, "\n\r"):
					t.Errorf("State %q has a line break", s)
				case roundState.MatchString(s):
					rounds++
				case mech == "aim" && finalState.MatchString(s), mech == "mst" && strings.Contains(s, ": final estimation, iteration "):
					finals++
				case otherState.MatchString(s):
				default:
					t.Errorf("State %q is none of the documented forms", s)
				}
			}
			if rounds == 0 || finals == 0 {
				t.Errorf("%d round States and %d final estimation States in %q", rounds, finals, rec.states)
			}
			if !strings.Contains(strings.Join(rec.states, "|"), "final estimation, iteration 0 of ") {
				t.Errorf("the final estimation did not report its start: %q", rec.states)
			}
		})
	}
}

// TestProcessStateOneLine: GMS's own progress entries (table scans) and
// dpsql's render on one line, dpsql's as their name alone.
func TestProcessStateOneLine(t *testing.T) {
	p := sql.Process{Command: sql.ProcessCommandQuery, Progress: map[string]sql.TableProgress{
		"synthesizing db.t: round 2, rho used 0.1 of 0.2, model 0.50 MB": sql.NewTableProgress("synthesizing db.t: round 2, rho used 0.1 of 0.2, model 0.50 MB", -1),
		"adult": sql.NewTableProgress("adult", 3),
	}}
	if got, want := processState(p), "adult (0/3 partitions), synthesizing db.t: round 2, rho used 0.1 of 0.2, model 0.50 MB"; got != want {
		t.Errorf("processState = %q, want %q", got, want)
	}
	for _, p := range []sql.Process{
		{Command: sql.ProcessCommandQuery},
		{Command: sql.ProcessCommandQuery, Progress: map[string]sql.TableProgress{"": sql.NewTableProgress("", 1)}}, // SELECT SLEEP(3)
	} {
		if got := processState(p); got != "running" {
			t.Errorf("processState of a query without tables = %q", got)
		}
	}
}

// TestShowGrantsOwnAccount: every user sees their own grants, SYNTHESIZE
// included, whichever way they name their account; other accounts' need
// SELECT on mysql.
func TestShowGrantsOwnAccount(t *testing.T) {
	f := newSynthFixture(t)
	f.exec(
		"CREATE USER analyst IDENTIFIED BY 'pw'",
		"CREATE USER other IDENTIFIED BY 'pw'",
		"GRANT SYNTHESIZE ON raw.people TO analyst",
		"GRANT SYNTHESIZE ON raw.* TO analyst",
		"GRANT SELECT ON syn.* TO analyst",
	)
	analyst := sessionCtx(f.e, 20, "analyst", "127.0.0.1")
	want := []string{
		"GRANT USAGE ON *.* TO `analyst`@`%`",
		"GRANT SELECT ON `syn`.* TO `analyst`@`%`",
		"GRANT SYNTHESIZE ON `raw`.* TO `analyst`@`%`",
		"GRANT SYNTHESIZE ON `raw`.`people` TO `analyst`@`%`",
	}
	for _, q := range []string{"SHOW GRANTS", "SHOW GRANTS FOR CURRENT_USER()", "SHOW GRANTS FOR CURRENT_USER", "SHOW GRANTS FOR analyst", "SHOW GRANTS FOR 'analyst'@'%'"} {
		sch, rows, err := query(f.e, analyst, q)
		if err != nil {
			t.Errorf("%s: %v", q, err)
			continue
		}
		var got []string
		for _, r := range rows {
			got = append(got, r[0].(string))
		}
		if strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("%s:\n%s\nwant\n%s", q, strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
		if sch[0].Name != "Grants for analyst@%" {
			t.Errorf("%s: column %q", q, sch[0].Name)
		}
	}
	for _, q := range []string{"SHOW GRANTS FOR other", "SHOW GRANTS FOR root@localhost", "SHOW GRANTS FOR 'analyst'@'localhost'"} {
		if _, _, err := query(f.e, analyst, q); err == nil || !strings.Contains(err.Error(), "mysql") {
			t.Errorf("%s by the analyst: %v, want access to mysql denied", q, err)
		}
	}
	// Root sees the analyst's SYNTHESIZE grants too.
	_, rows, err := query(f.e, f.root, "SHOW GRANTS FOR analyst")
	if err != nil || len(rows) != len(want) {
		t.Errorf("root: %v %v", rows, err)
	}
}
