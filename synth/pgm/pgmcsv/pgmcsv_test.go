package pgmcsv

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRead(t *testing.T) {
	sizes := map[string]int{"a": 3, "b": 2}
	tests := []struct {
		name    string
		csv     string
		sizes   map[string]int
		want    [][]uint16 // per column; nil when an error is expected
		wantErr bool
	}{
		{name: "ok", csv: "a,b\n0,1\n2,0\n1,1\n", sizes: sizes, want: [][]uint16{{0, 2, 1}, {1, 0, 1}}},
		{name: "header order wins", csv: "b,a\n1,2\n", sizes: sizes, want: [][]uint16{{1}, {2}}},
		{name: "rows past append's growth", csv: "a,b\n" + strings.Repeat("2,1\n", 5) + "0,0\n", sizes: sizes,
			want: [][]uint16{{2, 2, 2, 2, 2, 0}, {1, 1, 1, 1, 1, 0}}},
		{name: "no rows", csv: "a,b\n", sizes: sizes, want: [][]uint16{{}, {}}},
		{name: "empty", csv: "", sizes: sizes, wantErr: true},
		{name: "code too large", csv: "a,b\n3,0\n", sizes: sizes, wantErr: true},
		{name: "negative", csv: "a,b\n-1,0\n", sizes: sizes, wantErr: true},
		{name: "not a number", csv: "a,b\nx,0\n", sizes: sizes, wantErr: true},
		{name: "short row", csv: "a,b\n1\n", sizes: sizes, wantErr: true},
		{name: "unknown attribute", csv: "a,c\n0,0\n", sizes: sizes, wantErr: true},
		{name: "domain has extra", csv: "a\n0\n", sizes: sizes, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ds, err := Read(strings.NewReader(tt.csv), tt.sizes)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("Read succeeded, want error")
				}
				return
			}
			if err != nil {
				t.Fatalf("Read: %v", err)
			}
			header := strings.Split(strings.SplitN(tt.csv, "\n", 2)[0], ",")
			for i, name := range header {
				if got := ds.Domain().Name(i); got != name {
					t.Errorf("attribute %d = %q, want %q", i, got, name)
				}
				if got := ds.Domain().Size(i); got != tt.sizes[name] {
					t.Errorf("size of %q = %d, want %d", name, got, tt.sizes[name])
				}
				col := ds.Column(i)
				if len(col) != len(tt.want[i]) {
					t.Fatalf("column %d has %d rows, want %d", i, len(col), len(tt.want[i]))
				}
				if cap(col) != len(col) {
					t.Errorf("column %d holds %d rows in a capacity of %d: the loaded data keeps spare memory", i, len(col), cap(col))
				}
				for r := range col {
					if col[r] != tt.want[i][r] {
						t.Errorf("column %d row %d = %d, want %d", i, r, col[r], tt.want[i][r])
					}
				}
			}
			if ds.Rows() != len(tt.want[0]) {
				t.Errorf("Rows = %d, want %d", ds.Rows(), len(tt.want[0]))
			}
		})
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	csvPath := filepath.Join(dir, "d.csv")
	domPath := filepath.Join(dir, "d.json")
	if err := os.WriteFile(csvPath, []byte("x,y\n1,0\n0,4\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(domPath, []byte(`{"y": 5, "x": 2}`), 0o600); err != nil {
		t.Fatal(err)
	}
	ds, err := Load(csvPath, domPath)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if ds.Rows() != 2 || ds.Domain().Name(0) != "x" || ds.Domain().Size(1) != 5 || ds.Column(1)[1] != 4 {
		t.Errorf("Load returned rows=%d names=%q,%q", ds.Rows(), ds.Domain().Name(0), ds.Domain().Name(1))
	}
	if _, err := Load(csvPath, filepath.Join(dir, "missing.json")); err == nil {
		t.Error("Load with a missing domain file succeeded")
	}
	if err := os.WriteFile(domPath, []byte(`{"x": 2,`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(csvPath, domPath); err == nil {
		t.Error("Load with malformed JSON succeeded")
	}
}

// TestLoadAdult loads the shared adult data set when it is present.
func TestLoadAdult(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "..", "shared", "data")
	csvPath, domPath := filepath.Join(dir, "adult.csv"), filepath.Join(dir, "adult-domain.json")
	if _, err := os.Stat(csvPath); err != nil {
		t.Skipf("shared data not available: %v", err)
	}
	ds, err := Load(csvPath, domPath)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	// 48 842 rows and 14 attributes, as stated in shared/reference/targets.md.
	if ds.Rows() != 48842 || ds.Domain().Len() != 14 {
		t.Errorf("adult: %d rows, %d attributes; want 48842, 14", ds.Rows(), ds.Domain().Len())
	}
}
