package widegen

import (
	"bytes"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/synth/pgm/pgmcsv"
)

func TestDeterministicAndShaped(t *testing.T) {
	for _, d := range []int{15, 48, 110} {
		cfg := Config{Attrs: d, Rows: 500, Seed: uint64(d)}
		a, err := Generate(cfg)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := Generate(cfg)
		dom := a.Data.Domain()
		if dom.Len() != d || a.Data.Rows() != 500 {
			t.Fatalf("%d attributes × %d rows, want %d × 500", dom.Len(), a.Data.Rows(), d)
		}
		nNum := 0
		for i := range d {
			if !slices.Equal(a.Data.Column(i), b.Data.Column(i)) {
				t.Fatalf("d=%d: column %d differs between two runs with one seed", d, i)
			}
			if a.Numeric[i] {
				nNum++
				if dom.Size(i) != 20 {
					t.Errorf("numeric column %d has %d bins", i, dom.Size(i))
				}
			} else if dom.Size(i) < 2 || dom.Size(i) > 8 {
				t.Errorf("categorical column %d has %d values", i, dom.Size(i))
			}
			for _, p := range a.Parents[i] {
				if p >= i {
					t.Errorf("attribute %d has parent %d (not earlier)", i, p)
				}
			}
		}
		if nNum == 0 || nNum == d {
			t.Errorf("d=%d: %d numeric columns, want a mix", d, nNum)
		}
	}
	c, _ := Generate(Config{Attrs: 15, Rows: 500, Seed: 16})
	a, _ := Generate(Config{Attrs: 15, Rows: 500, Seed: 15})
	if slices.Equal(c.Data.Column(0), a.Data.Column(0)) && slices.Equal(c.Data.Column(1), a.Data.Column(1)) {
		t.Error("two seeds gave the same table")
	}
}

// A child depends on its parent: the empirical mutual information of
// every (attribute, first parent) pair is clearly positive on average,
// and above that of attribute pairs unrelated in the network.
func TestDependence(t *testing.T) {
	tab, err := Generate(Config{Attrs: 30, Rows: 20000, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	var linked, unlinked float64
	var nl, nu int
	for a := 1; a < 30; a++ {
		if len(tab.Parents[a]) > 0 {
			linked += mi(tab, a, tab.Parents[a][0])
			nl++
		}
		if b := (a + 15) % 30; !slices.Contains(tab.Parents[a], b) && !slices.Contains(tab.Parents[b], a) {
			unlinked += mi(tab, a, b)
			nu++
		}
	}
	linked /= float64(nl)
	unlinked /= float64(nu)
	t.Logf("mean MI: linked %.4f, unrelated %.4f nats", linked, unlinked)
	if linked < 0.05 || linked < 3*unlinked {
		t.Errorf("linked pairs MI %.4f, unrelated %.4f", linked, unlinked)
	}
}

func mi(tab *Table, a, b int) float64 {
	x := tab.Data.MarginalTo(nil, []int{a, b})
	sa, sb := tab.Data.Domain().Size(a), tab.Data.Domain().Size(b)
	n := float64(tab.Data.Rows())
	pa, pb := make([]float64, sa), make([]float64, sb)
	for i := range sa {
		for j := range sb {
			pa[i] += x[i*sb+j] / n
			pb[j] += x[i*sb+j] / n
		}
	}
	var s float64
	for i := range sa {
		for j := range sb {
			if p := x[i*sb+j] / n; p > 0 {
				s += p * math.Log(p/(pa[i]*pb[j]))
			}
		}
	}
	return s
}

func TestCSVRoundTrip(t *testing.T) {
	tab, _ := Generate(Config{Attrs: 17, Rows: 50, Seed: 9})
	var buf bytes.Buffer
	if err := tab.WriteCSV(&buf); err != nil {
		t.Fatal(err)
	}
	sizes := map[string]int{}
	dom := tab.Data.Domain()
	for a := range dom.Len() {
		sizes[dom.Name(a)] = dom.Size(a)
	}
	back, err := pgmcsv.Read(strings.NewReader(buf.String()), sizes)
	if err != nil {
		t.Fatal(err)
	}
	for a := range dom.Len() {
		if !slices.Equal(back.Column(a), tab.Data.Column(a)) {
			t.Fatalf("column %d differs after the CSV round trip", a)
		}
	}
	if !strings.HasPrefix(string(tab.DomainJSON()), `{"c0": `) && !strings.HasPrefix(string(tab.DomainJSON()), `{"n0": `) {
		t.Errorf("domain JSON %s", tab.DomainJSON()[:20])
	}
}
