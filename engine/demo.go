package engine

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/dolthub/go-mysql-server/sql"

	"github.com/dpsql/dpsql/examples/census"
)

// The demo database: DemoDatabase.DemoTable holds demoRows people from the
// census generator with a fixed seed.
const (
	DemoDatabase = "demo"
	DemoTable    = "census"
	demoRows     = 30000
	demoSeed     = 20261122
	demoBatch    = 1000
)

// demoCapitalGainDomain bins the one demo column whose range is too wide
// to be a domain of its own.
const demoCapitalGainDomain = "ALTER TABLE `" + DemoTable + "` SET DOMAIN capital_gain BETWEEN 0 AND 100000 BINS 10"

// seedDemo creates the demo table if it does not exist yet. The rows go
// into a staging table that is renamed only when complete, so a crash
// during seeding leaves no half-filled demo table behind.
func (e *Engine) seedDemo(ctx context.Context) error {
	sctx := sql.NewContext(ctx, sql.WithSession(e.store.NewSession(sql.NewBaseSession())))
	if db, err := e.store.Provider().Database(sctx, DemoDatabase); err == nil {
		if _, ok, err := db.GetTableInsensitive(sctx, DemoTable); err != nil {
			return ErrInternal.Wrap(err, "looking up the demo table")
		} else if ok {
			return nil
		}
	}
	start := time.Now()
	staging := DemoTable + "_loading"
	setup := []string{
		"CREATE DATABASE IF NOT EXISTS `" + DemoDatabase + "`",
		"DROP TABLE IF EXISTS `" + staging + "`",
		census.TableDDL(staging),
	}
	for _, q := range setup {
		if _, _, err := e.QueryInternal(ctx, DemoDatabase, q); err != nil {
			return ErrInternal.Wrap(err, "creating the demo table")
		}
	}
	g := census.New(demoSeed)
	prefix := "INSERT INTO `" + staging + "` (" + strings.Join(census.Columns, ", ") + ") VALUES "
	var b strings.Builder
	for done := 0; done < demoRows; {
		n := min(demoBatch, demoRows-done)
		b.Reset()
		b.WriteString(prefix)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			writeTuple(&b, g.Next().Values())
		}
		if _, _, err := e.QueryInternal(ctx, DemoDatabase, b.String()); err != nil {
			return ErrInternal.Wrap(err, "filling the demo table")
		}
		done += n
	}
	rename := "RENAME TABLE `" + staging + "` TO `" + DemoTable + "`"
	if _, _, err := e.QueryInternal(ctx, DemoDatabase, rename); err != nil {
		return ErrInternal.Wrap(err, "publishing the demo table")
	}
	// Every column then has a public domain: the schema gives the ENUMs
	// and small ranges; capital_gain's range (100 000 values) needs bins;
	// id is the AUTO_INCREMENT key, which is not synthesized.
	if _, _, err := e.QueryInternal(ctx, DemoDatabase, demoCapitalGainDomain); err != nil {
		return ErrInternal.Wrap(err, "declaring the demo table's domain")
	}
	e.log.Info("demo table created", "table", DemoDatabase+"."+DemoTable, "rows", demoRows,
		"took", time.Since(start).Round(time.Millisecond))
	return nil
}

// writeTuple writes vals as a SQL row constructor. The values come from the
// generator: ints, and strings from its fixed ENUM lists.
func writeTuple(b *strings.Builder, vals []any) {
	b.WriteByte('(')
	for i, v := range vals {
		if i > 0 {
			b.WriteByte(',')
		}
		switch v := v.(type) {
		case int:
			b.WriteString(strconv.Itoa(v))
		case string:
			b.WriteByte('\'')
			b.WriteString(strings.ReplaceAll(v, "'", "''"))
			b.WriteByte('\'')
		default:
			panic(fmt.Sprintf("engine: unexpected demo value %T", v))
		}
	}
	b.WriteByte(')')
}
