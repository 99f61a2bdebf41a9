package main

import (
	"regexp"
	"strings"
	"testing"
)

// auditLine is the line dpsql audit prints per mechanism: the fields the
// issue names, in its order, then the details.
var auditLine = regexp.MustCompile(`^mechanism=(\S+) epsilon=([0-9.e+-]+) delta=([0-9.e+-]+) runs=(\d+) ` +
	`statistic=(\S+) p=([0-9.]+) q=([0-9.]+) epsilon_hat=([0-9.]+|\+Inf) pass=(true|false)( \S+=\S+)*$`)

// TestAudit runs "dpsql audit --short --mechanism gaussian" and checks its
// output; TestAuditShort (synth/audit) covers every mechanism.
func TestAudit(t *testing.T) {
	stdout, stderr, code := runDpsql(t, "audit", "--short", "--mechanism", "gaussian")
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	if code != 0 || len(lines) != 1 {
		t.Fatalf("exit %d stdout %q stderr %q; want exit 0 and one line", code, stdout, stderr)
	}
	m := auditLine.FindStringSubmatch(lines[0])
	if m == nil {
		t.Fatalf("malformed line %q", lines[0])
	}
	if m[1] != "gaussian" || m[2] != "1" || m[3] != "1e-06" || m[4] != "500" || m[9] != "true" {
		t.Errorf("line %q: want gaussian at ε=1, δ=1e-06, 500 runs, passing", lines[0])
	}
	if !strings.HasPrefix(m[5], "llr") {
		t.Errorf("statistic %q: the answers-only gaussian has only the likelihood ratio", m[5])
	}

	stdout, stderr, code = runDpsql(t, "audit", "--mechanism", "nope")
	if code != 2 || stdout != "" || !strings.Contains(stderr, `unknown mechanism "nope"`) {
		t.Errorf("unknown mechanism: exit %d stdout %q stderr %q", code, stdout, stderr)
	}
}
