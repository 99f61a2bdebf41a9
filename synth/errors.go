package synth

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel errors; test for them with errors.Is.
var (
	// ErrUnknownOption is wrapped by errors for an option the mechanism's
	// schema does not declare.
	ErrUnknownOption = errors.New("unknown option")
	// ErrInvalidOption is wrapped by errors for an option with a bad value.
	ErrInvalidOption = errors.New("invalid option value")
	// ErrInvalidInput is wrapped by errors for an Input a runner cannot use
	// (non-positive ρ, empty or out-of-domain workload, missing noise).
	ErrInvalidInput = errors.New("invalid mechanism input")
)

// OptionError describes a rejected option.
type OptionError struct {
	Mechanism string
	Name      string
	Value     any
	Reason    string
	Valid     []string // the valid option names, for unknown options
	Err       error    // ErrUnknownOption or ErrInvalidOption
}

func (e *OptionError) Error() string {
	if errors.Is(e.Err, ErrUnknownOption) {
		return fmt.Sprintf("%s: unknown option %q (valid options: %s)",
			e.Mechanism, e.Name, strings.Join(e.Valid, ", "))
	}
	return fmt.Sprintf("%s: option %s = %v: %s", e.Mechanism, e.Name, e.Value, e.Reason)
}

// Unwrap returns ErrUnknownOption or ErrInvalidOption.
func (e *OptionError) Unwrap() error { return e.Err }
