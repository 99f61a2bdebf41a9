package main

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// TestDocsStayInTheRepository: docs/ refers only to files of the
// repository, so that every link works in a plain clone.
func TestDocsStayInTheRepository(t *testing.T) {
	docs, err := filepath.Glob("../../docs/*.md")
	if err != nil || len(docs) == 0 {
		t.Fatalf("no docs found (%v)", err)
	}
	// A relative path that climbs out of docs/ and then out of the
	// repository (../../x), or names the workspace's shared/ folder.
	outside := regexp.MustCompile(`\.\./\.\./|\.\./shared\b|/work/`)
	link := regexp.MustCompile(`\]\(([^)#]+)[^)]*\)`)
	for _, path := range docs {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if m := outside.Find(b); m != nil {
			t.Errorf("%s points outside the repository: %q", path, m)
		}
		for _, m := range link.FindAllSubmatch(b, -1) {
			target := string(m[1])
			if regexp.MustCompile(`^[a-z]+://`).MatchString(target) {
				continue
			}
			if _, err := os.Stat(filepath.Join(filepath.Dir(path), target)); err != nil {
				t.Errorf("%s links to %s, which is not in the repository", path, target)
			}
		}
	}
}
