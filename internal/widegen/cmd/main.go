// Command widegen writes a generated wide table (package widegen) as an
// integer-coded CSV and its domain file, for `dpsql bench`:
//
//	go run ./internal/widegen/cmd -attrs 110 -rows 20000 -seed 2 -csv wide110.csv -domain wide110-domain.json
//
// It prints the numeric (binned) columns, comma-separated, on stdout.
package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/dpsql/dpsql/internal/widegen"
)

func main() {
	var cfg widegen.Config
	flag.IntVar(&cfg.Attrs, "attrs", 48, "number of attributes")
	flag.IntVar(&cfg.Rows, "rows", 20000, "number of rows")
	flag.IntVar(&cfg.Bins, "bins", 20, "bins of a numeric attribute")
	flag.IntVar(&cfg.MaxCat, "maxcat", 8, "largest categorical domain (sizes are uniform in 2..maxcat)")
	flag.Float64Var(&cfg.NumericFrac, "numeric", 0.3, "fraction of numeric attributes")
	flag.Uint64Var(&cfg.Seed, "seed", 1, "generator seed")
	csvPath := flag.String("csv", "", "CSV file to write")
	domPath := flag.String("domain", "", "domain JSON file to write")
	flag.Parse()
	if *csvPath == "" || *domPath == "" {
		fmt.Fprintln(os.Stderr, "widegen: need -csv and -domain")
		os.Exit(2)
	}
	t, err := widegen.Generate(cfg)
	if err == nil {
		err = t.WriteFiles(*csvPath, *domPath)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "widegen:", err)
		os.Exit(1)
	}
	var num []string
	for a, n := range t.Numeric {
		if n {
			num = append(num, t.Data.Domain().Name(a))
		}
	}
	fmt.Println(strings.Join(num, ","))
}
