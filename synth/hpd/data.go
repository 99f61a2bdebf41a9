package hpd

import (
	"context"
	"fmt"
	"slices"
)

// Domain is the public shape of hierarchical data: the code counts of the
// group and individual attributes and the maximum household size K.
type Domain struct {
	GroupNames []string
	Group      []int // code counts of the group attributes
	IndivNames []string
	Indiv      []int // code counts of the individual attributes
	K          int   // maximum persons per household (larger ones are truncated)

	// Typed households (seed 003 §6): individual attribute Rel is each
	// person's relationship, with codes RelCodes = {head, spouse, child};
	// every household has exactly one head (its first person), then at
	// most one spouse, then at most K−2 children.
	Typed    bool
	Rel      int
	RelCodes [3]int
}

// Relationship slots of typed households.
const (
	Head = iota
	Spouse
	Child
)

// Check validates d.
func (d *Domain) Check() error {
	if d.K < 1 || d.K > 64 {
		return fmt.Errorf("hpd: maximum household size K = %d outside 1..64", d.K)
	}
	if len(d.Indiv) == 0 {
		return fmt.Errorf("hpd: persons need at least one attribute")
	}
	if len(d.GroupNames) != len(d.Group) || len(d.IndivNames) != len(d.Indiv) {
		return fmt.Errorf("hpd: %d/%d attribute names for %d/%d attributes",
			len(d.GroupNames), len(d.IndivNames), len(d.Group), len(d.Indiv))
	}
	for _, n := range append(slices.Clone(d.Group), d.Indiv...) {
		if n < 1 || n > 1<<16 {
			return fmt.Errorf("hpd: attribute with %d codes", n)
		}
	}
	if d.Typed {
		if d.Rel < 0 || d.Rel >= len(d.Indiv) || d.K < 2 {
			return fmt.Errorf("hpd: typed households need a relationship attribute and K ≥ 2")
		}
		c := d.RelCodes
		if c[0] == c[1] || c[0] == c[2] || c[1] == c[2] || slices.ContainsFunc(c[:], func(x int) bool { return x < 0 || x >= d.Indiv[d.Rel] }) {
			return fmt.Errorf("hpd: relationship codes %v are not three distinct codes of %s", c, d.IndivNames[d.Rel])
		}
	}
	return nil
}

// slotType is the relationship of slot k of a typed household.
func slotType(k int) int { return min(k, Child) }

// Records are encoded households: household i has group codes
// G[i·nG:(i+1)·nG] and persons Off[i]..Off[i+1]−1, person j with codes
// P[j·nI:(j+1)·nI]. W, if non-nil, weighs each household (the explicit
// histogram uses it); nil means weight 1.
type Records struct {
	NG, NI int // attributes per household and per person
	G      []uint16
	Off    []int32
	P      []uint16
	W      []float64
}

// Households is the number of households.
func (r *Records) Households() int { return len(r.Off) - 1 }

// Persons is the number of persons.
func (r *Records) Persons() int { return int(r.Off[len(r.Off)-1]) }

// Check validates r against d, including the truncation rule (no household
// above K persons) and that every household has a person.
func (r *Records) Check(d *Domain) error {
	if r.NG != len(d.Group) || r.NI != len(d.Indiv) {
		return fmt.Errorf("hpd: records have %d/%d attributes, domain %d/%d", r.NG, r.NI, len(d.Group), len(d.Indiv))
	}
	if len(r.Off) < 1 || r.Off[0] != 0 {
		return fmt.Errorf("hpd: bad household offsets")
	}
	n := len(r.Off) - 1
	if len(r.G) != n*r.NG || len(r.P) != r.Persons()*r.NI || (r.W != nil && len(r.W) != n) {
		return fmt.Errorf("hpd: record arrays do not match %d households", n)
	}
	for i := range n {
		s := r.Off[i+1] - r.Off[i]
		if s < 1 || int(s) > d.K {
			return fmt.Errorf("hpd: household %d has %d persons (want 1..%d)", i, s, d.K)
		}
		if d.Typed {
			if err := r.checkTyped(d, i); err != nil {
				return err
			}
		}
	}
	for i, c := range r.G {
		if int(c) >= d.Group[i%r.NG] {
			return fmt.Errorf("hpd: group code %d out of domain", c)
		}
	}
	for i, c := range r.P {
		if int(c) >= d.Indiv[i%r.NI] {
			return fmt.Errorf("hpd: person code %d out of domain", c)
		}
	}
	return nil
}

