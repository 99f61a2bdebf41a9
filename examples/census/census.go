package census

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// Attribute domains. The order of each list is the order of its ENUM.
var (
	Sexes         = []string{"female", "male"}
	Races         = []string{"white", "black", "asian-pac-islander", "amer-indian-eskimo", "other"}
	Regions       = []string{"northeast", "midwest", "south", "west"}
	Educations    = []string{"preschool", "primary", "some-hs", "hs-grad", "some-college", "assoc", "bachelors", "masters", "prof-school", "doctorate"}
	MaritalStatus = []string{"never-married", "married", "divorced", "separated", "widowed"}
	Workclasses   = []string{"private", "self-emp", "federal-gov", "state-gov", "local-gov", "without-pay"}
	Occupations   = []string{"admin-clerical", "craft-repair", "exec-managerial", "farming-fishing", "handlers-cleaners", "machine-op", "other-service", "prof-specialty", "protective-serv", "sales", "tech-support", "transport-moving"}
	Incomes       = []string{"<=50K", ">50K"}
)

// Numeric bounds, enforced by CHECK constraints in TableDDL.
const (
	MinAge, MaxAge             = 17, 90
	MinHours, MaxHours         = 1, 99
	MinCapitalGain, MaxCapGain = 0, 99999
)

// Columns are the generated columns, in the order of Person.Values (the
// table's AUTO_INCREMENT id column comes first and is not generated).
var Columns = []string{"age", "sex", "race", "region", "education", "marital_status", "workclass", "occupation", "hours_per_week", "capital_gain", "income"}

// Person is one generated row. Categorical fields are indexes into the
// domain lists above.
type Person struct {
	Age           int
	Sex           int
	Race          int
	Region        int
	Education     int
	MaritalStatus int
	Workclass     int
	Occupation    int
	HoursPerWeek  int
	CapitalGain   int
	Income        int
}

// Values returns p's column values in the order of Columns: ints for
// numeric columns, strings for ENUM columns.
func (p Person) Values() []any {
	return []any{
		p.Age, Sexes[p.Sex], Races[p.Race], Regions[p.Region], Educations[p.Education],
		MaritalStatus[p.MaritalStatus], Workclasses[p.Workclass], Occupations[p.Occupation],
		p.HoursPerWeek, p.CapitalGain, Incomes[p.Income],
	}
}

// TableDDL returns the CREATE TABLE statement for the demo table.
func TableDDL(table string) string {
	enum := func(vals []string) string {
		q := make([]string, len(vals))
		for i, v := range vals {
			q[i] = "'" + v + "'"
		}
		return "ENUM(" + strings.Join(q, ",") + ")"
	}
	return fmt.Sprintf("CREATE TABLE `%s` (\n"+
		"  id INT NOT NULL AUTO_INCREMENT PRIMARY KEY,\n"+
		"  age INT NOT NULL CHECK (age BETWEEN %d AND %d),\n"+
		"  sex %s NOT NULL,\n"+
		"  race %s NOT NULL,\n"+
		"  region %s NOT NULL,\n"+
		"  education %s NOT NULL,\n"+
		"  marital_status %s NOT NULL,\n"+
		"  workclass %s NOT NULL,\n"+
		"  occupation %s NOT NULL,\n"+
		"  hours_per_week INT NOT NULL CHECK (hours_per_week BETWEEN %d AND %d),\n"+
		"  capital_gain INT NOT NULL CHECK (capital_gain BETWEEN %d AND %d),\n"+
		"  income %s NOT NULL\n"+
		")",
		strings.ReplaceAll(table, "`", "``"), MinAge, MaxAge,
		enum(Sexes), enum(Races), enum(Regions), enum(Educations), enum(MaritalStatus),
		enum(Workclasses), enum(Occupations), MinHours, MaxHours, MinCapitalGain, MaxCapGain, enum(Incomes))
}

// Generator draws people from the network. Its zero value is not usable;
// use New.
type Generator struct {
	src *rand.PCG
}

// New returns a generator whose output is fixed by seed.
func New(seed uint64) *Generator {
	return &Generator{src: rand.NewPCG(seed, 0x9e3779b97f4a7c15)}
}

// Generate returns n people from a generator seeded with seed.
func Generate(n int, seed uint64) []Person {
	g := New(seed)
	out := make([]Person, n)
	for i := range out {
		out[i] = g.Next()
	}
	return out
}

// uniform returns a float in [0, 1) from the top 53 bits of the source.
func (g *Generator) uniform() float64 {
	return float64(g.src.Uint64()>>11) / (1 << 53)
}

// pick returns an index drawn with probability proportional to weights.
func (g *Generator) pick(weights []float64) int {
	var total float64
	for _, w := range weights {
		total += w
	}
	u := g.uniform() * total
	for i, w := range weights {
		if u < w {
			return i
		}
		u -= w
	}
	return len(weights) - 1
}

