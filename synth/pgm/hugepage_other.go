//go:build !linux

package pgm

// hugePages is a no-op where transparent huge pages are not asked for
// (see hugepage_linux.go).
func hugePages([]float64) {}
