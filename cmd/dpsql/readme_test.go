package main

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeRunsVerbatim extracts every ```sql block of README.md and runs
// them, in order, through the mariadb CLI against one fresh `serve --demo`:
// each example must run as written. A line "-- as NAME" switches the user
// for the rest of its block (root by default); passwords come from the
// README's own CREATE USER … IDENTIFIED BY '…' statements.
func TestReadmeRunsVerbatim(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every README example, syntheses included")
	}
	mariadbCLI(t)
	text, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := sqlBlocks(string(text))
	if len(blocks) < 5 {
		t.Fatalf("README has %d sql blocks; the walkthrough is missing", len(blocks))
	}
	passwords := map[string]string{"root": rootPassword}
	createUser := regexp.MustCompile(`(?i)CREATE USER\s+'?(\w+)'?(?:@'?[^'\s]+'?)?\s+IDENTIFIED BY\s+'([^']*)'`)
	for _, m := range createUser.FindAllStringSubmatch(strings.Join(flatten(blocks), "\n"), -1) {
		passwords[m[1]] = m[2]
	}
	s := startServer(t, t.TempDir(), "--demo")
	for i, b := range blocks {
		for _, part := range b {
			pw, ok := passwords[part.user]
			if !ok {
				t.Fatalf("block %d runs as %s, whom no README block creates", i+1, part.user)
			}
			out, err := s.cli(t, part.user, pw, part.sql)
			if err != nil {
				t.Fatalf("README sql block %d, as %s, fails: %v\n--- script\n%s\n--- output\n%s", i+1, part.user, err, part.sql, out)
			}
		}
	}
}

// blockPart is the part of a README block run as one user.
type blockPart struct {
	user string
	sql  string
}

var asUser = regexp.MustCompile(`^--\s*as\s+(\w+)`)

// sqlBlocks returns README's ```sql blocks, each split by its "-- as NAME"
// lines.
func sqlBlocks(text string) [][]blockPart {
	var (
		out  [][]blockPart
		cur  []blockPart
		in   bool
		user string
		buf  strings.Builder
	)
	flush := func() {
		if strings.TrimSpace(buf.String()) != "" {
			cur = append(cur, blockPart{user: user, sql: buf.String()})
		}
		buf.Reset()
	}
	for _, line := range strings.Split(text, "\n") {
		switch {
		case !in && strings.TrimSpace(line) == "```sql":
			in, user, cur = true, "root", nil
		case in && strings.TrimSpace(line) == "```":
			flush()
			out = append(out, cur)
			in = false
		case in:
			if m := asUser.FindStringSubmatch(strings.TrimSpace(line)); m != nil {
				flush()
				user = m[1]
				continue
			}
			buf.WriteString(line)
			buf.WriteByte('\n')
		}
	}
	return out
}

func flatten(blocks [][]blockPart) []string {
	var out []string
	for _, b := range blocks {
		for _, p := range b {
			out = append(out, p.sql)
		}
	}
	return out
}
