package main

import (
	"bytes"
	"context"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestReport writes the quality report of an AIM table as its owner and
// as an analyst, checks what each may see, and renders both pages in
// headless Chromium.
func TestReport(t *testing.T) {
	s := startServer(t, t.TempDir(), "--demo")
	root := s.root()
	mustExec(t, root,
		"SET PRIVACY BUDGET FOR demo.census WITH EPSILON = 10, DELTA = 0.000001",
		"ALTER TABLE demo.census SET DOMAIN capital_gain BETWEEN 0 AND 100000 BINS 10",
		"CREATE DATABASE lab",
		"CREATE SYNTHETIC TABLE lab.c FROM demo.census USING aim WITH EPSILON = 1, ROWS = 3000, "+fastAIM+
			" WORKLOAD (SELECT sex, income, COUNT(*) FROM demo.census GROUP BY sex, income, "+
			"SELECT race, region, COUNT(*) FROM demo.census GROUP BY race, region, "+
			"SELECT education, capital_gain, COUNT(*) FROM demo.census GROUP BY education, capital_gain)",
		"CREATE USER analyst IDENTIFIED BY 'apw'",
		"GRANT SELECT ON lab.* TO analyst",
	)
	dir := t.TempDir()
	owner := filepath.Join(dir, "owner.html")
	analyst := filepath.Join(dir, "analyst.html")
	if out, errOut, code := runDpsql(t, "report", "--addr", s.addr, "--user", "root", "--password", rootPassword, "--table", "lab.c", "--out", owner); code != 0 {
		t.Fatalf("owner report: %d\n%s%s", code, out, errOut)
	}
	if out, errOut, code := runDpsql(t, "report", "--addr", s.addr, "--user", "analyst", "--password", "apw", "--table", "lab.c", "--out", analyst); code != 0 {
		t.Fatalf("analyst report: %d\n%s%s", code, out, errOut)
	}
	ownerHTML, _ := os.ReadFile(owner)
	analystHTML, _ := os.ReadFile(analyst)
	for _, c := range []struct {
		name string
		html []byte
		want []string
		not  []string
	}{
		{"owner", ownerHTML,
			[]string{"Compared with the real table", "sex, income", "race, region", "education, capital_gain", "model within bound", "CREATE SYNTHETIC TABLE", "committed"},
			[]string{"released information only"}},
		{"analyst", analystHTML,
			[]string{"released information only", "synthetic vs model", "sex, income", "education, capital_gain"},
			[]string{"Compared with the real table", "model within bound"}},
	} {
		text := string(c.html)
		for _, w := range c.want {
			if !strings.Contains(text, w) {
				t.Errorf("%s report lacks %q", c.name, w)
			}
		}
		for _, w := range c.not {
			if strings.Contains(text, w) {
				t.Errorf("%s report has %q", c.name, w)
			}
		}
		// Self-contained: nothing is fetched.
		if m := regexp.MustCompile(`(?i)(src|href)\s*=|<script|@import|url\(`).FindString(text); m != "" {
			t.Errorf("%s report refers to something outside the page: %q", c.name, m)
		}
	}
	// The owner's errors are numbers, and in this small workload the
	// model's errors respect their bounds (each holds w.p. 0.95; the
	// workload is fitted almost exactly at ε = 1 on 30 000 rows).
	if n := strings.Count(string(ownerHTML), `class="no"`); n > 1 {
		t.Errorf("%d of 3 marginals outside their bound", n)
	}

	chromium := chromiumPath(t)
	if chromium == "" {
		return
	}
	for name, file := range map[string]string{"owner": owner, "analyst": analyst} {
		dom := renderDOM(t, chromium, file)
		// The rendered DOM has the plots as SVG elements, with their bars.
		if n := strings.Count(dom, "<rect"); n < 20 {
			t.Errorf("%s: rendered DOM has %d rects", name, n)
		}
		if !strings.Contains(dom, "<svg") || !strings.Contains(dom, "dpsql quality report: lab.c") {
			t.Errorf("%s: rendered DOM lacks the plots or the title", name)
		}
		// And the screenshot shows them: pixels of the model's and the
		// synthetic rows' colours, and (owner) of the real data's.
		shot := filepath.Join(dir, name+".png")
		if keep := os.Getenv("DPSQL_TEST_KEEP_REPORT"); keep != "" {
			shot = filepath.Join(keep, name+".png") // to look at
			b, _ := os.ReadFile(file)
			os.WriteFile(filepath.Join(keep, name+".html"), b, 0o644)
		}
		img := screenshot(t, chromium, file, shot)
		counts := colourCounts(img, map[string]color.RGBA{
			"model": {0x1f, 0x77, 0xb4, 0xff}, "synthetic": {0xff, 0x7f, 0x0e, 0xff}, "real": {0x3a, 0x3a, 0x3a, 0xff},
		})
		for _, series := range []string{"model", "synthetic"} {
			if counts[series] < 200 {
				t.Errorf("%s: screenshot has %d %s pixels", name, counts[series], series)
			}
		}
		if name == "owner" && counts["real"] < 200 {
			t.Errorf("owner: screenshot has %d real-data pixels", counts["real"])
		}
	}
}

// chromiumPath finds Debian's chromium; the test skips without it unless
// DPSQL_TEST_REQUIRE=1.
func chromiumPath(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("DPSQL_TEST_REQUIRE") == "1" {
		t.Fatal("chromium not installed (apt-get install chromium) and DPSQL_TEST_REQUIRE=1")
	}
	t.Log("chromium not installed: the report is not rendered")
	return ""
}

// chromiumArgs are the flags of a headless run as root in a container.
func chromiumArgs(t *testing.T, extra ...string) []string {
	return append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
		"--user-data-dir=" + t.TempDir(), "--hide-scrollbars"}, extra...)
}

func runChromium(t *testing.T, chromium string, args []string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, stderr.String())
	}
	return stdout.Bytes()
}

// renderDOM is the DOM of file after Chromium has loaded and laid it out.
func renderDOM(t *testing.T, chromium, file string) string {
	return string(runChromium(t, chromium, chromiumArgs(t, "--dump-dom", "file://"+file)))
}

// screenshot renders file to png and decodes it.
func screenshot(t *testing.T, chromium, file, out string) image.Image {
	t.Helper()
	runChromium(t, chromium, chromiumArgs(t, "--screenshot="+out, "--window-size=1200,4000", "file://"+file))
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	return img
}

// colourCounts counts the pixels of img close to each colour.
func colourCounts(img image.Image, colours map[string]color.RGBA) map[string]int {
	out := map[string]int{}
	b := img.Bounds()
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			for name, c := range colours {
				if near(r>>8, c.R) && near(g>>8, c.G) && near(bl>>8, c.B) {
					out[name]++
				}
			}
		}
	}
	return out
}

func near(a uint32, b uint8) bool { d := int(a) - int(b); return d > -6 && d < 6 }
