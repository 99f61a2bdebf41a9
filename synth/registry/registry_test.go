package registry

import (
	"errors"
	"strings"
	"testing"

	"github.com/dpsql/dpsql/synth"
)

func TestLookup(t *testing.T) {
	seen := map[string]bool{}
	for _, m := range All() {
		if seen[m.Name()] || m.Name() != strings.ToLower(m.Name()) {
			t.Errorf("mechanism name %q duplicated or not lower case", m.Name())
		}
		seen[m.Name()] = true
		got, err := Lookup(strings.ToUpper(m.Name()))
		if err != nil || got.Name() != m.Name() {
			t.Errorf("Lookup(%q) = %v, %v", m.Name(), got, err)
		}
		// Every schema parameter is upper case, documented and accepted at
		// its minimum.
		for _, p := range m.Schema() {
			if p.Name != strings.ToUpper(p.Name) || p.Doc == "" || p.Default == "" {
				t.Errorf("%s: parameter %+v badly declared", m.Name(), p)
			}
			if _, err := m.New([]synth.Option{{Name: p.Name, Value: p.Min}}); err != nil {
				t.Errorf("%s: %s = min %v rejected: %v", m.Name(), p.Name, p.Min, err)
			}
		}
		if _, err := m.New(nil); err != nil {
			t.Errorf("%s: defaults rejected: %v", m.Name(), err)
		}
		if _, err := m.New([]synth.Option{{Name: "NO_SUCH_OPTION", Value: 1}}); !errors.Is(err, synth.ErrUnknownOption) {
			t.Errorf("%s: unknown option: err = %v", m.Name(), err)
		}
	}
	for _, want := range []string{"aim", "mst", "mwem", "independent", "gaussian"} {
		if !seen[want] {
			t.Errorf("mechanism %q missing", want)
		}
	}
	if _, err := Lookup("no_such_mechanism"); !errors.Is(err, ErrUnknownMechanism) {
		t.Errorf("Lookup(no_such_mechanism): err = %v", err)
	}
	if Default().Name() != "aim" {
		t.Errorf("default mechanism %q", Default().Name())
	}
}
