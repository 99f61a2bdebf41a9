package hpd

import "github.com/dpsql/dpsql/synth"

type synthOption struct {
	name  string
	value any
}

type statusT = synth.Status

func toOpts(o []synthOption) []synth.Option {
	out := make([]synth.Option, len(o))
	for i, x := range o {
		out[i] = synth.Option{Name: x.name, Value: x.value}
	}
	return out
}
