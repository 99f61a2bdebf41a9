package marginal

import (
	"errors"
	"slices"
	"unsafe"
)

// A Compact's encoding is its arrays as they lie in memory, behind a
// header of eight words: the cell count, a word of flags (which arrays are
// present, nil or not: the representation is told by which are), and each
// array's length. The 8-byte arrays come first, then the 4-byte, then the
// 2-byte ones, so that a view over an 8-byte-aligned buffer is aligned
// throughout. It is for the process that wrote it (native byte order):
// AIM keeps its candidates' true answers in a temporary file this way
// (View reads them back without a copy).
const headerWords = 8

// The arrays of a Compact, in encoding order.
const (
	fDense = iota
	fBits
	fVal
	fIdx
	fBig
	fCnt
	nFields
)

// EncodedLen is the length of c's encoding.
func (c *Compact) EncodedLen() int {
	n := 8*headerWords + 8*(len(c.dense)+len(c.bits)+len(c.val)) + 4*(len(c.idx)+len(c.big)) + 2*len(c.cnt)
	return (n + 7) &^ 7 // the next encoding stays aligned
}

// AppendBinary appends c's encoding to b.
func (c *Compact) AppendBinary(b []byte) []byte {
	var h [headerWords]uint64
	h[0] = uint64(c.n)
	present := [nFields]bool{c.dense != nil, c.bits != nil, c.val != nil, c.idx != nil, c.big != nil, c.cnt != nil}
	lens := [nFields]int{len(c.dense), len(c.bits), len(c.val), len(c.idx), len(c.big), len(c.cnt)}
	for f := range nFields {
		if present[f] {
			h[1] |= 1 << f
		}
		h[2+f] = uint64(lens[f])
	}
	start := len(b)
	b = slices.Grow(b, c.EncodedLen())
	b = append(b, asBytes(h[:])...)
	b = append(b, asBytes(c.dense)...)
	b = append(b, asBytes(c.bits)...)
	b = append(b, asBytes(c.val)...)
	b = append(b, asBytes(c.idx)...)
	b = append(b, asBytes(c.big)...)
	b = append(b, asBytes(c.cnt)...)
	for (len(b)-start)%8 != 0 {
		b = append(b, 0)
	}
	return b
}

// errEncoding reports an encoding that does not describe a Compact.
var errEncoding = errors.New("marginal: malformed compact encoding")

// View sets c to the Compact encoded at the start of b, whose arrays it
// shares with b (no copy: c is valid while b is unchanged), and returns the
// length of the encoding. b must be 8-byte aligned (a []uint64's bytes).
func (c *Compact) View(b []byte) (int, error) {
	if len(b) < 8*headerWords || uintptr(unsafe.Pointer(unsafe.SliceData(b)))%8 != 0 {
		return 0, errEncoding
	}
	h := unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(b))), headerWords)
	flags := h[1]
	if flags>>nFields != 0 || h[0] > 1<<40 {
		return 0, errEncoding
	}
	// The arrays' offsets, checked against b before any is viewed.
	var at, n [nFields]int
	off := 8 * headerWords
	sizes := [nFields]int{8, 8, 8, 4, 4, 2}
	for f := range nFields {
		k := h[2+f]
		if flags&(1<<f) == 0 {
			if k != 0 {
				return 0, errEncoding
			}
			continue
		}
		if k > uint64(len(b)-off)/uint64(sizes[f]) {
			return 0, errEncoding
		}
		at[f], n[f] = off, int(k)
		off += int(k) * sizes[f]
	}
	*c = Compact{
		n:     int(h[0]),
		dense: view[float64](b, flags, fDense, at[fDense], n[fDense]),
		bits:  view[uint64](b, flags, fBits, at[fBits], n[fBits]),
		val:   view[float64](b, flags, fVal, at[fVal], n[fVal]),
		idx:   view[uint32](b, flags, fIdx, at[fIdx], n[fIdx]),
		big:   view[uint32](b, flags, fBig, at[fBig], n[fBig]),
		cnt:   view[uint16](b, flags, fCnt, at[fCnt], n[fCnt]),
	}
	return (off + 7) &^ 7, nil
}

// view is the n elements of T at byte offset at of b: nil if field f is
// absent, an empty slice (not a pointer past b's end) if n is 0.
func view[T uint64 | float64 | uint32 | uint16](b []byte, flags uint64, f, at, n int) []T {
	switch {
	case flags&(1<<f) == 0:
		return nil
	case n == 0:
		return []T{}
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&b[at])), n)
}

// asBytes is the memory of x.
func asBytes[T uint64 | float64 | uint32 | uint16](x []T) []byte {
	if len(x) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(x))), len(x)*int(unsafe.Sizeof(x[0])))
}
