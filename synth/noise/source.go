package noise

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	crand "crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"math/bits"
	"math/rand/v2"
)

// SecretSize is the size in bytes of a server secret made by [NewSecret].
const SecretSize = 32

// MinSecretSize is the shortest secret [Derive] accepts.
const MinSecretSize = 16

// bufSize is the number of keystream bytes produced per refill.
const bufSize = 4096

// deriveDomain separates dpsql's derivation from any other use of the secret.
const deriveDomain = "dpsql/noise/derive/v2"

// Source is a cryptographically secure random bit stream. It is either fresh
// (keyed from crypto/rand: the only kind that may carry privacy noise) or
// derived from a server secret and a user seed, so that a SEED reproduces
// post-processing on this server only.
//
// A Source is not safe for concurrent use.
type Source struct {
	stream cipher.Stream
	buf    []byte
	off    int

	// bitBuf holds nbits unused random bits for lazy Bernoulli trials.
	bitBuf uint64
	nbits  uint

	// dg caches the discrete Gaussian parameters for dgSigma.
	dg      *dgParams
	dgSigma float64
}

// NewSecret returns SecretSize fresh random bytes from crypto/rand, suitable
// as the server secret given to [Derive].
func NewSecret() []byte {
	secret := make([]byte, SecretSize)
	crand.Read(secret) // never returns an error since Go 1.24
	return secret
}

// NewSource returns a source keyed from crypto/rand.
func NewSource() *Source {
	var key [32]byte
	crand.Read(key[:])
	return newSource(key[:])
}

// Derive returns the source for (server secret, user seed, label parts).
// Without the secret the stream cannot be recomputed from the seed.
//
// The key of the stream is HMAC-SHA256(secret, domain ‖ seed ‖ k ‖ len(p₁) ‖
// p₁ ‖ … ‖ len(pₖ) ‖ pₖ), with seed, k and every length as 8-byte big-endian
// integers. Every part is framed by its length, so no two distinct
// (seed, parts) tuples share a key: ("s/decode") and ("s", "decode") differ.
// Derive panics if the secret is shorter than MinSecretSize bytes: a short
// secret would make seeded streams guessable.
//
// A derived stream repeats whenever its inputs repeat, so it is for
// reproducible post-processing only; privacy noise comes from [NewSource].
func Derive(secret []byte, seed int64, parts ...string) *Source {
	if len(secret) < MinSecretSize {
		panic("noise: secret shorter than MinSecretSize")
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write([]byte(deriveDomain))
	var n [8]byte
	put := func(v uint64) {
		binary.BigEndian.PutUint64(n[:], v)
		mac.Write(n[:])
	}
	put(uint64(seed))
	put(uint64(len(parts)))
	for _, p := range parts {
		put(uint64(len(p)))
		mac.Write([]byte(p))
	}
	return newSource(mac.Sum(nil))
}

// newSource returns the AES-256-CTR keystream under key with a zero IV; every
// key is used for one stream only.
func newSource(key []byte) *Source {
	block, err := aes.NewCipher(key)
	if err != nil {
		panic("noise: " + err.Error()) // unreachable: the key is 32 bytes
	}
	var iv [aes.BlockSize]byte
	s := &Source{
		stream: cipher.NewCTR(block, iv[:]),
		buf:    make([]byte, bufSize),
	}
	s.refill()
	return s
}

func (s *Source) refill() {
	clear(s.buf)
	s.stream.XORKeyStream(s.buf, s.buf)
	s.off = 0
}

// Read fills p with random bytes; it never fails.
func (s *Source) Read(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		if s.off == len(s.buf) {
			s.refill()
		}
		c := copy(p, s.buf[s.off:])
		s.off += c
		p = p[c:]
	}
	return n, nil
}

// Uint64 returns 64 random bits.
func (s *Source) Uint64() uint64 {
	if s.off > len(s.buf)-8 {
		s.refill()
	}
	v := binary.LittleEndian.Uint64(s.buf[s.off:])
	s.off += 8
	return v
}

// Rand returns a math/rand/v2 generator fed by s, for post-processing
// randomness only (e.g. rounding synthetic rows), never for released noise.
// The generator consumes s's stream.
func (s *Source) Rand() *rand.Rand { return rand.New(s) }

// bit returns one uniformly random bit.
func (s *Source) bit() uint64 {
	if s.nbits == 0 {
		s.bitBuf = s.Uint64()
		s.nbits = 64
	}
	b := s.bitBuf & 1
	s.bitBuf >>= 1
	s.nbits--
	return b
}

// uniform returns an integer uniformly distributed on [0, n); n must be
// positive. It is exact: Lemire's multiply-and-reject method.
func (s *Source) uniform(n uint64) uint64 {
	hi, lo := bits.Mul64(s.Uint64(), n)
	if lo < n {
		thresh := -n % n
		for lo < thresh {
			hi, lo = bits.Mul64(s.Uint64(), n)
		}
	}
	return hi
}
