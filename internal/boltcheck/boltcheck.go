// Package boltcheck validates the on-disk structure of a bbolt file without
// going through bbolt.
//
// bbolt trusts its file: it maps it into memory and follows page numbers,
// element offsets and lengths with unchecked pointer arithmetic, so a
// truncated or damaged file can crash the process (a segmentation fault in
// the freelist, an out-of-range slice in a cursor) instead of returning an
// error. Check reads the file with ReadAt and bounds-checks everything bbolt
// would dereference, so a damaged file yields a list of problems, never a
// crash. A file that passes Check can be opened and read by bbolt without
// touching memory outside the file.
//
// What is checked (bbolt v1.4 layout, native byte order):
//
//   - both meta pages: page header (id, meta flag), magic 0xED0CDAED,
//     version 2, a plausible page size, and the FNV-64a checksum of the meta
//     fields; a damaged meta page is a problem even if the other is valid,
//     because bbolt would silently fall back to the previous transaction;
//   - the file covers the high-water mark of both metas (pgid × pageSize):
//     a shorter file was truncated; and it is a whole number of pages, the
//     only sizes bbolt gives its files (a truncation that keeps whole pages
//     beyond the high-water mark cuts only unused space and is harmless);
//   - the freelist page: type, count, every id in [2, hwm), no duplicates;
//   - the B+tree of every bucket, from the active meta's root: every page
//     id in range with its overflow, each page referenced once and not
//     freed, header id and type, element arrays, keys and values inside
//     their page, keys ordered within pages and between a branch and its
//     children as bbolt's own Tx.Check requires, bucket values (including
//     inline buckets, which Tx.Check skips) well formed;
//   - every page below the high-water mark is reachable or free.
package boltcheck

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io"
	"math/bits"
	"strconv"
	"strings"
)

// Layout constants of bbolt v1.4 (go.etcd.io/bbolt/internal/common).
const (
	magic   = 0xED0CDAED
	version = 2

	pageHeaderSize   = 16 // id u64, flags u16, count u16, overflow u32
	metaSize         = 64 // magic, version, pageSize, flags u32; root, seq, freelist, pgid, txid, checksum u64
	metaSumSize      = 56 // the checksum covers the fields before it
	elemSize         = 16 // branch: pos u32, ksize u32, pgid u64; leaf: flags, pos, ksize, vsize u32
	bucketHeaderSize = 16 // root u64, sequence u64

	branchFlag   = 0x01
	leafFlag     = 0x02
	metaFlag     = 0x04
	freelistFlag = 0x10

	bucketLeafFlag = 0x01

	noFreelist = ^uint64(0) // pgidNoFreelist: the freelist is not persisted

	minPageSize = 512
	maxPageSize = 1 << 20

	maxTreeDepth   = 64 // far above what a 2^63-page B+tree needs
	maxBucketDepth = 64
)

var order = binary.NativeEndian

// Meta is a decoded meta page.
type Meta struct {
	PageSize  int
	Root      uint64 // page of the root bucket
	Freelist  uint64 // page of the freelist (noFreelist if not persisted)
	HighWater uint64 // pgid: number of pages in use
	TxID      uint64
}

// Result is the outcome of Check.
type Result struct {
	// Active is the meta page bbolt would use (the valid one with the
	// highest transaction ID); zero if neither is valid.
	Active Meta
	// Problems describes what is wrong, at most the limit given to Check;
	// More counts the problems left out.
	Problems []string
	More     int
	// Pages is the number of pages below the high-water mark.
	Pages uint64
}

// OK reports whether no problem was found.
func (r *Result) OK() bool { return len(r.Problems) == 0 && r.More == 0 }

