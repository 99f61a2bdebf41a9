// Package seal protects the values dpsql stores in its bbolt file with a
// checksum, so that a damaged record is detected when it is read instead of
// being served.
//
// A sealed value is the payload followed by 4 bytes: the CRC-32C
// (Castagnoli, hardware accelerated) of the record's key and payload, big
// endian. Covering the key means that a value found under another key (a
// damaged key, a value moved by a damaged page) fails too. The catalog and
// budget packages seal every value they write and open every value they
// read; see their format versions for when this began.
package seal

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
)

// Size is the number of bytes Seal appends to a payload.
const Size = 4

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func sum(key, payload []byte) uint32 {
	return crc32.Update(crc32.Update(0, castagnoli, key), castagnoli, payload)
}

// Seal returns a new slice holding payload followed by the checksum of key
// and payload.
func Seal(key, payload []byte) []byte {
	return Append(make([]byte, 0, len(payload)+Size), key, payload)
}

// InPlace seals payload under key by appending the checksum to it: no copy
// when payload has the room, so the caller gives payload up.
func InPlace(key, payload []byte) []byte {
	return binary.BigEndian.AppendUint32(payload, sum(key, payload))
}

// Append appends payload, sealed under key, to dst and returns the extended
// slice (payload may not overlap dst's spare capacity).
func Append(dst, key, payload []byte) []byte {
	dst = append(dst, payload...)
	return binary.BigEndian.AppendUint32(dst, sum(key, payload))
}

// Open returns the payload of the sealed value stored under key (a
// subslice of sealed) and whether its checksum matches. A nil sealed value
// (a missing key) opens to nil and true.
func Open(key, sealed []byte) ([]byte, bool) {
	if sealed == nil {
		return nil, true
	}
	n := len(sealed) - Size
	if n < 0 {
		return nil, false
	}
	payload := sealed[:n:n]
	return payload, binary.BigEndian.Uint32(sealed[n:]) == sum(key, payload)
}

// ErrChecksum is wrapped by every *Error.
var ErrChecksum = errors.New("checksum mismatch")

// Hint tells an operator what to do about a damaged data file.
const Hint = "stop the server, run `dpsql check --data-dir DIR` to list the damage, and restore the data file from a backup made by `dpsql backup`"

// Error reports a stored record whose checksum does not match: the data
// file is damaged. It matches ErrChecksum and Kind with errors.Is.
type Error struct {
	What string // the record, e.g. "ledger entry 3 of table 12"
	Kind error  // the reporting package's corruption sentinel, or nil
}

func (e *Error) Error() string {
	return e.What + " is corrupt (checksum mismatch): the data file is damaged; " + Hint
}

// Unwrap returns ErrChecksum and Kind.
func (e *Error) Unwrap() []error {
	if e.Kind == nil {
		return []error{ErrChecksum}
	}
	return []error{ErrChecksum, e.Kind}
}
