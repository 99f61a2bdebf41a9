package census

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

func TestDeterministic(t *testing.T) {
	a := Generate(2000, 7)
	b := Generate(2000, 7)
	if !reflect.DeepEqual(a, b) {
		t.Fatal("same seed gave different rows")
	}
	c := Generate(2000, 8)
	if reflect.DeepEqual(a, c) {
		t.Fatal("different seeds gave the same rows")
	}
}

func TestDomains(t *testing.T) {
	for i, p := range Generate(20000, 1) {
		checks := []struct {
			name      string
			v, lo, hi int
		}{
			{"age", p.Age, MinAge, MaxAge},
			{"sex", p.Sex, 0, len(Sexes) - 1},
			{"race", p.Race, 0, len(Races) - 1},
			{"region", p.Region, 0, len(Regions) - 1},
			{"education", p.Education, 0, len(Educations) - 1},
			{"marital_status", p.MaritalStatus, 0, len(MaritalStatus) - 1},
			{"workclass", p.Workclass, 0, len(Workclasses) - 1},
			{"occupation", p.Occupation, 0, len(Occupations) - 1},
			{"hours_per_week", p.HoursPerWeek, MinHours, MaxHours},
			{"capital_gain", p.CapitalGain, MinCapitalGain, MaxCapGain},
			{"income", p.Income, 0, len(Incomes) - 1},
		}
		for _, c := range checks {
			if c.v < c.lo || c.v > c.hi {
				t.Fatalf("row %d: %s = %d outside [%d, %d]", i, c.name, c.v, c.lo, c.hi)
			}
		}
		if len(p.Values()) != len(Columns) {
			t.Fatalf("Values has %d entries, Columns %d", len(p.Values()), len(Columns))
		}
	}
}

// rate is the fraction of people satisfying pred among those satisfying given.
func rate(ps []Person, given, pred func(Person) bool) float64 {
	var n, k int
	for _, p := range ps {
		if given(p) {
			n++
			if pred(p) {
				k++
			}
		}
	}
	if n == 0 {
		return 0
	}
	return float64(k) / float64(n)
}

// TestCorrelations checks that the network's dependencies show in the data
// (fixed seed, 30 000 rows: each compared rate has a standard error below
// 0.01, and every required gap is at least 0.1).
func TestCorrelations(t *testing.T) {
	ps := Generate(30000, 42)
	all := func(Person) bool { return true }
	rich := func(p Person) bool { return p.Income == 1 }
	married := func(p Person) bool { return p.MaritalStatus == 1 }
	tests := []struct {
		name   string
		hi, lo float64
		minGap float64
	}{
		{"income by degree",
			rate(ps, func(p Person) bool { return p.Education >= 6 }, rich),
			rate(ps, func(p Person) bool { return p.Education <= 3 }, rich), 0.2},
		{"married by age",
			rate(ps, func(p Person) bool { return p.Age >= 35 && p.Age < 55 }, married),
			rate(ps, func(p Person) bool { return p.Age < 25 }, married), 0.3},
		{"professional by degree",
			rate(ps, func(p Person) bool { return p.Education >= 6 }, func(p Person) bool { return p.Occupation == 7 }),
			rate(ps, func(p Person) bool { return p.Education <= 3 }, func(p Person) bool { return p.Occupation == 7 }), 0.2},
		{"craft by sex",
			rate(ps, func(p Person) bool { return p.Sex == 1 }, func(p Person) bool { return p.Occupation == 1 }),
			rate(ps, func(p Person) bool { return p.Sex == 0 }, func(p Person) bool { return p.Occupation == 1 }), 0.1},
	}
	for _, tt := range tests {
		if tt.hi-tt.lo < tt.minGap {
			t.Errorf("%s: %.3f vs %.3f, want a gap of at least %.2f", tt.name, tt.hi, tt.lo, tt.minGap)
		}
	}
	if r := rate(ps, all, rich); r < 0.15 || r > 0.40 {
		t.Errorf("share with income >50K = %.3f, want a census-like 0.15..0.40", r)
	}
	hours := 0
	for _, p := range ps {
		hours += p.HoursPerWeek
	}
	if m := float64(hours) / float64(len(ps)); m < 35 || m > 45 {
		t.Errorf("mean hours per week = %.1f, want 35..45", m)
	}
}

func BenchmarkNext(b *testing.B) {
	g := New(1)
	b.ReportAllocs()
	for b.Loop() {
		_ = g.Next()
	}
}

func ExampleTableDDL() {
	lines := strings.Split(TableDDL("census"), "\n")
	fmt.Println(strings.Join(lines[:3], "\n"))
	// Output:
	// CREATE TABLE `census` (
	//   id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,
	//   age INT NOT NULL CHECK (age BETWEEN 17 AND 90),
}
