// Package pgmcsv loads integer-coded CSV files into pgm datasets.
//
// The CSV has a header row of attribute names followed by one record per row
// of non-negative integer codes. The domain file is a JSON object mapping each
// attribute name to its domain size, {"name": size, ...}; the attribute order
// of the resulting domain is the CSV header order.
package pgmcsv

import (
	"bufio"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/dpsql/dpsql/synth/pgm"
)

// Load reads the CSV at csvPath and the JSON domain at domainPath.
func Load(csvPath, domainPath string) (*pgm.Dataset, error) {
	sizes, err := readSizes(domainPath)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(csvPath)
	if err != nil {
		return nil, fmt.Errorf("pgmcsv: %w", err)
	}
	defer f.Close()
	ds, err := Read(f, sizes)
	if err != nil {
		return nil, fmt.Errorf("pgmcsv: %s: %w", csvPath, err)
	}
	return ds, nil
}

// readSizes parses a JSON domain file.
func readSizes(path string) (map[string]int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("pgmcsv: %w", err)
	}
	var sizes map[string]int
	if err := json.Unmarshal(b, &sizes); err != nil {
		return nil, fmt.Errorf("pgmcsv: domain %s: %w", path, err)
	}
	return sizes, nil
}

// Read reads an integer-coded CSV with a header row from r; sizes gives the
// domain size of every attribute named in the header (extra entries are an
// error, so that a mismatched domain file is noticed).
func Read(r io.Reader, sizes map[string]int) (*pgm.Dataset, error) {
	cr := csv.NewReader(bufio.NewReaderSize(r, 1<<16))
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, errors.New("missing header row")
		}
		return nil, fmt.Errorf("reading header: %w", err)
	}
	names := append([]string(nil), header...)
	sz := make([]int, len(names))
	for i, n := range names {
		s, ok := sizes[n]
		if !ok {
			return nil, fmt.Errorf("attribute %q has no domain size", n)
		}
		sz[i] = s
	}
	if len(sizes) != len(names) {
		return nil, fmt.Errorf("domain has %d attributes, CSV header has %d", len(sizes), len(names))
	}
	dom, err := pgm.NewDomain(names, sz)
	if err != nil {
		return nil, err
	}
	cols := make([][]uint16, len(names))
	for line := 2; ; line++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("line %d: %w", line, err)
		}
		for i, field := range rec {
			v, err := strconv.ParseUint(field, 10, 16)
			if err != nil {
				return nil, fmt.Errorf("line %d, attribute %q: %w", line, names[i], err)
			}
			if int(v) >= sz[i] {
				return nil, fmt.Errorf("line %d, attribute %q: code %d outside domain of size %d", line, names[i], v, sz[i])
			}
			cols[i] = append(cols[i], uint16(v))
		}
	}
	for i := range cols {
		// Exact-length copies: append left up to a quarter of spare
		// capacity per column, which the dataset would hold for its whole
		// life (3–4 MB on a 200 000-row, 30-column table).
		cols[i] = append(make([]uint16, 0, len(cols[i])), cols[i]...)
	}
	return pgm.NewDataset(dom, cols)
}
