package budget

import (
	"fmt"
	"time"
)

// Status is the state of a ledger entry.
type Status uint8

const (
	// StatusReserved: the charge is spent; the release has not finished (or
	// the server stopped before it did).
	StatusReserved Status = iota + 1
	// StatusCommitted: the result was released; the charge is spent.
	StatusCommitted
	// StatusFailed: the request failed after reading data; the charge stays
	// spent.
	StatusFailed
	// StatusRefunded: the request was cancelled before reading data; the
	// charge was returned.
	StatusRefunded
	// StatusBudgetSet: the owner set the table's total budget.
	StatusBudgetSet
)

var statusNames = [...]string{
	StatusReserved:  "reserved",
	StatusCommitted: "committed",
	StatusFailed:    "failed",
	StatusRefunded:  "refunded",
	StatusBudgetSet: "budget set",
}

func (s Status) String() string {
	if s.valid() {
		return statusNames[s]
	}
	return fmt.Sprintf("Status(%d)", s)
}

func (s Status) valid() bool { return s >= StatusReserved && s <= StatusBudgetSet }

// spends reports whether an entry in status s counts towards ρ_spent.
func (s Status) spends() bool {
	return s == StatusReserved || s == StatusCommitted || s == StatusFailed
}

// Entry is one line of a table's privacy ledger.
type Entry struct {
	Table     string    // stable table ID
	ID        uint64    // sequence number within the table, from 1
	Time      time.Time // when the entry was appended
	Updated   time.Time // when its status last changed
	User      string
	Statement string
	Mechanism string
	Rho       float64 // ρ charged, after rounding up (0 for StatusBudgetSet)
	Status    Status
	Note      string

	// The total set, for StatusBudgetSet entries.
	Epsilon  float64
	Delta    float64
	RhoTotal float64
}

// BudgetInfo is a table's budget as shown to users.
type BudgetInfo struct {
	Table string // stable table ID
	Name  string // display name

	EpsilonTotal float64
	Delta        float64

	RhoTotal     float64
	RhoSpent     float64
	RhoRemaining float64

	// ε equivalents of ρ_spent and ρ_remaining at Delta by the tight
	// conversion. As the conversion is not linear, they do not add up to
	// EpsilonTotal.
	EpsilonSpent     float64
	EpsilonRemaining float64
}

// tableRecord is the stored form of a table's budget.
type tableRecord struct {
	Name    string  `json:"name"`
	Epsilon float64 `json:"epsilon"`
	Delta   float64 `json:"delta"`
	Total   units   `json:"rho_total_units"`
	Spent   units   `json:"rho_spent_units"`
}

// entryRecord is the stored form of an Entry.
type entryRecord struct {
	Time      time.Time `json:"time"`
	Updated   time.Time `json:"updated"`
	User      string    `json:"user"`
	Statement string    `json:"statement"`
	Mechanism string    `json:"mechanism,omitempty"`
	Rho       units     `json:"rho_units"`
	Status    Status    `json:"status"`
	Note      string    `json:"note,omitempty"`
	Epsilon   float64   `json:"epsilon,omitempty"`
	Delta     float64   `json:"delta,omitempty"`
	Total     units     `json:"rho_total_units,omitempty"`
}

func (r *entryRecord) entry(table string, id uint64) Entry {
	return Entry{
		Table:     table,
		ID:        id,
		Time:      r.Time,
		Updated:   r.Updated,
		User:      r.User,
		Statement: r.Statement,
		Mechanism: r.Mechanism,
		Rho:       r.Rho.rho(),
		Status:    r.Status,
		Note:      r.Note,
		Epsilon:   r.Epsilon,
		Delta:     r.Delta,
		RhoTotal:  r.Total.rho(),
	}
}
