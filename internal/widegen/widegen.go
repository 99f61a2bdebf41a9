// Package widegen generates wide test tables for the synthesizers'
// experiments and tests: a seeded random Bayesian network over 15 to a few
// hundred attributes, mixing categorical columns and binned numeric
// columns, sampled into integer-coded records.
//
// The network is drawn first (structure and conditional tables), then the
// rows, all from one PCG stream keyed by Config.Seed: the same Config gives
// the same table on every machine. Attribute i takes up to MaxParents
// parents among attributes 0..i−1 (uniformly chosen); a categorical
// attribute's conditional distribution per parent configuration is a
// random softmax (skewed, temperature 1.5); a numeric attribute's is a
// discretised bell over its bins whose centre and width depend on the
// parent configuration, so numeric columns look like binned measurements
// (unimodal, smooth) and prefix-range queries on them are meaningful.
package widegen

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"strconv"

	"github.com/dpsql/dpsql/synth/pgm"
)

// Config describes a table; zero fields take the defaults noted.
type Config struct {
	Attrs       int     // number of attributes (≥ 1); default 48
	Rows        int     // default 20000
	NumericFrac float64 // fraction of numeric attributes; default 0.3
	Bins        int     // bins of a numeric attribute; default 20
	MaxCat      int     // largest categorical domain; default 8 (smallest is 2)
	MaxParents  int     // default 2
	Seed        uint64
}

func (c Config) withDefaults() Config {
	if c.Attrs <= 0 {
		c.Attrs = 48
	}
	if c.Rows <= 0 {
		c.Rows = 20000
	}
	if c.NumericFrac <= 0 {
		c.NumericFrac = 0.3
	}
	if c.Bins <= 1 {
		c.Bins = 20
	}
	if c.MaxCat < 2 {
		c.MaxCat = 8
	}
	if c.MaxParents <= 0 {
		c.MaxParents = 2
	}
	return c
}

// Table is a generated table.
type Table struct {
	Data    *pgm.Dataset
	Numeric []bool  // Numeric[a]: attribute a is a binned numeric column
	Parents [][]int // the generating network
}

// Generate draws the network and the rows of cfg.
func Generate(cfg Config) (*Table, error) {
	cfg = cfg.withDefaults()
	if cfg.Attrs > 1<<12 || cfg.Bins > 1<<12 || cfg.MaxCat > 1<<12 {
		return nil, fmt.Errorf("widegen: %d attributes, %d bins, %d categories: too large", cfg.Attrs, cfg.Bins, cfg.MaxCat)
	}
	r := rand.New(rand.NewPCG(cfg.Seed, 0x77de))
	d := cfg.Attrs
	names := make([]string, d)
	sizes := make([]int, d)
	numeric := make([]bool, d)
	for a := range d {
		numeric[a] = r.Float64() < cfg.NumericFrac
		if numeric[a] {
			names[a], sizes[a] = fmt.Sprintf("n%d", a), cfg.Bins
		} else {
			names[a], sizes[a] = fmt.Sprintf("c%d", a), 2+r.IntN(cfg.MaxCat-1)
		}
	}
	parents := make([][]int, d)
	cpts := make([][]float64, d) // over parent configurations × values
	for a := range d {
		k := min(a, r.IntN(cfg.MaxParents+1))
		if a > 0 && k == 0 && r.IntN(4) > 0 {
			k = 1 // mostly connected
		}
		perm := r.Perm(a)[:k]
		parents[a] = perm
		configs := 1
		for _, p := range perm {
			configs *= sizes[p]
		}
		n := sizes[a]
		cpt := make([]float64, configs*n)
		for c := range configs {
			row := cpt[c*n : (c+1)*n]
			if numeric[a] {
				mu := r.Float64() * float64(n-1)
				sd := (0.05 + 0.25*r.Float64()) * float64(n)
				for v := range row {
					z := (float64(v) - mu) / sd
					row[v] = math.Exp(-z * z / 2)
				}
			} else {
				for v := range row {
					row[v] = math.Exp(1.5 * r.NormFloat64())
				}
			}
			var s float64
			for _, x := range row {
				s += x
			}
			for v := range row {
				row[v] /= s
			}
		}
		cpts[a] = cpt
	}
	cols := make([][]uint16, d)
	for a := range cols {
		cols[a] = make([]uint16, cfg.Rows)
	}
	for i := range cfg.Rows {
		for a := range d {
			c := 0
			for _, p := range parents[a] {
				c = c*sizes[p] + int(cols[p][i])
			}
			n := sizes[a]
			row := cpts[a][c*n : (c+1)*n]
			u := r.Float64()
			v := 0
			for ; v < n-1; v++ {
				u -= row[v]
				if u < 0 {
					break
				}
			}
			cols[a][i] = uint16(v)
		}
	}
	dom, err := pgm.NewDomain(names, sizes)
	if err != nil {
		return nil, fmt.Errorf("widegen: %w", err)
	}
	ds, err := pgm.NewDataset(dom, cols)
	if err != nil {
		return nil, fmt.Errorf("widegen: %w", err)
	}
	return &Table{Data: ds, Numeric: numeric, Parents: parents}, nil
}

// WriteCSV writes the table as an integer-coded CSV with a header row (the
// format of pgmcsv and `dpsql bench --csv`).
func (t *Table) WriteCSV(w io.Writer) error {
	bw := bufio.NewWriter(w)
	dom := t.Data.Domain()
	for a := range dom.Len() {
		if a > 0 {
			bw.WriteByte(',')
		}
		bw.WriteString(dom.Name(a))
	}
	bw.WriteByte('\n')
	var buf []byte
	for i := range t.Data.Rows() {
		buf = buf[:0]
		for a := range dom.Len() {
			if a > 0 {
				buf = append(buf, ',')
			}
			buf = strconv.AppendUint(buf, uint64(t.Data.Column(a)[i]), 10)
		}
		buf = append(buf, '\n')
		if _, err := bw.Write(buf); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// DomainJSON is the domain file of the table ({"name": size, …}).
func (t *Table) DomainJSON() []byte {
	dom := t.Data.Domain()
	b := []byte{'{'}
	for a := range dom.Len() {
		if a > 0 {
			b = append(b, ", "...)
		}
		name, _ := json.Marshal(dom.Name(a))
		b = append(b, name...)
		b = append(b, ": "...)
		b = strconv.AppendInt(b, int64(dom.Size(a)), 10)
	}
	return append(b, "}\n"...)
}

// WriteFiles writes csvPath and domainPath.
func (t *Table) WriteFiles(csvPath, domainPath string) error {
	f, err := os.Create(csvPath)
	if err != nil {
		return err
	}
	if err := t.WriteCSV(f); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.WriteFile(domainPath, t.DomainJSON(), 0o644)
}
