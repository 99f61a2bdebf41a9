package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestCommandLine(t *testing.T) {
	dir := t.TempDir()
	var rows [][]string
	for i := range 200 {
		rows = append(rows, []string{strconv.Itoa(i % 3), strconv.Itoa(i % 2), strconv.Itoa((i / 3) % 4)})
	}
	csvPath := writeCSV(t, []string{"a", "b", "c"}, rows)
	domain := filepath.Join(dir, "domain.json")
	os.WriteFile(domain, []byte(`{"a": 3, "b": 2, "c": 4}`), 0o600)

	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  string // substring of stdout
	}{
		{"version", []string{"version"}, 0, "dpsql "},
		{"--version", []string{"--version"}, 0, "dpsql "},
		{"help", []string{"help"}, 0, "Documentation: README.md"},
		{"--help", []string{"--help"}, 0, "commands:"},
		{"help of a command", []string{"help", "serve"}, 0, ""},
		{"bench --help", []string{"bench", "--help"}, 0, "dpsql bench MECHANISM"},
		{"no command", nil, 2, ""},
		{"unknown command", []string{"frobnicate"}, 2, ""},
		{"import without table", []string{"import", "--csv", csvPath}, 2, ""},
		{"import with a bad table name", []string{"import", "--table", "nodot", "--csv", csvPath}, 2, ""},
		{"bench without a target", []string{"bench"}, 2, ""},
		{"bench pgm without files", []string{"bench", "pgm"}, 2, ""},
		{"bench pgm on a missing file", []string{"bench", "pgm", "--csv", filepath.Join(dir, "none.csv"), "--domain", domain}, 1, ""},
		{"import to a closed port", []string{"import", "--addr", "127.0.0.1:1", "--table", "a.b", "--csv", csvPath}, 1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := runDpsql(t, tt.args...)
			if code != tt.wantCode || !strings.Contains(stdout, tt.wantOut) {
				t.Fatalf("exit %d stdout %q stderr %q; want exit %d and stdout containing %q", code, stdout, stderr, tt.wantCode, tt.wantOut)
			}
		})
	}
}

// TestBenchPGM runs the Private-PGM benchmark on adult.csv (its workload
// names adult's attributes).
func TestBenchPGM(t *testing.T) {
	csvPath, domain := sharedData(t, "adult.csv"), sharedData(t, "adult-domain.json")
	stdout, stderr, code := runDpsql(t, "bench", "pgm", "--csv", csvPath, "--domain", domain)
	if code != 0 || !strings.Contains(stdout, "marginals_3way_seconds=") || !strings.Contains(stdout, "rows=48842") {
		t.Fatalf("exit %d stdout %q stderr %q", code, stdout, stderr)
	}
}

// TestPasswordsOutOfTheProcessList: every password can come from a file or
// an environment variable instead of a flag that ps shows.
func TestPasswordsOutOfTheProcessList(t *testing.T) {
	dir := t.TempDir()
	rootFile := filepath.Join(dir, "root.pw")
	if err := os.WriteFile(rootFile, []byte("from-a-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := launchArgs(t, filepath.Join(dir, "data"), "--root-password-file", rootFile)
	if err != nil {
		t.Fatal(err)
	}
	if got := queryStrings(t, s.open("root", "from-a-file"), "SELECT 1"); got[0][0] != "1" {
		t.Fatalf("root with the password from the file: %v", got)
	}
	csvPath := writeCSV(t, []string{"a"}, [][]string{{"1"}, {"2"}})
	// By file.
	if _, stderr, code := runDpsql(t, "import", "--addr", s.addr, "--table", "d.byfile", "--csv", csvPath, "--password-file", rootFile); code != 0 {
		t.Fatalf("import --password-file: exit %d\n%s", code, stderr)
	}
	// By environment.
	t.Setenv("DPSQL_PASSWORD", "from-a-file")
	if _, stderr, code := runDpsql(t, "import", "--addr", s.addr, "--table", "d.byenv", "--csv", csvPath); code != 0 {
		t.Fatalf("import with $DPSQL_PASSWORD: exit %d\n%s", code, stderr)
	}
	if got := queryStrings(t, s.open("root", "from-a-file"), "SELECT (SELECT COUNT(*) FROM d.byfile) + (SELECT COUNT(*) FROM d.byenv)"); got[0][0] != "4" {
		t.Fatalf("imported rows: %v", got)
	}
}
