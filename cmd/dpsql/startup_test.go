package main

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
)

// TestStartupSkipsRegexEngine guards third_party/go-icu-regex (the replace
// in go.mod): upstream compiles its WebAssembly ICU module in a package
// initialiser, 21 MB and a quarter of a second in every dpsql process. The
// test binary links the same packages as dpsql; its init trace must show
// the package allocating next to nothing.
func TestStartupSkipsRegexEngine(t *testing.T) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %v\n%s", cmd, err, out)
	}
	m := regexp.MustCompile(`init github\.com/dolthub/go-icu-regex @[^,]*, [^,]*, (\d+) bytes`).FindSubmatch(out)
	if m == nil {
		t.Fatalf("no init trace of go-icu-regex in:\n%s", out)
	}
	if n, _ := strconv.Atoi(string(m[1])); n > 1<<20 {
		t.Errorf("go-icu-regex allocates %d bytes at start-up; its ICU module should be compiled on first use (third_party/go-icu-regex)", n)
	}
}
