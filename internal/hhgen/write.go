package hhgen

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// HouseholdHeader and PersonHeader are the CSV headers.
func HouseholdHeader() string { return "hh_id," + names(HouseholdAttrs) }

// PersonHeader is the persons CSV header.
func PersonHeader() string { return "person_id,hh_id," + names(PersonAttrs) }

func names(attrs []Attr) string {
	s := make([]string, len(attrs))
	for i, a := range attrs {
		s[i] = a.Name
	}
	return strings.Join(s, ",")
}

// WriteHouseholdsCSV writes the households table (header, then one line a
// household) to w.
func (d *Data) WriteHouseholdsCSV(w io.Writer) error {
	bw := bufio.NewWriter(w)
	bw.WriteString(HouseholdHeader() + "\n")
	var line []byte
	for i, h := range d.H {
		line = strconv.AppendInt(line[:0], int64(i+1), 10)
		for a, c := range h {
			line = append(line, ',')
			line = append(line, HouseholdAttrs[a].Values[c]...)
		}
		line = append(line, '\n')
		bw.Write(line)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("hhgen: writing households CSV: %w", err)
	}
	return nil
}

// WritePersonsCSV writes the persons table to w.
func (d *Data) WritePersonsCSV(w io.Writer) error {
	bw := bufio.NewWriter(w)
	bw.WriteString(PersonHeader() + "\n")
	var line []byte
	for j, p := range d.P {
		line = strconv.AppendInt(line[:0], int64(j+1), 10)
		line = append(line, ',')
		line = strconv.AppendInt(line, int64(d.PersHH[j]+1), 10)
		for b, c := range p {
			line = append(line, ',')
			line = append(line, PersonAttrs[b].Values[c]...)
		}
		line = append(line, '\n')
		bw.Write(line)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("hhgen: writing persons CSV: %w", err)
	}
	return nil
}

// Inserts returns INSERT statements loading d into the two tables, at most
// batch rows each (for tests and the demo).
func (d *Data) Inserts(hh, persons string, batch int) []string {
	var out []string
	var b strings.Builder
	flush := func() {
		if b.Len() > 0 {
			out = append(out, b.String())
			b.Reset()
		}
	}
	for i, h := range d.H {
		if i%batch == 0 {
			flush()
			fmt.Fprintf(&b, "INSERT INTO %s VALUES ", hh)
		} else {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "(%d", i+1)
		for a, c := range h {
			fmt.Fprintf(&b, ", '%s'", HouseholdAttrs[a].Values[c])
		}
		b.WriteString(")")
	}
	flush()
	for j, p := range d.P {
		if j%batch == 0 {
			flush()
			fmt.Fprintf(&b, "INSERT INTO %s VALUES ", persons)
		} else {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "(%d, %d", j+1, d.PersHH[j]+1)
		for a, c := range p {
			fmt.Fprintf(&b, ", '%s'", PersonAttrs[a].Values[c])
		}
		b.WriteString(")")
	}
	flush()
	return out
}
