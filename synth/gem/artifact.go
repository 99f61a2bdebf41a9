package gem

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"

	"github.com/dpsql/dpsql/synth/internal/nn"
)

// The generator encoding (Result.Artifact), little-endian:
//
//	magic "DPGEM", version byte (1)
//	uint32 latent, uint32 len(hidden), uint32 each width,
//	uint32 len(blocks), uint32 each block size, uint32 B
//	B·latent float64: the latent batch z
//	NumParams float64: the released (EMA) weights, layer by layer,
//	    each layer's in×out weights (row-major, y = x·W + b) then its biases
//
// It is everything needed to recompute the released mixture G(z) and to
// sample more rows from it.
const (
	artifactMagic   = "DPGEM"
	artifactVersion = 1
)

// ErrArtifact is wrapped by UnmarshalGenerator's errors.
var ErrArtifact = errors.New("gem: malformed generator encoding")

// MarshalGenerator encodes a generator: its shape, latent batch and weights.
func MarshalGenerator(arch nn.Arch, z, params []float64) []byte {
	b := append([]byte(artifactMagic), artifactVersion)
	u := func(v int) { b = binary.LittleEndian.AppendUint32(b, uint32(v)) }
	u(arch.Latent)
	u(len(arch.Hidden))
	for _, h := range arch.Hidden {
		u(h)
	}
	u(len(arch.Blocks))
	for _, s := range arch.Blocks {
		u(s)
	}
	u(len(z) / arch.Latent)
	for _, x := range z {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
	}
	for _, x := range params {
		b = binary.LittleEndian.AppendUint64(b, math.Float64bits(x))
	}
	return b
}

// UnmarshalGenerator rebuilds the network of a MarshalGenerator encoding.
func UnmarshalGenerator(b []byte) (*nn.Net, error) {
	if len(b) < len(artifactMagic)+1 || string(b[:len(artifactMagic)]) != artifactMagic {
		return nil, fmt.Errorf("%w: bad magic", ErrArtifact)
	}
	if b[len(artifactMagic)] != artifactVersion {
		return nil, fmt.Errorf("%w: version %d", ErrArtifact, b[len(artifactMagic)])
	}
	b = b[len(artifactMagic)+1:]
	var bad bool
	u := func() int {
		if len(b) < 4 {
			bad = true
			return 0
		}
		v := binary.LittleEndian.Uint32(b)
		b = b[4:]
		if v > 1<<24 {
			bad = true
		}
		return int(v)
	}
	var arch nn.Arch
	arch.Latent = u()
	for range min(u(), 64) {
		arch.Hidden = append(arch.Hidden, u())
	}
	for range min(u(), 1<<16) {
		arch.Blocks = append(arch.Blocks, u())
	}
	B := u()
	if bad || arch.Check() != nil || B < 1 {
		return nil, fmt.Errorf("%w: bad shape", ErrArtifact)
	}
	nz, np := B*arch.Latent, arch.NumParams()
	if len(b) != 8*(nz+np) {
		return nil, fmt.Errorf("%w: %d bytes of values, want %d", ErrArtifact, len(b), 8*(nz+np))
	}
	f := func(n int) []float64 {
		x := make([]float64, n)
		for i := range x {
			x[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
		}
		b = b[8*n:]
		return x
	}
	z := f(nz)
	params := f(np)
	net, err := nn.New(arch, z, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrArtifact, err)
	}
	copy(net.Params(), params)
	return net, nil
}
