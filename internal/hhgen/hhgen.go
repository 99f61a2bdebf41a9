// Package hhgen generates realistic, seeded household and person tables
// for the hierarchical synthesizers (synth/hpd) and their benchmarks.
//
// A household has 4 attributes (urban, region, tenure, income) and 1 to
// MaxSize persons; a person has 6 (rel, sex, age, race, edu, employed) and a
// link column hh_id. Correlations live within households, as in census
// data: the head's race is shared by most members, a spouse usually has the
// opposite sex and a similar age, children are younger, education follows
// the household's income, employment follows age and education, and the
// household's tenure follows its income and the head's age. rel is head,
// spouse or child: every household has exactly one head and at most one
// spouse, so the typed model (seed 003 §6) applies.
//
// A seed fixes the whole data set. Codes index the Values of each
// attribute; the CSV writers print the labels.
package hhgen

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// Attr is one categorical attribute.
type Attr struct {
	Name   string
	Values []string
}

// HouseholdAttrs are the household attributes, in column order.
var HouseholdAttrs = []Attr{
	{"urban", []string{"urban", "rural"}},
	{"region", []string{"northeast", "midwest", "south", "west"}},
	{"tenure", []string{"own", "rent"}},
	{"income", []string{"low", "mid", "high"}},
}

// PersonAttrs are the person attributes, in column order.
var PersonAttrs = []Attr{
	{"rel", []string{"head", "spouse", "child"}},
	{"sex", []string{"M", "F"}},
	{"age", []string{"0-17", "18-29", "30-44", "45-64", "65+"}},
	{"race", []string{"white", "black", "asian", "other"}},
	{"edu", []string{"none", "hs", "college", "grad"}},
	{"employed", []string{"no", "yes"}},
}

// Attribute positions.
const (
	HUrban, HRegion, HTenure, HIncome   = 0, 1, 2, 3
	PRel, PSex, PAge, PRace, PEdu, PEmp = 0, 1, 2, 3, 4, 5
)

// Relationship codes of PRel.
const (
	Head, Spouse, Child = 0, 1, 2
)

// Config sets the size and shape of a data set.
type Config struct {
	Households int    // number of households
	Seed       uint64 // fixes everything
	// MaxSize is the largest household generated (default 10). Sizes above
	// a privacy unit's K exercise its truncation rule.
	MaxSize int
}

// Data is a generated data set. Household i has hh_id i+1; person j has
// person_id j+1; persons of a household are contiguous, head first.
type Data struct {
	H      [][]int // H[i][a]: code of household attribute a
	P      [][]int // P[j][b]: code of person attribute b
	PersHH []int   // PersHH[j]: index of person j's household
}

// NumPersons is the number of persons.
func (d *Data) NumPersons() int { return len(d.P) }

// sizeWeights is the household size distribution (1, 2, …), close to the
// US one, with a thin tail.
var sizeWeights = []float64{28, 34, 15, 13, 6, 2.4, 0.9, 0.4, 0.2, 0.1}

func pick(r *rand.Rand, w []float64) int {
	t := 0.0
	for _, x := range w {
		t += x
	}
	u := r.Float64() * t
	for i, x := range w {
		u -= x
		if u < 0 {
			return i
		}
	}
	return len(w) - 1
}

func clamp(x, lo, hi int) int { return max(lo, min(hi, x)) }

