// Command hhgen writes a generated household/person data set (package
// hhgen) as two CSV files, or prints the dpsql DDL of its tables:
//
//	go run ./internal/hhgen/cmd -households 20000 -seed 1 -out /tmp/hh   # /tmp/hh/households.csv, persons.csv
//	go run ./internal/hhgen/cmd -ddl census                               # CREATE TABLE census.households, census.persons
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/dpsql/dpsql/internal/hhgen"
)

func main() {
	n := flag.Int("households", 20000, "number of households")
	seed := flag.Uint64("seed", 1, "generator seed")
	maxSize := flag.Int("max-size", 0, "largest household generated (0: 10)")
	out := flag.String("out", "", "directory to write households.csv and persons.csv into")
	ddl := flag.String("ddl", "", "print the dpsql DDL of the tables in this database and exit")
	flag.Parse()
	if err := run(*n, *seed, *maxSize, *out, *ddl); err != nil {
		fmt.Fprintln(os.Stderr, "hhgen:", err)
		os.Exit(1)
	}
}

func run(n int, seed uint64, maxSize int, out, ddl string) error {
	if ddl != "" {
		for _, s := range hhgen.DDL(ddl+".households", ddl+".persons") {
			fmt.Println(s + ";")
		}
		return nil
	}
	if out == "" {
		return fmt.Errorf("nothing to do: give -out DIR or -ddl DB")
	}
	d, err := hhgen.Generate(hhgen.Config{Households: n, Seed: seed, MaxSize: maxSize})
	if err != nil {
		return err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	for name, write := range map[string]func(f *os.File) error{
		"households.csv": func(f *os.File) error { return d.WriteHouseholdsCSV(f) },
		"persons.csv":    func(f *os.File) error { return d.WritePersonsCSV(f) },
	} {
		f, err := os.Create(filepath.Join(out, name))
		if err != nil {
			return err
		}
		if err := write(f); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	fmt.Fprintf(os.Stderr, "hhgen: %d households, %d persons in %s\n", len(d.H), d.NumPersons(), out)
	return nil
}
