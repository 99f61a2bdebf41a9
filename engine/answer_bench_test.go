package engine

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/dolthub/go-mysql-server/sql"

	"github.com/dpsql/dpsql/engine/dpparse"
	"github.com/dpsql/dpsql/planner"
)

// benchEngine builds an engine over a catalog in a temporary directory,
// with a root session.
func benchEngine(b *testing.B) (*Engine, *sql.Context) {
	b.Helper()
	dir := b.TempDir()
	st, err := openStorage(dir)
	if err != nil {
		b.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.DataDir, cfg.RootPassword = dir, "pw"
	cfg.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	e, err := build(context.Background(), cfg, dir, st)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close() })
	return e, sessionCtx(e, 1, RootUser, localhost)
}

func benchExec(b *testing.B, e *Engine, ctx *sql.Context, qs ...string) {
	b.Helper()
	for _, q := range qs {
		if _, _, err := query(e, ctx, q); err != nil {
			b.Fatalf("%s: %v", abbrev(q), err)
		}
	}
}

// benchSynthesize gives raw.<name> a budget and makes syn.<name> from it
// with AIM.
func benchSynthesize(b *testing.B, e *Engine, ctx *sql.Context, name, options string) {
	b.Helper()
	src, err := e.resolveTable(ctx, dpparse.TableName{DB: "raw", Name: name})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := e.dp.ledger.SetBudget(context.Background(), src.LedgerKey(), "raw."+name, "root@localhost", "benchmark", 10, 1e-9); err != nil {
		b.Fatal(err)
	}
	benchExec(b, e, ctx, fmt.Sprintf("CREATE SYNTHETIC TABLE syn.%s FROM raw.%s USING aim WITH EPSILON = 1, SEED = 1, %s", name, name, options))
}

// benchAnswers times queries through the server in process (parse, route,
// bind, answer, convert): from the model with its marginal cache warm,
// from the model with a cold cache, and from the rows.
func benchAnswers(b *testing.B, e *Engine, ctx *sql.Context, table string, queries map[string]string) {
	syn, err := e.answers.lookup(ctx, "syn", table)
	if err != nil || syn == nil {
		b.Fatalf("syn.%s: %v", table, err)
	}
	for name, q := range queries {
		for _, mode := range []string{"model-cached", "model-cold", "rows"} {
			b.Run(name+"/"+mode, func(b *testing.B) {
				src := sourceModel
				if mode == "rows" {
					src = sourceRows
				}
				benchExec(b, e, ctx, "SET SESSION dpsql_answer_source = '"+src+"'")
				_, rows, err := query(e, ctx, q)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				for b.Loop() {
					if mode == "model-cold" {
						b.StopTimer()
						syn.cache = planner.NewModelCache(syn.model, syn.rec.Domain.Sizes(), 0)
						b.StartTimer()
					}
					if _, _, err := query(e, ctx, q); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(len(rows)), "rows")
			})
		}
	}
	benchExec(b, e, ctx, "SET SESSION dpsql_answer_source = 'model'")
}

// BenchmarkModelAnswer times a 3-way COUNT GROUP BY answered by the server
// from an AIM model: over adult (skipped without ../shared/data; the
// synthesis takes a while), and over a small generated table that always
// runs.
func BenchmarkModelAnswer(b *testing.B) {
	b.Run("generated", func(b *testing.B) {
		e, ctx := benchEngine(b)
		benchExec(b, e, ctx, "CREATE DATABASE raw", "CREATE DATABASE syn",
			"CREATE TABLE raw.g (a INT NOT NULL CHECK (a BETWEEN 0 AND 9), b ENUM('x','y','z') NOT NULL,"+
				" c INT NOT NULL CHECK (c BETWEEN 0 AND 19), d INT NOT NULL CHECK (d BETWEEN 0 AND 4))")
		rng := rand.New(rand.NewPCG(1, 2))
		var sb strings.Builder
		sb.WriteString("INSERT INTO raw.g VALUES ")
		for i := range 3000 {
			if i > 0 {
				sb.WriteByte(',')
			}
			a := rng.IntN(10)
			fmt.Fprintf(&sb, "(%d, '%c', %d, %d)", a, "xyz"[(a+rng.IntN(2))%3], (2*a+rng.IntN(3))%20, rng.IntN(5))
		}
		benchExec(b, e, ctx, sb.String())
		benchSynthesize(b, e, ctx, "g", fastAIMOption)
		benchAnswers(b, e, ctx, "g", map[string]string{
			"3way":       "SELECT a, b, c, COUNT(*) FROM syn.g GROUP BY a, b, c",
			"3way-where": "SELECT a, b, d, COUNT(*) AS n FROM syn.g WHERE c < 10 GROUP BY a, b, d ORDER BY n DESC LIMIT 10",
		})
	})
	b.Run("adult", func(b *testing.B) {
		dir := filepath.Join("..", "..", "shared", "data")
		if _, err := os.Stat(filepath.Join(dir, "adult.csv")); err != nil {
			b.Skipf("shared data not available: %v", err)
		}
		e, ctx := benchEngine(b)
		loadAdult(b, e, ctx, dir)
		benchSynthesize(b, e, ctx, "adult", "PGM_ITERS = 20, FINAL_ITERS = 200")
		benchAnswers(b, e, ctx, "adult", map[string]string{
			"clique": "SELECT age, relationship, `income>50K`, COUNT(*) FROM syn.adult GROUP BY age, relationship, `income>50K`",
			"spread": "SELECT sex, race, workclass, COUNT(*) FROM syn.adult GROUP BY sex, race, workclass",
			"where":  "SELECT sex, race, workclass, COUNT(*) AS n FROM syn.adult WHERE age >= 30 AND `income>50K` = 1 GROUP BY sex, race, workclass ORDER BY n DESC LIMIT 10",
		})
	})
}

// loadAdult loads adult.csv into raw.adult, one INT column per attribute
// with its public range as a CHECK constraint (adult-domain.json).
func loadAdult(b *testing.B, e *Engine, ctx *sql.Context, dir string) {
	b.Helper()
	raw, err := os.ReadFile(filepath.Join(dir, "adult-domain.json"))
	if err != nil {
		b.Fatal(err)
	}
	var sizes map[string]int
	if err := json.Unmarshal(raw, &sizes); err != nil {
		b.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, "adult.csv"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	r := csv.NewReader(f)
	header, err := r.Read()
	if err != nil {
		b.Fatal(err)
	}
	cols := make([]string, len(header))
	for i, h := range header {
		cols[i] = fmt.Sprintf("%s INT NOT NULL CHECK (%s BETWEEN 0 AND %d)", quoteIdent(h), quoteIdent(h), sizes[h]-1)
	}
	benchExec(b, e, ctx, "CREATE DATABASE raw", "CREATE DATABASE syn",
		"CREATE TABLE raw.adult ("+strings.Join(cols, ", ")+")")
	var sb strings.Builder
	flush := func() {
		if sb.Len() > 0 {
			benchExec(b, e, ctx, sb.String())
			sb.Reset()
		}
	}
	for n := 0; ; n++ {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			b.Fatal(err)
		}
		if sb.Len() == 0 {
			sb.WriteString("INSERT INTO raw.adult VALUES ")
		} else {
			sb.WriteByte(',')
		}
		sb.WriteString("(" + strings.Join(rec, ",") + ")")
		if n%2000 == 1999 {
			flush()
		}
	}
	flush()
}
