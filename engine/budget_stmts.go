package engine

import (
	"context"
	"errors"

	"github.com/dpsql/dpsql/budget"
)

// ledgerError maps an error of the privacy ledger to the engine error a
// client sees:
//
//   - a refused request (*budget.ExhaustedError) is ErrBudgetExhausted, with
//     the request's cost and what remains, as ρ and as ε at the table's δ;
//   - a table without a budget is ErrNoBudget, telling the user to ask the
//     owner for SET PRIVACY BUDGET;
//   - an invalid parameter or a total below what is spent is ErrBadParameter;
//   - a cancelled context is ErrCancelled;
//   - anything else (a corrupt ledger, a failed write) is ErrInternal.
//
// A nil err stays nil. Errors that already carry an engine kind are returned
// unchanged.
func (e *Engine) ledgerError(err error) error {
	if err == nil {
		return nil
	}
	var ee *Error
	if errors.As(err, &ee) {
		return err
	}
	var ex *budget.ExhaustedError
	switch {
	case errors.As(err, &ex):
		name := ex.Name
		if name == "" {
			name = "the table"
		}
		return ErrBudgetExhausted.New("privacy budget of %s exhausted: the request costs ρ=%.6g (ε=%.4g at δ=%.3g) but only ρ=%.6g (ε=%.4g) remains; nothing was spent",
			name, ex.Requested, ex.RequestedEpsilon, ex.Delta, ex.Remaining, ex.RemainingEpsilon)
	case errors.Is(err, budget.ErrNoBudget):
		return ErrNoBudget.New("the table has no privacy budget: ask its owner to run SET PRIVACY BUDGET FOR <table> WITH EPSILON = <ε>, DELTA = <δ>")
	case errors.Is(err, budget.ErrBelowSpent), errors.Is(err, budget.ErrInvalidParameter):
		return ErrBadParameter.Wrap(err, "privacy budget")
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return ErrCancelled.Wrap(err, "statement cancelled")
	default:
		return ErrInternal.Wrap(err, "privacy ledger")
	}
}