// checkTyped checks that household h is head, [spouse], children….
func (r *Records) checkTyped(d *Domain, h int) error {
	k, children := 0, 0
	for p := r.Off[h]; p < r.Off[h+1]; p++ {
		rel := int(r.P[int(p)*r.NI+d.Rel])
		switch {
		case k == 0 && rel == d.RelCodes[Head], k == 1 && rel == d.RelCodes[Spouse]:
			k++
		case k >= 1 && rel == d.RelCodes[Child]:
			k = 2
			children++
		default:
			return fmt.Errorf("hpd: typed household %d is not one head, at most one spouse, then children", h)
		}
	}
	if children > d.K-2 {
		return fmt.Errorf("hpd: typed household %d has %d children (at most K−2 = %d)", h, children, d.K-2)
	}
	return nil
}

// types returns the relationship slot of each person of household h (typed
// domains).
func (r *Records) types(d *Domain, h int, out []int) []int {
	out = out[:0]
	for p := r.Off[h]; p < r.Off[h+1]; p++ {
		rel := int(r.P[int(p)*r.NI+d.Rel])
		t := Child
		switch rel {
		case d.RelCodes[Head]:
			t = Head
		case d.RelCodes[Spouse]:
			t = Spouse
		}
		out = append(out, t)
	}
	return out
}

// Source is the narrow interface through which a mechanism reads private
// data: the household records, truncated to K persons each.
type Source interface {
	Households(ctx context.Context) (*Records, error)
}

// RecordsSource is a Source over records in memory.
type RecordsSource struct{ R *Records }

// Households returns the records.
func (s RecordsSource) Households(context.Context) (*Records, error) { return s.R, nil }

// Kind is a query class.
type Kind uint8

const (
	// GroupLevel (Q_G) counts households.
	GroupLevel Kind = iota
	// IndivLevel (Q_I) counts persons.
	IndivLevel
	// RelationLevel (Q_R, typed households) counts persons with the I values
	// who have a relative (by Rel) with the I2 values.
	RelationLevel
)

// Relation is an intra-household relationship of Q_R.
type Relation uint8

const (
	// MarriedTo: heads and spouses whose spouse (head) matches.
	MarriedTo Relation = iota
	// HasChild: heads and spouses with at least one matching child.
	HasChild
	// HasParent: children whose head or spouse matches.
	HasParent
)

func (r Relation) String() string {
	return [...]string{"married-to", "has-child", "has-parent"}[r]
}

func (k Kind) String() string {
	switch k {
	case GroupLevel:
		return "Q_G"
	case IndivLevel:
		return "Q_I"
	}
	return "Q_R"
}

// Cond fixes attribute Attr (of the group attributes if Group, of the
// relative's attributes I2 if Relative, else of the individual ones I) to
// Value.
type Cond struct {
	Group    bool
	Relative bool // Q_R only
	Attr     int
	Value    int
}

// condAttrs returns the attributes and values (as decoded) that w refers
// to.
func (q *QuerySet) condAttrs(w Cond, vG, vI []int) ([]int, []int) {
	switch {
	case w.Group:
		return q.G, vG
	case w.Relative:
		return q.I2, vI[len(q.I):]
	}
	return q.I, vI
}

// QuerySet is the family of counting queries of one kind over every value
// combination of the group attributes G and individual attributes I
// (increasing indexes) that satisfies Where (each Where attribute must be
// in G or I). Group-level: households with those G values that contain at
// least one person with all those I values. Individual-level: persons with
// those I values in a household with those G values.
//
// A RelationLevel set counts the persons with the I values, in a household
// with the G values, who have a relative (Rel) with the I2 values; its
// cells run over G, then I, then I2. Its Where may fix I2 attributes
// (Cond.Relative); fixing the relationship attribute in I or I2 restricts
// the relation to one type of person or relative (a spouse married to a
// head, a child whose head …).
type QuerySet struct {
	Kind  Kind
	G, I  []int
	Where []Cond
	Rel   Relation
	I2    []int
}

