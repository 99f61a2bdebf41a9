// Package registry lists dpsql's synthesizers by name for the server and
// SHOW MECHANISMS. The list is explicit; nothing registers itself.
package registry

import (
	"errors"
	"fmt"
	"strings"

	"github.com/dpsql/dpsql/synth"
	"github.com/dpsql/dpsql/synth/aim"
	"github.com/dpsql/dpsql/synth/dualquery"
	"github.com/dpsql/dpsql/synth/fem"
	"github.com/dpsql/dpsql/synth/gaussian"
	"github.com/dpsql/dpsql/synth/gem"
	"github.com/dpsql/dpsql/synth/hdmm"
	"github.com/dpsql/dpsql/synth/independent"
	"github.com/dpsql/dpsql/synth/mst"
	"github.com/dpsql/dpsql/synth/mwem"
	"github.com/dpsql/dpsql/synth/pep"
	"github.com/dpsql/dpsql/synth/privbayes"
	"github.com/dpsql/dpsql/synth/rap"
)

// ErrUnknownMechanism is wrapped by Lookup's error for an unknown name.
var ErrUnknownMechanism = errors.New("unknown mechanism")

// All returns every mechanism, AIM first (the default), in a fresh slice.
func All() []synth.Mechanism {
	return []synth.Mechanism{
		aim.Mechanism{},
		mst.Mechanism{},
		mwem.Mechanism{},
		independent.Mechanism{},
		gaussian.Mechanism{},
		pep.PEP{},
		pep.PMW{},
		pep.PMWPub{},
		pep.PEPPub{},
		gem.Mechanism{},
		gem.PubMechanism{},
		rap.Mechanism{},
		rap.SoftmaxMechanism{},
		dualquery.Mechanism{},
		dualquery.PGM{},
		fem.Mechanism{},
		privbayes.Mechanism{},
		privbayes.PGM{},
		hdmm.Mechanism{},
		hdmm.LLS{},
	}
}

// Default is the mechanism used when a statement names none.
func Default() synth.Mechanism { return aim.Mechanism{} }

// Lookup returns the mechanism called name (case-insensitive).
func Lookup(name string) (synth.Mechanism, error) {
	all := All()
	names := make([]string, len(all))
	for i, m := range all {
		if strings.EqualFold(m.Name(), strings.TrimSpace(name)) {
			return m, nil
		}
		names[i] = m.Name()
	}
	return nil, fmt.Errorf("%w %q (valid mechanisms: %s)", ErrUnknownMechanism, name, strings.Join(names, ", "))
}
