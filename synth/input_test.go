package synth

import (
	"errors"
	"slices"
	"testing"
)

func TestCanonicalWorkload(t *testing.T) {
	w, err := CanonicalWorkload(4, []Marginal{
		{Attrs: []int{2, 0}, Weight: 1},
		{Attrs: []int{3}, Weight: 0},
		{Attrs: []int{0, 2}, Weight: 2},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(w) != 2 || !slices.Equal(w[0].Attrs, []int{0, 2}) || w[0].Weight != 3 || w[1].Weight != 0 {
		t.Errorf("canonical workload %v", w)
	}
	bad := [][]Marginal{
		nil,
		{{Attrs: nil, Weight: 1}},
		{{Attrs: []int{4}, Weight: 1}},
		{{Attrs: []int{-1}, Weight: 1}},
		{{Attrs: []int{1, 1}, Weight: 1}},
		{{Attrs: []int{1}, Weight: -1}},
		{{Attrs: []int{1}, Weight: 0}},
	}
	for _, b := range bad {
		if _, err := CanonicalWorkload(4, b); !errors.Is(err, ErrInvalidInput) {
			t.Errorf("workload %v: err = %v, want ErrInvalidInput", b, err)
		}
	}
}

type decimal string

func (d decimal) String() string { return string(d) }

func TestSchemaParse(t *testing.T) {
	s := Schema{
		{Name: "N", Kind: Int, Min: 1, Max: 10},
		{Name: "X", Kind: Float, Min: 0},
	}
	tests := []struct {
		opts []Option
		want Values
		err  error
	}{
		{opts: nil, want: Values{}},
		{opts: []Option{{"n", int8(3)}, {" x ", decimal("0.25")}}, want: Values{"N": 3, "X": 0.25}},
		{opts: []Option{{"N", uint64(10)}}, want: Values{"N": 10}},
		{opts: []Option{{"N", 11}}, err: ErrInvalidOption},
		{opts: []Option{{"N", 0}}, err: ErrInvalidOption},
		{opts: []Option{{"N", "1e400"}}, err: ErrInvalidOption},
		{opts: []Option{{"X", nil}}, err: ErrInvalidOption},
		{opts: []Option{{"X", []int{1}}}, err: ErrInvalidOption},
		{opts: []Option{{"Y", 1}}, err: ErrUnknownOption},
	}
	for _, tt := range tests {
		got, err := s.Parse("m", tt.opts)
		if !errors.Is(err, tt.err) {
			t.Errorf("%v: err = %v, want %v", tt.opts, err, tt.err)
			continue
		}
		if err == nil && len(got) != len(tt.want) {
			t.Errorf("%v: %v, want %v", tt.opts, got, tt.want)
		}
		for k, v := range tt.want {
			if got[k] != v {
				t.Errorf("%v: %s = %v, want %v", tt.opts, k, got[k], v)
			}
		}
	}
}
