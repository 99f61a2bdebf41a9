package hhgen

import (
	"bytes"
	"strings"
	"testing"
)

func TestGenerateValidAndSeeded(t *testing.T) {
	d, err := Generate(Config{Households: 3000, Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	d2, _ := Generate(Config{Households: 3000, Seed: 7})
	var a, b bytes.Buffer
	d.WritePersonsCSV(&a)
	d2.WritePersonsCSV(&b)
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("same seed, different data")
	}
	heads := make([]int, len(d.H))
	spouses := make([]int, len(d.H))
	size := make([]int, len(d.H))
	for j, p := range d.P {
		h := d.PersHH[j]
		if j > 0 && h < d.PersHH[j-1] {
			t.Fatal("persons not grouped by household")
		}
		size[h]++
		switch p[PRel] {
		case Head:
			heads[h]++
		case Spouse:
			spouses[h]++
		}
		for b, c := range p {
			if c < 0 || c >= len(PersonAttrs[b].Values) {
				t.Fatalf("person %d attr %d code %d", j, b, c)
			}
		}
	}
	big := 0
	for i := range d.H {
		if heads[i] != 1 || spouses[i] > 1 || size[i] < 1 {
			t.Fatalf("household %d: %d heads, %d spouses, size %d", i, heads[i], spouses[i], size[i])
		}
		if size[i] > 8 {
			big++
		}
	}
	if big == 0 {
		t.Error("no household above 8 persons: the truncation rule is never exercised")
	}
	// Within-household correlation: a spouse shares the head's race far
	// more often than two random persons do.
	same, pairs := 0, 0
	for j, p := range d.P {
		if p[PRel] == Spouse {
			pairs++
			if d.P[j-1][PRace] == p[PRace] {
				same++
			}
		}
	}
	if float64(same)/float64(pairs) < 0.8 {
		t.Errorf("spouse shares head's race in %d of %d", same, pairs)
	}
}

func TestCSVAndDDL(t *testing.T) {
	d, _ := Generate(Config{Households: 5, Seed: 1, MaxSize: 3})
	var b bytes.Buffer
	if err := d.WriteHouseholdsCSV(&b); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 6 || lines[0] != "hh_id,urban,region,tenure,income" || !strings.HasPrefix(lines[1], "1,") {
		t.Fatalf("households CSV:\n%s", b.String())
	}
	ddl := DDL("c.households", "c.persons")
	if len(ddl) != 2 || !strings.Contains(ddl[1], "hh_id INT NOT NULL, rel ENUM('head', 'spouse', 'child')") {
		t.Fatalf("DDL: %q", ddl)
	}
	if ins := d.Inserts("c.h", "c.p", 100); len(ins) != 2 {
		t.Fatalf("inserts: %q", ins)
	}
}