func (q *QuerySet) String() string {
	if q.Kind == RelationLevel {
		return fmt.Sprintf("Q_R(G%v I%v %v I%v where %v)", q.G, q.I, q.Rel, q.I2, q.Where)
	}
	return fmt.Sprintf("%v(G%v I%v where %v)", q.Kind, q.G, q.I, q.Where)
}

// cells is the number of value combinations; strides are row-major over G
// then I.
func (q *QuerySet) cells(d *Domain) (nG, nI int) {
	nG, nI = 1, 1
	for _, a := range q.G {
		nG *= d.Group[a]
	}
	for _, b := range q.I {
		nI *= d.Indiv[b]
	}
	for _, b := range q.I2 {
		nI *= d.Indiv[b]
	}
	return nG, nI
}

// decode writes the G and I values of cell c (then the I2 values, after
// the I ones in vI).
func (q *QuerySet) decode(d *Domain, c int, vG, vI []int) {
	_, nI := q.cells(d)
	g, i := c/nI, c%nI
	for j := len(q.I2) - 1; j >= 0; j-- {
		n := d.Indiv[q.I2[j]]
		vI[len(q.I)+j] = i % n
		i /= n
	}
	for j := len(q.I) - 1; j >= 0; j-- {
		n := d.Indiv[q.I[j]]
		vI[j] = i % n
		i /= n
	}
	for j := len(q.G) - 1; j >= 0; j-- {
		n := d.Group[q.G[j]]
		vG[j] = g % n
		g /= n
	}
}

// matches reports whether cell c satisfies Where.
func (q *QuerySet) matches(d *Domain, c int, vG, vI []int) bool {
	q.decode(d, c, vG, vI)
	for _, w := range q.Where {
		attrs, vals := q.condAttrs(w, vG, vI)
		if j := slices.Index(attrs, w.Attr); j < 0 || vals[j] != w.Value {
			return false
		}
	}
	return true
}

// Validate checks q against d.
func (q *QuerySet) Validate(d *Domain) error {
	if q.Kind > RelationLevel {
		return fmt.Errorf("hpd: query kind %d", q.Kind)
	}
	if q.Kind == RelationLevel {
		if !d.Typed || q.Rel > HasParent {
			return fmt.Errorf("hpd: relationship queries need typed households")
		}
		for j, b := range q.I2 {
			if b < 0 || b >= len(d.Indiv) || (j > 0 && q.I2[j-1] >= b) {
				return fmt.Errorf("hpd: relative attributes %v are not increasing indexes", q.I2)
			}
		}
	} else if len(q.I2) > 0 {
		return fmt.Errorf("hpd: only relationship queries have relative attributes")
	}
	check := func(attrs []int, n int, what string) error {
		for j, a := range attrs {
			if a < 0 || a >= n || (j > 0 && attrs[j-1] >= a) {
				return fmt.Errorf("hpd: %s attributes %v are not increasing indexes below %d", what, attrs, n)
			}
		}
		return nil
	}
	if err := check(q.G, len(d.Group), "group"); err != nil {
		return err
	}
	if err := check(q.I, len(d.Indiv), "individual"); err != nil {
		return err
	}
	nG, nI := q.cells(d)
	if nG*nI > 1<<20 {
		return fmt.Errorf("hpd: query set %v has %d cells (limit %d)", q, nG*nI, 1<<20)
	}
	for _, w := range q.Where {
		attrs, sizes := q.I, d.Indiv
		switch {
		case w.Group && w.Relative:
			return fmt.Errorf("hpd: condition %+v is both a household's and a relative's", w)
		case w.Group:
			attrs, sizes = q.G, d.Group
		case w.Relative:
			if q.Kind != RelationLevel {
				return fmt.Errorf("hpd: only relationship queries have conditions on a relative")
			}
			attrs = q.I2
		}
		if !slices.Contains(attrs, w.Attr) || w.Value < 0 || w.Value >= sizes[w.Attr] {
			return fmt.Errorf("hpd: condition %+v is not on an attribute of %v", w, q)
		}
	}
	return nil
}