// Generate builds a data set.
func Generate(cfg Config) (*Data, error) {
	if cfg.Households < 0 {
		return nil, fmt.Errorf("hhgen: %d households", cfg.Households)
	}
	maxSize := cfg.MaxSize
	if maxSize == 0 {
		maxSize = len(sizeWeights)
	}
	if maxSize < 1 || maxSize > 64 {
		return nil, fmt.Errorf("hhgen: max size %d outside 1..64", maxSize)
	}
	r := rand.New(rand.NewPCG(cfg.Seed, 0x68686765)) // "hhge"
	sw := make([]float64, maxSize)
	for i := range sw {
		if i < len(sizeWeights) {
			sw[i] = sizeWeights[i]
		} else {
			sw[i] = 0.05
		}
	}
	d := &Data{H: make([][]int, 0, cfg.Households)}
	for i := 0; i < cfg.Households; i++ {
		urban := pick(r, []float64{0.8, 0.2})
		region := pick(r, []float64{0.17, 0.21, 0.38, 0.24})
		var income int
		if urban == 0 {
			income = pick(r, []float64{0.3, 0.4, 0.3})
		} else {
			income = pick(r, []float64{0.45, 0.4, 0.15})
		}
		size := 1 + pick(r, sw)
		// Rural and low-income households are a little larger.
		if size < maxSize && (urban == 1 || income == 0) && r.Float64() < 0.15 {
			size++
		}
		var raceW []float64
		switch {
		case urban == 1:
			raceW = []float64{0.85, 0.07, 0.01, 0.07}
		case region == 2:
			raceW = []float64{0.55, 0.3, 0.05, 0.1}
		case region == 3:
			raceW = []float64{0.55, 0.06, 0.2, 0.19}
		default:
			raceW = []float64{0.68, 0.14, 0.08, 0.1}
		}
		race := pick(r, raceW)
		// Head.
		headAge := 1 + pick(r, []float64{0.12, 0.28, 0.36, 0.24})
		headSex := pick(r, []float64{0.55, 0.45})
		hasSpouse := size >= 2 && r.Float64() < 0.65
		hh := len(d.H)
		add := func(rel, sex, age, rc int) {
			edu := personEdu(r, age, income)
			emp := personEmp(r, age, edu)
			d.P = append(d.P, []int{rel, sex, age, rc, edu, emp})
			d.PersHH = append(d.PersHH, hh)
		}
		add(Head, headSex, headAge, race)
		n := 1
		if hasSpouse {
			sex := 1 - headSex
			if r.Float64() < 0.03 {
				sex = headSex
			}
			age := clamp(headAge+pick(r, []float64{0.15, 0.7, 0.15})-1, 1, 4)
			rc := race
			if r.Float64() < 0.1 {
				rc = pick(r, raceW)
			}
			add(Spouse, sex, age, rc)
			n++
		}
		for ; n < size; n++ {
			var age int
			switch headAge {
			case 1:
				age = pick(r, []float64{0.9, 0.1})
			case 2:
				age = pick(r, []float64{0.8, 0.2})
			case 3:
				age = pick(r, []float64{0.45, 0.45, 0.1})
			default:
				age = pick(r, []float64{0.1, 0.4, 0.4, 0.1})
			}
			rc := race
			if r.Float64() < 0.05 {
				rc = pick(r, raceW)
			}
			add(Child, pick(r, []float64{0.51, 0.49}), age, rc)
		}
		// Owners: richer and older households.
		ownP := 0.35 + 0.15*float64(income) + 0.08*float64(headAge-1)
		if urban == 1 {
			ownP += 0.1
		}
		tenure := 1
		if r.Float64() < ownP {
			tenure = 0
		}
		d.H = append(d.H, []int{urban, region, tenure, income})
	}
	return d, nil
}

func personEdu(r *rand.Rand, age, income int) int {
	if age == 0 {
		return pick(r, []float64{0.8, 0.2, 0, 0})
	}
	switch income {
	case 0:
		return pick(r, []float64{0.2, 0.55, 0.2, 0.05})
	case 1:
		return pick(r, []float64{0.08, 0.45, 0.35, 0.12})
	}
	return pick(r, []float64{0.03, 0.22, 0.45, 0.3})
}

func personEmp(r *rand.Rand, age, edu int) int {
	p := 0.0
	switch age {
	case 0:
		p = 0.05
	case 1:
		p = 0.65
	case 2, 3:
		p = 0.75
	default:
		p = 0.2
	}
	p += 0.05 * float64(edu)
	if r.Float64() < p {
		return 1
	}
	return 0
}

// DDL returns the dpsql statements creating the two tables hh and persons
// (qualified names such as census.households, census.persons). The key
// columns hh_id and person_id are plain INT PRIMARY KEY columns; the link
// persons.hh_id is an INT. Every attribute is an ENUM, so it has a domain.
func DDL(hh, persons string) []string {
	cols := func(attrs []Attr) string {
		var b strings.Builder
		for _, a := range attrs {
			vals := make([]string, len(a.Values))
			for j, v := range a.Values {
				vals[j] = "'" + v + "'"
			}
			fmt.Fprintf(&b, ", %s ENUM(%s) NOT NULL", a.Name, strings.Join(vals, ", "))
		}
		return b.String()
	}
	return []string{
		fmt.Sprintf("CREATE TABLE %s (hh_id INT PRIMARY KEY%s)", hh, cols(HouseholdAttrs)),
		fmt.Sprintf("CREATE TABLE %s (person_id INT PRIMARY KEY, hh_id INT NOT NULL%s)", persons, cols(PersonAttrs)),
	}
}
