package main

import (
	"flag"
	"fmt"
	"os"
	"strings"
)

// A password on the command line is visible to every user of the machine
// (ps, /proc). Every command that takes one therefore also reads it from a
// file or from an environment variable; the flag wins, then the file, then
// the variable.

// passwordSource is a password given by flag, file or environment.
type passwordSource struct {
	flagName, env string
	value, file   *string
}

// passwordFlags declares --NAME and --NAME-file on fs, with env as the
// fallback variable.
func passwordFlags(fs *flag.FlagSet, name, env, usage string) *passwordSource {
	return &passwordSource{
		flagName: name,
		env:      env,
		value:    fs.String(name, "", usage+" (visible to other users in ps: prefer --"+name+"-file or $"+env+")"),
		file:     fs.String(name+"-file", "", "file holding the "+strings.ToLower(usage)+" on its first line"),
	}
}

// get returns the password and whether one was given.
func (p *passwordSource) get() (string, bool, error) {
	switch {
	case *p.value != "":
		return *p.value, true, nil
	case *p.file != "":
		b, err := os.ReadFile(*p.file)
		if err != nil {
			return "", false, fmt.Errorf("--%s-file: %w", p.flagName, err)
		}
		line, _, _ := strings.Cut(string(b), "\n")
		return strings.TrimRight(line, "\r"), true, nil
	}
	v, ok := os.LookupEnv(p.env)
	return v, ok, nil
}