// normal returns an approximately normal draw (Irwin–Hall sum of twelve
// uniforms), using arithmetic only so the output is platform-independent.
func (g *Generator) normal(mean, sd float64) float64 {
	var s float64
	for range 12 {
		s += g.uniform()
	}
	return mean + sd*(s-6)
}

// Education levels grouped for the conditional tables.
const (
	tierLow  = iota // up to hs-grad
	tierMid         // some-college, assoc
	tierHigh        // bachelors and above
)

func tier(edu int) int {
	switch {
	case edu <= 3:
		return tierLow
	case edu <= 5:
		return tierMid
	default:
		return tierHigh
	}
}

// Next draws one person.
func (g *Generator) Next() Person {
	var p Person
	// Age: skewed towards the young, as in a working-age census extract.
	u := g.uniform()
	p.Age = MinAge + int(float64(MaxAge-MinAge+1)*u*(0.35+0.65*u))
	p.Sex = g.pick([]float64{0.48, 0.52})
	p.Region = g.pick([]float64{0.18, 0.21, 0.38, 0.23})
	raceW := []float64{0.80, 0.11, 0.04, 0.01, 0.04}
	switch p.Region {
	case 2: // south
		raceW[1] = 0.20
	case 3: // west
		raceW[2], raceW[3] = 0.10, 0.02
	}
	p.Race = g.pick(raceW)

	eduW := []float64{0.2, 1.5, 7, 32, 22, 7.5, 17, 6.5, 2, 1.5}
	if p.Age < 22 {
		eduW = []float64{0.1, 0.5, 30, 40, 27, 2, 0.4, 0, 0, 0}
	} else if p.Age < 25 {
		eduW[7], eduW[8], eduW[9] = 1, 0.2, 0.05
	}
	p.Education = g.pick(eduW)

	var marW []float64
	switch {
	case p.Age < 25:
		marW = []float64{0.86, 0.11, 0.02, 0.01, 0}
	case p.Age < 35:
		marW = []float64{0.42, 0.46, 0.09, 0.03, 0.002}
	case p.Age < 55:
		marW = []float64{0.15, 0.60, 0.17, 0.04, 0.03}
	default:
		marW = []float64{0.07, 0.58, 0.15, 0.02, 0.18}
	}
	p.MaritalStatus = g.pick(marW)

	t := tier(p.Education)
	wcW := [][]float64{
		tierLow:  {0.80, 0.09, 0.01, 0.03, 0.05, 0.02},
		tierMid:  {0.74, 0.10, 0.04, 0.05, 0.07, 0.005},
		tierHigh: {0.62, 0.13, 0.06, 0.09, 0.10, 0.002},
	}[t]
	p.Workclass = g.pick(wcW)

	occW := [][]float64{
		//        adm  craft exec farm hand  mach oserv prof  prot sales tech trans
		tierLow:  {10, 19, 4, 5, 9, 12, 17, 1, 2, 10, 1, 10},
		tierMid:  {17, 13, 11, 2, 3, 5, 9, 7, 3, 14, 5, 5},
		tierHigh: {8, 3, 26, 1, 1, 1, 3, 40, 2, 11, 3, 1},
	}[t]
	var occ [12]float64
	copy(occ[:], occW)
	if p.Sex == 0 { // female: the classic census skew
		occ[0] *= 2.2
		occ[1] *= 0.15
		occ[6] *= 1.6
		occ[11] *= 0.2
	}
	p.Occupation = g.pick(occ[:])

	mean := 40.0
	switch {
	case p.Age < 22:
		mean = 26
	case p.Age >= 65:
		mean = 24
	}
	if p.Sex == 1 {
		mean += 3.5
	}
	if p.Workclass == 1 {
		mean += 5
	}
	if p.Occupation == 2 || p.Occupation == 7 {
		mean += 3
	}
	h := int(g.normal(mean, 10) + 0.5)
	p.HoursPerWeek = min(max(h, MinHours), MaxHours)

	if g.uniform() < 0.05+0.07*float64(t)+0.0015*float64(p.Age-MinAge) {
		v := g.uniform()
		p.CapitalGain = min(100+int(v*v*v*float64(MaxCapGain-100)), MaxCapGain)
	}

	// Income: a score through a softsign link (arithmetic only).
	score := -6.8 + 0.55*float64(p.Education) + 0.045*float64(min(p.Age, 60)-MinAge)
	if p.MaritalStatus == 1 {
		score += 1.4
	}
	if p.Occupation == 2 || p.Occupation == 7 {
		score += 0.9
	}
	if p.Sex == 1 {
		score += 0.35
	}
	if p.Workclass == 5 {
		score -= 4
	}
	score += 0.035 * float64(p.HoursPerWeek-40)
	if p.CapitalGain > 5000 {
		score += 2.5
	}
	prob := 0.5 + 0.5*score/(1+abs(score))
	if g.uniform() < prob {
		p.Income = 1
	}
	return p
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