// AllKWay returns every query set over k attributes (or all attributes if
// there are fewer), of both kinds: the default workload.
func AllKWay(d *Domain, k int) []QuerySet {
	n := len(d.Group) + len(d.Indiv)
	k = min(k, n)
	var out []QuerySet
	idx := make([]int, k)
	var rec func(pos, start int)
	rec = func(pos, start int) {
		if pos == k {
			var g, in []int
			for _, a := range idx {
				if a < len(d.Group) {
					g = append(g, a)
				} else {
					in = append(in, a-len(d.Group))
				}
			}
			out = append(out, QuerySet{Kind: GroupLevel, G: g, I: in}, QuerySet{Kind: IndivLevel, G: slices.Clone(g), I: slices.Clone(in)})
			return
		}
		for a := start; a < n; a++ {
			idx[pos] = a
			rec(pos+1, a+1)
		}
	}
	rec(0, 0)
	return out
}

// Answers counts every cell of q on r (weighted by r.W), as a table of
// nG·nI cells. It is the exact answer on data and the model answer of the
// explicit histogram.
func Answers(d *Domain, r *Records, q *QuerySet) []float64 {
	nG, nI := q.cells(d)
	tab := make([]float64, nG*nI)
	if q.Kind == RelationLevel {
		relationAnswers(d, r, q, tab)
		return tab
	}
	var seen []int
	for h := range r.Households() {
		w := 1.0
		if r.W != nil {
			w = r.W[h]
			if w == 0 {
				continue
			}
		}
		g := 0
		for _, a := range q.G {
			g = g*d.Group[a] + int(r.G[h*r.NG+a])
		}
		base := g * nI
		if q.Kind == GroupLevel && len(q.I) == 0 {
			tab[base] += w
			continue
		}
		seen = seen[:0]
		for p := r.Off[h]; p < r.Off[h+1]; p++ {
			c := 0
			for _, b := range q.I {
				c = c*d.Indiv[b] + int(r.P[int(p)*r.NI+b])
			}
			if q.Kind == IndivLevel {
				tab[base+c] += w
			} else if !slices.Contains(seen, c) {
				seen = append(seen, c)
				tab[base+c] += w
			}
		}
	}
	return tab
}

// relationAnswers counts a relationship set on typed records into tab.
func relationAnswers(d *Domain, r *Records, q *QuerySet, tab []float64) {
	_, nI := q.cells(d)
	n2 := 1
	for _, b := range q.I2 {
		n2 *= d.Indiv[b]
	}
	cell := func(p int32, attrs []int) int {
		c := 0
		for _, b := range attrs {
			c = c*d.Indiv[b] + int(r.P[int(p)*r.NI+b])
		}
		return c
	}
	var types, seen []int
	for h := range r.Households() {
		w := 1.0
		if r.W != nil {
			w = r.W[h]
		}
		g := 0
		for _, a := range q.G {
			g = g*d.Group[a] + int(r.G[h*r.NG+a])
		}
		types = r.types(d, h, types)
		off := r.Off[h]
		for i, t1 := range types {
			var want [3]bool // relative types that count
			switch {
			case q.Rel == MarriedTo && t1 == Head:
				want[Spouse] = true
			case q.Rel == MarriedTo && t1 == Spouse:
				want[Head] = true
			case q.Rel == HasChild && t1 != Child:
				want[Child] = true
			case q.Rel == HasParent && t1 == Child:
				want[Head], want[Spouse] = true, true
			default:
				continue
			}
			c1 := cell(off+int32(i), q.I)
			seen = seen[:0]
			for j, t2 := range types {
				if j == i || !want[t2] {
					continue
				}
				c2 := cell(off+int32(j), q.I2)
				if !slices.Contains(seen, c2) {
					seen = append(seen, c2)
					tab[g*nI+c1*n2+c2] += w
				}
			}
		}
	}
}

// AllRelations returns the default Q_R workload of a typed domain: every
// relation with one person attribute and one relative attribute (other than
// the relationship itself).
func AllRelations(d *Domain) []QuerySet {
	var out []QuerySet
	for rel := MarriedTo; rel <= HasParent; rel++ {
		for b := range d.Indiv {
			for b2 := range d.Indiv {
				if b != d.Rel && b2 != d.Rel {
					out = append(out, QuerySet{Kind: RelationLevel, Rel: rel, I: []int{b}, I2: []int{b2}})
				}
			}
		}
	}
	return out
}
