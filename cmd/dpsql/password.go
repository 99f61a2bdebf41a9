package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// A password on the command line is visible to every user of the machine
// (ps, /proc). Every command that takes one therefore also reads it from a
// file or from an environment variable; the flag wins, then the file, then
// the variable.

// clientFlags are the connection flags of the commands that talk to a
// running server (import, backup).
type clientFlags struct {
	addr, user *string
	password   *passwordSource
}

// declareClientFlags declares --addr, --user and the password flags on fs.
func declareClientFlags(fs *flag.FlagSet, userUsage string) *clientFlags {
	return &clientFlags{
		addr:     fs.String("addr", "127.0.0.1:3306", "server address"),
		user:     fs.String("user", "root", userUsage),
		password: passwordFlags(fs, "password", "DPSQL_PASSWORD", "Password"),
	}
}

// connect opens a connection pool to the server and checks that it
// answers. interpolate sends parameters inside the query text.
func (c *clientFlags) connect(ctx context.Context, interpolate bool) (*sql.DB, error) {
	pw, _, err := c.password.get()
	if err != nil {
		return nil, err
	}
	cfg := mysql.NewConfig()
	cfg.User, cfg.Passwd, cfg.Net, cfg.Addr = *c.user, pw, "tcp", *c.addr
	cfg.InterpolateParams = interpolate
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(connector)
	if err := db.PingContext(ctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("connecting to %s: %w", *c.addr, err)
	}
	return db, nil
}

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
