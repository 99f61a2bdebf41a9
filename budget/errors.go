package budget

import (
	"errors"
	"fmt"
)

var (
	// ErrBudgetExhausted is returned (wrapped in an *ExhaustedError) when a
	// request costs more than the table's remaining budget.
	ErrBudgetExhausted = errors.New("privacy budget exhausted")

	// ErrNoBudget is returned when a table has no privacy budget.
	ErrNoBudget = errors.New("no privacy budget set")

	// ErrBelowSpent is returned when a new total would be below the budget
	// already spent.
	ErrBelowSpent = errors.New("privacy budget below amount spent")

	// ErrInvalidParameter is returned for a privacy parameter outside its
	// domain (ε, δ, ρ, σ, sensitivity).
	ErrInvalidParameter = errors.New("invalid privacy parameter")

	// ErrReservationClosed is returned when a reservation is committed or
	// failed twice.
	ErrReservationClosed = errors.New("reservation already closed")

	// ErrCorrupt is returned when the stored ledger violates an invariant.
	ErrCorrupt = errors.New("privacy ledger corrupt")

	// ErrVersion is returned when the database holds a ledger format this
	// package does not know.
	ErrVersion = errors.New("unknown privacy ledger format")

	// ErrNoLedger is returned by OpenLedger on a read-only database that
	// holds no ledger (it would be created on a read-write open).
	ErrNoLedger = errors.New("no privacy ledger in the database")
)

// ExhaustedError reports a request refused because it would exceed a table's
// budget. It wraps ErrBudgetExhausted.
type ExhaustedError struct {
	Table string // stable table ID
	Name  string // display name

	Requested float64 // ρ the request costs
	Remaining float64 // ρ left before the request

	// The same figures as ε at the table's δ, by the tight conversion.
	Delta            float64
	RequestedEpsilon float64
	RemainingEpsilon float64
}

func (e *ExhaustedError) Error() string {
	name := e.Name
	if name == "" {
		name = e.Table
	}
	return fmt.Sprintf("privacy budget exhausted for table %s: the request costs ρ=%.6g (ε=%.4g at δ=%.3g) but only ρ=%.6g (ε=%.4g) remains",
		name, e.Requested, e.RequestedEpsilon, e.Delta, e.Remaining, e.RemainingEpsilon)
}

// Unwrap returns ErrBudgetExhausted.
func (e *ExhaustedError) Unwrap() error { return ErrBudgetExhausted }

// paramError is an invalid privacy parameter, described for a user. It
// wraps ErrInvalidParameter.
type paramError struct{ msg string }

func (e *paramError) Error() string { return "budget: " + e.msg + ": " + ErrInvalidParameter.Error() }
func (e *paramError) Unwrap() error { return ErrInvalidParameter }

func invalidParam(format string, args ...any) error {
	return &paramError{msg: fmt.Sprintf(format, args...)}
}

// Reason returns what is wrong with the parameter behind err, a chain
// wrapping ErrInvalidParameter, in words for a user and without the
// chain's context ("rho 9e+05 exceeds the maximum 8192"); for any other
// error it returns err's text.
func Reason(err error) string {
	var pe *paramError
	if errors.As(err, &pe) {
		return pe.msg
	}
	return err.Error()
}
