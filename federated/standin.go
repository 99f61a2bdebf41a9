// Package federated reads source tables that stay in a remote database
// (PostgreSQL or MySQL/MariaDB): connection strings, the remote columns, an
// owner's read-through scan and, for a synthesis, a read-only snapshot that
// answers count marginals with one remote GROUP BY each.
//
// This file is a stand-in with the package's API, so that the engine
// compiles and its tests run against a fake source before the real package
// (branch h-fed) is merged: it parses and masks connection strings, and
// Open always fails.
package federated

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/dpsql/dpsql/catalog/domain"
	"github.com/dpsql/dpsql/synth/pgm"
)

// Conn is a parsed connection string.
type Conn struct {
	Driver                  string // "postgresql" | "mysql"
	User, Password, Host    string
	Port                    int
	Database, Schema, Table string
	Params                  url.Values
}

// ParseConnection parses postgresql://user:pw@host:port/db/schema.table
// and mysql://user:pw@host:port/db/table.
func ParseConnection(s string) (*Conn, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, errors.New("federated: connection string is not a URL")
	}
	c := &Conn{Params: u.Query(), Host: u.Hostname()}
	switch u.Scheme {
	case "postgresql", "postgres":
		c.Driver, c.Port = "postgresql", 5432
	case "mysql", "mariadb":
		c.Driver, c.Port = "mysql", 3306
	default:
		return nil, fmt.Errorf("federated: unsupported driver %q (postgresql or mysql)", u.Scheme)
	}
	if u.User != nil {
		c.User = u.User.Username()
		c.Password, _ = u.User.Password()
	}
	if p := u.Port(); p != "" {
		if c.Port, err = strconv.Atoi(p); err != nil || c.Port <= 0 || c.Port > 65535 {
			return nil, fmt.Errorf("federated: bad port %q", p)
		}
	}
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	if len(parts) != 2 || parts[0] == "" || parts[1] == "" {
		return nil, errors.New("federated: the path must be /database/table")
	}
	c.Database, c.Table = parts[0], parts[1]
	if c.Driver == "postgresql" {
		if sch, t, ok := strings.Cut(c.Table, "."); ok {
			c.Schema, c.Table = sch, t
		}
	}
	if c.Host == "" {
		return nil, errors.New("federated: no host")
	}
	return c, nil
}

func (c *Conn) str(pw string) string {
	u := url.URL{Scheme: c.Driver, Host: c.Host + ":" + strconv.Itoa(c.Port)}
	if c.User != "" || pw != "" {
		u.User = url.UserPassword(c.User, pw)
	}
	t := c.Table
	if c.Schema != "" {
		t = c.Schema + "." + t
	}
	u.Path = "/" + c.Database + "/" + t
	if len(c.Params) > 0 {
		u.RawQuery = c.Params.Encode()
	}
	return u.String()
}

// String is the canonical connection string, with its credentials.
func (c *Conn) String() string { return c.str(c.Password) }

// Masked is the connection string with the password replaced by ***.
func (c *Conn) Masked() string {
	if c.Password == "" {
		return c.str("")
	}
	return strings.Replace(c.str("PASSWORD"), ":PASSWORD@", ":***@", 1)
}

// Column is a remote column.
type Column struct {
	Name, Type string
	Nullable   bool
}

// Stats are a snapshot's remote statistics.
type Stats struct {
	Queries, Scans int
	RemoteTime     time.Duration
	Cells          int64
}

// SnapshotColumn is a column of a snapshot and its public domain.
type SnapshotColumn struct {
	Name   string
	Domain *domain.Column
}

// ErrUnavailable: this build has no remote drivers (stand-in).
var ErrUnavailable = errors.New("federated: remote sources are not available in this build")

// Source is an open remote table.
type Source struct{}

// Open connects to the remote database of c.
func Open(ctx context.Context, c *Conn) (*Source, error) { return nil, ErrUnavailable }

// Close implements io.Closer.
func (s *Source) Close() error { return nil }

// Columns lists the remote table's columns.
func (s *Source) Columns(ctx context.Context) ([]Column, error) { return nil, ErrUnavailable }

// CheckColumns checks that the remote table has exactly these columns.
func (s *Source) CheckColumns(ctx context.Context, names []string) error { return ErrUnavailable }

// Scan reads every row of the named columns.
func (s *Source) Scan(ctx context.Context, names []string, fn func(row []any) error) error {
	return ErrUnavailable
}

// Snapshot opens a consistent read-only transaction.
func (s *Source) Snapshot(ctx context.Context, cols []SnapshotColumn) (*Snapshot, error) {
	return nil, ErrUnavailable
}

// Snapshot answers marginals from one consistent read-only transaction.
type Snapshot struct{}

// Domain implements synth.Data.
func (sn *Snapshot) Domain() *pgm.Domain { return nil }

// Marginals implements synth.Data.
func (sn *Snapshot) Marginals(ctx context.Context, sets [][]int) ([][]float64, error) {
	return nil, ErrUnavailable
}

// Touched reports whether a data query has been sent.
func (sn *Snapshot) Touched() bool { return false }

// Stats returns the remote statistics.
func (sn *Snapshot) Stats() Stats { return Stats{} }

// Close ends the transaction.
func (sn *Snapshot) Close() error { return nil }

// Redact returns an error safe to show.
func Redact(err error) error {
	if err == nil {
		return nil
	}
	return errors.New("federated: the source failed")
}

// Detail returns the full message of err for the owner's logs.
func Detail(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