// Summary is the first problem, followed by how many more there are.
func (r *Result) Summary() string {
	if r.OK() {
		return "no problem found"
	}
	s := r.Problems[0]
	if n := len(r.Problems) - 1 + r.More; n > 0 {
		s += fmt.Sprintf(" (and %d more problem%s)", n, plural(n))
	}
	return s
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// Check validates the bbolt file f of size bytes, reporting at most
// maxProblems problems (at least 1).
func Check(f io.ReaderAt, size int64, maxProblems int) *Result {
	c := &checker{f: f, size: size, max: max(maxProblems, 1), res: &Result{}}
	c.run()
	return c.res
}

type checker struct {
	f    io.ReaderAt
	size int64
	max  int
	res  *Result

	pageSize int
	hwm      uint64
	seen     bitmap // pages reached from the root or the freelist
	free     bitmap // pages listed in the freelist
}

func (c *checker) problem(format string, args ...any) {
	if len(c.res.Problems) < c.max {
		c.res.Problems = append(c.res.Problems, fmt.Sprintf(format, args...))
	} else {
		c.res.More++
	}
}

// readPage reads n bytes of page id, reporting a problem (and returning
// nil) if the file is too short.
func (c *checker) readPage(id uint64, n int) []byte {
	off := int64(id) * int64(c.pageSize)
	if off > c.size || int64(n) > c.size-off {
		c.problem("page %d at byte %d lies beyond the end of the file (%d bytes): the file was truncated", id, off, c.size)
		return nil
	}
	buf := make([]byte, n)
	if _, err := c.f.ReadAt(buf, off); err != nil {
		c.problem("reading page %d at byte %d: %v", id, off, err)
		return nil
	}
	return buf
}

// readMeta decodes the meta page at byte off, returning a description of
// what is wrong with it, if anything.
func (c *checker) readMeta(n int, off int64) (Meta, string) {
	if off+pageHeaderSize+metaSize > c.size {
		return Meta{}, fmt.Sprintf("meta page %d lies beyond the end of the file (%d bytes)", n, c.size)
	}
	buf := make([]byte, pageHeaderSize+metaSize)
	if _, err := c.f.ReadAt(buf, off); err != nil {
		return Meta{}, fmt.Sprintf("reading meta page %d: %v", n, err)
	}
	m := buf[pageHeaderSize:]
	switch {
	case order.Uint32(m[0:]) != magic:
		return Meta{}, fmt.Sprintf("meta page %d has no bbolt magic number (not a bbolt file, or its first pages were overwritten)", n)
	case order.Uint32(m[4:]) != version:
		return Meta{}, fmt.Sprintf("meta page %d has bbolt format version %d, want %d", n, order.Uint32(m[4:]), version)
	}
	h := fnv.New64a()
	h.Write(m[:metaSumSize])
	if h.Sum64() != order.Uint64(m[metaSumSize:]) {
		return Meta{}, fmt.Sprintf("meta page %d fails its checksum", n)
	}
	if id := order.Uint64(buf[0:]); id != uint64(n) {
		return Meta{}, fmt.Sprintf("meta page %d calls itself page %d", n, id)
	}
	if fl := order.Uint16(buf[8:]); fl != metaFlag {
		return Meta{}, fmt.Sprintf("meta page %d has page type %#x", n, fl)
	}
	meta := Meta{
		PageSize:  int(order.Uint32(m[8:])),
		Root:      order.Uint64(m[16:]),
		Freelist:  order.Uint64(m[32:]),
		HighWater: order.Uint64(m[40:]),
		TxID:      order.Uint64(m[48:]),
	}
	if meta.PageSize < minPageSize || meta.PageSize > maxPageSize || bits.OnesCount(uint(meta.PageSize)) != 1 {
		return Meta{}, fmt.Sprintf("meta page %d has an invalid page size %d", n, meta.PageSize)
	}
	return meta, ""
}

// checkMetaBounds reports a meta whose pages do not fit in the file.
func (c *checker) checkMetaBounds(n int, m Meta) bool {
	ok := true
	if m.HighWater < 4 || m.HighWater > uint64(c.size)/uint64(m.PageSize) {
		need := "an impossible size"
		if m.HighWater <= uint64(1<<63-1)/uint64(m.PageSize) {
			need = strconv.FormatUint(m.HighWater*uint64(m.PageSize), 10) + " bytes"
		}
		c.problem("the file is %d bytes but meta page %d (transaction %d) uses %d pages of %d bytes (%s): the file was truncated or the meta page is wrong",
			c.size, n, m.TxID, m.HighWater, m.PageSize, need)
		ok = false
	}
	if m.Root < 2 || m.Root >= m.HighWater {
		c.problem("meta page %d: root page %d outside [2, %d)", n, m.Root, m.HighWater)
		ok = false
	}
	if m.Freelist != noFreelist && (m.Freelist < 2 || m.Freelist >= m.HighWater) {
		c.problem("meta page %d: freelist page %d outside [2, %d)", n, m.Freelist, m.HighWater)
		ok = false
	}
	return ok
}

func (c *checker) run() {
	if c.size == 0 {
		c.problem("the file is empty (0 bytes)")
		return
	}
	m0, bad0 := c.readMeta(0, 0)
	// Meta page 1 starts one page in; without a valid meta page 0, try the
	// usual page sizes.
	var m1 Meta
	bad1 := "meta page 1 not found"
	if bad0 == "" {
		m1, bad1 = c.readMeta(1, int64(m0.PageSize))
	} else {
		for _, ps := range []int{4096, 16384, 65536, 8192, 1024, 2048, 32768} {
			if m, bad := c.readMeta(1, int64(ps)); bad == "" && m.PageSize == ps {
				m1, bad1 = m, ""
				break
			}
		}
	}
	if bad0 != "" {
		c.problem("%s", bad0)
	}
	if bad1 != "" {
		c.problem("%s", bad1)
	}
	if bad0 != "" && bad1 != "" {
		return
	}
	if bad0 == "" && bad1 == "" && m0.PageSize != m1.PageSize {
		c.problem("the meta pages disagree on the page size (%d and %d)", m0.PageSize, m1.PageSize)
		return
	}
	ok := true
	if bad0 == "" {
		ok = c.checkMetaBounds(0, m0) && ok
	}
	if bad1 == "" {
		ok = c.checkMetaBounds(1, m1) && ok
	}
	active := m0
	if bad0 != "" || (bad1 == "" && m1.TxID > m0.TxID) {
		active = m1
	}
	c.res.Active = active
	// bbolt only ever sizes its file in whole pages (it writes pages, and
	// grows the file to its map size or by its allocation step), so any
	// other size means the file was cut short or had bytes appended.
	if c.size%int64(active.PageSize) != 0 {
		c.problem("the file is %d bytes, not a whole number of %d-byte pages: it was truncated (or extended)", c.size, active.PageSize)
		ok = false
	}
	if !ok {
		return
	}
	c.pageSize = active.PageSize
	c.hwm = active.HighWater
	c.res.Pages = c.hwm
	c.seen = newBitmap(c.hwm)
	c.free = newBitmap(c.hwm)
	c.seen.set(0)
	c.seen.set(1)

	freelistOK := active.Freelist != noFreelist && c.checkFreelist(active.Freelist)
	c.walkTree(active.Root, nil, nil, path{}, 0)
	if freelistOK {
		for id := uint64(2); id < c.hwm; id++ {
			if !c.seen.has(id) && !c.free.has(id) {
				c.problem("page %d is neither reachable nor free", id)
			}
		}
	}
}

// page reads page id and its overflow pages, marking them reached. It
// returns nil (after reporting why) if the page cannot be used.
func (c *checker) page(id uint64, what string, p path) []byte {
	if id < 2 || id >= c.hwm {
		c.problem("%s: page %d outside [2, %d)%s", what, id, c.hwm, p.in())
		return nil
	}
	hdr := c.readPage(id, c.pageSize) // most pages have no overflow
	if hdr == nil {
		return nil
	}
	if got := order.Uint64(hdr[0:]); got != id {
		c.problem("page %d calls itself page %d%s", id, got, p.in())
		return nil
	}
	overflow := uint64(order.Uint32(hdr[12:]))
	if overflow >= c.hwm-id {
		c.problem("page %d: %d overflow pages run past the high-water mark %d%s", id, overflow, c.hwm, p.in())
		return nil
	}
	for i := id; i <= id+overflow; i++ {
		if c.seen.has(i) {
			c.problem("page %d is referenced more than once%s", i, p.in())
			return nil
		}
	}
	for i := id; i <= id+overflow; i++ {
		c.seen.set(i)
		if c.free.has(i) {
			c.problem("page %d is in use%s but listed as free", i, p.in())
		}
	}
	if overflow == 0 {
		return hdr
	}
	return c.readPage(id, int(overflow+1)*c.pageSize)
}

func (c *checker) checkFreelist(id uint64) bool {
	buf := c.page(id, "freelist", path{})
	if buf == nil {
		return false
	}
	if fl := order.Uint16(buf[8:]); fl != freelistFlag {
		c.problem("freelist page %d has page type %#x", id, fl)
		return false
	}
	count, idx := uint64(order.Uint16(buf[10:])), uint64(0)
	if count == 0xFFFF {
		if len(buf) < pageHeaderSize+8 {
			c.problem("freelist page %d is too short", id)
			return false
		}
		count, idx = order.Uint64(buf[pageHeaderSize:]), 1
	}
	if count > uint64(len(buf)-pageHeaderSize)/8-idx {
		c.problem("freelist page %d lists %d pages, more than it can hold", id, count)
		return false
	}
	ok := true
	for i := range count {
		fid := order.Uint64(buf[pageHeaderSize+8*(idx+i):])
		switch {
		case fid < 2 || fid >= c.hwm:
			c.problem("freelist page %d lists page %d outside [2, %d)", id, fid, c.hwm)
			ok = false
		case c.free.has(fid):
			c.problem("page %d is listed as free twice", fid)
			ok = false
		default:
			c.free.set(fid)
			if c.seen.has(fid) {
				c.problem("page %d is in use but listed as free", fid)
				ok = false
			}
		}
	}
	return ok
}

// walkTree checks the subtree at page id, whose keys must lie in
// [minClosed, maxOpen) (nil: unbounded), and returns its largest key.
func (c *checker) walkTree(id uint64, minClosed, maxOpen []byte, p path, depth int) []byte {
	if depth > maxTreeDepth {
		c.problem("page %d: tree deeper than %d levels%s", id, maxTreeDepth, p.in())
		return nil
	}
	buf := c.page(id, "tree", p)
	if buf == nil {
		return nil
	}
	flags := order.Uint16(buf[8:])
	count := int(order.Uint16(buf[10:]))
	if pageHeaderSize+count*elemSize > len(buf) {
		c.problem("page %d: %d elements do not fit in the page%s", id, count, p.in())
		return nil
	}
	switch flags {
	case branchFlag:
		if count == 0 {
			c.problem("branch page %d is empty%s", id, p.in())
			return nil
		}
		keys := make([][]byte, count)
		children := make([]uint64, count)
		for i := range count {
			e := pageHeaderSize + i*elemSize
			pos, ksize := int(order.Uint32(buf[e:])), int(order.Uint32(buf[e+4:]))
			k, okk := slice(buf, e, pos, ksize)
			if !okk {
				c.problem("branch page %d element %d: key outside the page%s", id, i, p.in())
				return nil
			}
			keys[i], children[i] = k, order.Uint64(buf[e+8:])
		}
		running := minClosed
		var maxKey []byte
		for i := range count {
			if !c.keyInOrder(id, "branch", i, keys[i], running, maxOpen, p) {
				return nil
			}
			next := maxOpen
			if i+1 < count {
				next = keys[i+1]
			}
			maxKey = c.walkTree(children[i], keys[i], next, p, depth+1)
			if maxKey == nil {
				// The child is unusable or empty; keep checking the
				// siblings from its lower bound.
				maxKey = keys[i]
			}
			running = maxKey
		}
		return maxKey
	case leafFlag:
		return c.leaf(id, buf, 0, count, minClosed, maxOpen, p, false)
	default:
		c.problem("page %d has page type %#x where a branch or leaf page belongs%s", id, flags, p.in())
		return nil
	}
}

// leaf checks the count elements of the leaf page in buf (whose header
// starts at base; inline buckets embed a page in a value) and the buckets
// they hold, and returns the largest key.
func (c *checker) leaf(id uint64, buf []byte, base, count int, minClosed, maxOpen []byte, p path, inline bool) []byte {
	where := fmt.Sprintf("leaf page %d", id)
	if inline {
		where = "inline bucket"
	}
	if base+pageHeaderSize+count*elemSize > len(buf) {
		c.problem("%s: %d elements do not fit%s", where, count, p.in())
		return nil
	}
	running := minClosed
	for i := range count {
		e := base + pageHeaderSize + i*elemSize
		flags := order.Uint32(buf[e:])
		pos, ksize, vsize := int(order.Uint32(buf[e+4:])), int(order.Uint32(buf[e+8:])), int(order.Uint32(buf[e+12:]))
		k, okk := slice(buf, e, pos, ksize)
		v, okv := slice(buf, e, pos+ksize, vsize)
		if !okk || !okv || pos+ksize < pos {
			c.problem("%s element %d: key or value outside the page%s", where, i, p.in())
			return nil
		}
		if !c.keyInOrder(id, where, i, k, running, maxOpen, p) {
			return nil
		}
		running = k
		switch flags {
		case 0:
		case bucketLeafFlag:
			if inline {
				c.problem("inline bucket holds a nested bucket %s%s (bbolt never writes that)", showKey(k), p.in())
				continue
			}
			c.bucket(k, v, p)
		default:
			c.problem("%s element %d has flags %#x%s", where, i, flags, p.in())
		}
	}
	return running
}

// bucket checks the bucket stored under key k with header value v.
func (c *checker) bucket(k, v []byte, parent path) {
	p := parent.child(k)
	if len(p) > maxBucketDepth {
		c.problem("buckets nested deeper than %d levels%s", maxBucketDepth, p.in())
		return
	}
	if len(v) < bucketHeaderSize {
		c.problem("bucket %s has a %d-byte header%s", showKey(k), len(v), parent.in())
		return
	}
	root := order.Uint64(v)
	if root != 0 {
		c.walkTree(root, nil, nil, p, 0)
		return
	}
	// Inline bucket: a leaf page follows the header inside the value.
	if len(v) < bucketHeaderSize+pageHeaderSize {
		c.problem("inline bucket %s is too short%s", showKey(k), parent.in())
		return
	}
	pg := v[bucketHeaderSize:]
	if fl := order.Uint16(pg[8:]); fl != leafFlag {
		c.problem("inline bucket %s has page type %#x%s", showKey(k), fl, parent.in())
		return
	}
	c.leaf(0, pg, 0, int(order.Uint16(pg[10:])), nil, nil, p, true)
}

// keyInOrder applies bbolt's Tx.Check key-order rules to the i-th key of a
// page: the first key is at least the ancestor's lower bound, every other
// key is greater than the previous one (or than the largest key of the
// previous child, on a branch page), and every key is below maxOpen.
func (c *checker) keyInOrder(id uint64, kind string, i int, k, prev, maxOpen []byte, p path) bool {
	if prev != nil {
		cmp := bytes.Compare(prev, k)
		if (i == 0 && cmp > 0) || (i > 0 && cmp >= 0) {
			c.problem("%s %d: key %s is out of order after %s%s", kind, id, showKey(k), showKey(prev), p.in())
			return false
		}
	}
	if maxOpen != nil && bytes.Compare(k, maxOpen) >= 0 {
		c.problem("%s %d: key %s is not below its parent's next key %s%s", kind, id, showKey(k), showKey(maxOpen), p.in())
		return false
	}
	return true
}

// slice returns buf[e+pos : e+pos+n] if it lies within buf.
func slice(buf []byte, e, pos, n int) ([]byte, bool) {
	start := e + pos
	if pos < 0 || n < 0 || start < e || start > len(buf) || n > len(buf)-start {
		return nil, false
	}
	return buf[start : start+n : start+n], true
}

// path is the chain of bucket names leading to a page, for messages.
type path [][]byte

func (p path) child(k []byte) path {
	out := make(path, len(p), len(p)+1)
	copy(out, p)
	return append(out, k)
}

func (p path) in() string {
	if len(p) == 0 {
		return ""
	}
	parts := make([]string, len(p))
	for i, k := range p {
		parts[i] = showKey(k)
	}
	return " (in bucket " + strings.Join(parts, "/") + ")"
}

// showKey renders a key for messages: as text if printable, else in hex.
func showKey(k []byte) string {
	const maxLen = 48
	printable := len(k) > 0
	for _, b := range k {
		if b < 0x20 || b > 0x7e {
			printable = false
			break
		}
	}
	if printable {
		if len(k) > maxLen {
			return strconv.Quote(string(k[:maxLen]) + "…")
		}
		return strconv.Quote(string(k))
	}
	if len(k) > maxLen {
		return fmt.Sprintf("0x%x…", k[:maxLen])
	}
	return fmt.Sprintf("0x%x", k)
}

type bitmap []uint64

func newBitmap(n uint64) bitmap { return make(bitmap, (n+63)/64) }

func (b bitmap) set(i uint64)      { b[i/64] |= 1 << (i % 64) }
func (b bitmap) has(i uint64) bool { return b[i/64]&(1<<(i%64)) != 0 }
