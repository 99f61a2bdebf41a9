package federated

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// Drivers.
const (
	Postgres = "postgresql"
	MySQL    = "mysql"
)

// Conn is a parsed CONNECTION string: where a source table lives and how to
// reach it. Database, Schema and Table are the remote names as written
// (Schema is "public" for PostgreSQL when omitted and empty for MySQL).
type Conn struct {
	Driver   string // Postgres or MySQL
	User     string
	Password string
	Host     string
	Port     int
	Database string
	Schema   string
	Table    string
	Params   url.Values // TLS settings; see ParseConnection
}

const (
	pgForm    = "postgresql://user:password@host:port/database/schema.table"
	mysqlForm = "mysql://user:password@host:port/database/table"
)

// Parameters each driver accepts, with their allowed values (nil: any
// non-empty value, a file path).
var knownParams = map[string]map[string][]string{
	Postgres: {
		"sslmode":     {"disable", "allow", "prefer", "require", "verify-ca", "verify-full"},
		"sslrootcert": nil,
		"sslcert":     nil,
		"sslkey":      nil,
	},
	MySQL: {
		"tls":    {"true", "false", "skip-verify", "preferred"},
		"tls-ca": nil,
	},
}

// ParseConnection parses a CONNECTION string:
//
//	postgresql://user:password@host:port/database/schema.table  (also postgres://; schema defaults to public)
//	mysql://user:password@host:port/database/table
//
// The port defaults to 5432 and 3306. Parameters: PostgreSQL sslmode
// (disable, allow, prefer, require, verify-ca, verify-full), sslrootcert,
// sslcert and sslkey; MySQL tls (true, false, skip-verify, preferred) and
// tls-ca (a PEM file of the CA that signed the server's certificate).
// Unknown parameters are refused. Errors never contain the password.
func ParseConnection(s string) (*Conn, error) {
	c, err := parseConnection(s, true)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// ParseServer parses a connection string without a table (used for test
// and admin connections): postgresql://user:password@host:port/database.
func ParseServer(s string) (*Conn, error) { return parseConnection(s, false) }

func parseConnection(s string, wantTable bool) (*Conn, error) {
	scheme, _, ok := strings.Cut(s, "://")
	if !ok {
		return nil, fmt.Errorf("federated: connection must be a URL like %s or %s", pgForm, mysqlForm)
	}
	c := &Conn{}
	form := ""
	switch strings.ToLower(scheme) {
	case "postgresql", "postgres":
		c.Driver, c.Port, form = Postgres, 5432, pgForm
	case "mysql", "mariadb":
		c.Driver, c.Port, form = MySQL, 3306, mysqlForm
	default:
		return nil, fmt.Errorf("federated: unknown connection scheme %q: want %s or %s", scheme, pgForm, mysqlForm)
	}
	u, err := url.Parse(s)
	if err != nil {
		// url.Error quotes the whole string, password included.
		return nil, fmt.Errorf("federated: connection is not a valid URL (expected %s)", form)
	}
	if u.Opaque != "" || u.Fragment != "" {
		return nil, fmt.Errorf("federated: connection is not of the form %s", form)
	}
	if u.User != nil {
		c.User = u.User.Username()
		c.Password, _ = u.User.Password()
	}
	if c.User == "" {
		return nil, fmt.Errorf("federated: connection has no user (expected %s)", form)
	}
	c.Host = u.Hostname()
	if c.Host == "" {
		return nil, fmt.Errorf("federated: connection has no host (expected %s)", form)
	}
	if p := u.Port(); p != "" {
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return nil, fmt.Errorf("federated: bad port %q (expected %s)", p, form)
		}
		c.Port = n
	}
	segs, err := pathSegments(u)
	if err != nil {
		return nil, err
	}
	want := 2
	if !wantTable {
		want = 1
	}
	if len(segs) != want || slices.Contains(segs, "") {
		if wantTable {
			return nil, fmt.Errorf("federated: connection path must name a database and a table (expected %s)", form)
		}
		return nil, fmt.Errorf("federated: connection path must name a database")
	}
	c.Database = segs[0]
	if wantTable {
		switch c.Driver {
		case Postgres:
			c.Schema, c.Table = "public", segs[1]
			if sch, tbl, ok := strings.Cut(segs[1], "."); ok {
				c.Schema, c.Table = sch, tbl
			}
			if c.Schema == "" || c.Table == "" || strings.Contains(c.Table, ".") {
				return nil, fmt.Errorf("federated: bad table %q (expected schema.table or table in %s)", segs[1], form)
			}
		case MySQL:
			c.Table = segs[1]
		}
	}
	c.Params = u.Query()
	if err := c.checkParams(); err != nil {
		return nil, err
	}
	if len(c.Params) == 0 {
		c.Params = nil
	}
	return c, nil
}

// pathSegments splits the URL path on '/', unescaping each segment, so that
// a %2F inside a name is not a separator.
func pathSegments(u *url.URL) ([]string, error) {
	p := strings.TrimPrefix(u.EscapedPath(), "/")
	if p == "" {
		return nil, nil
	}
	raw := strings.Split(p, "/")
	out := make([]string, len(raw))
	for i, r := range raw {
		s, err := url.PathUnescape(r)
		if err != nil {
			return nil, fmt.Errorf("federated: bad escape in connection path segment %d", i+1)
		}
		out[i] = s
	}
	return out, nil
}

func (c *Conn) checkParams() error {
	known := knownParams[c.Driver]
	for k, vs := range c.Params {
		allowed, ok := known[k]
		if !ok {
			names := make([]string, 0, len(known))
			for n := range known {
				names = append(names, n)
			}
			slices.Sort(names)
			return fmt.Errorf("federated: unknown %s connection parameter %q (known: %s)", c.Driver, k, strings.Join(names, ", "))
		}
		if len(vs) != 1 || vs[0] == "" {
			return fmt.Errorf("federated: connection parameter %q needs exactly one non-empty value", k)
		}
		if allowed != nil && !slices.Contains(allowed, vs[0]) {
			return fmt.Errorf("federated: connection parameter %s=%q: want one of %s", k, vs[0], strings.Join(allowed, ", "))
		}
	}
	return nil
}

// String is the canonical connection string, credentials included, for
// storage. ParseConnection(c.String()) gives c back.
func (c *Conn) String() string { return c.format(c.Password) }

// Masked is String with the password replaced by ***; it is what SHOW
// CREATE TABLE and error messages may show.
func (c *Conn) Masked() string {
	if c.Password == "" {
		return c.format("")
	}
	// url escapes '*' in a password; show the mask as written.
	return strings.Replace(c.format("***"), ":%2A%2A%2A@", ":***@", 1)
}

func (c *Conn) format(pw string) string {
	u := url.URL{Scheme: c.Driver, Host: net.JoinHostPort(c.Host, strconv.Itoa(c.Port))}
	switch {
	case c.User != "" && pw != "":
		u.User = url.UserPassword(c.User, pw)
	case c.User != "":
		u.User = url.User(c.User)
	}
	segs := []string{c.Database}
	if c.Table != "" {
		t := c.Table
		if c.Driver == Postgres {
			t = c.Schema + "." + c.Table
		}
		segs = append(segs, t)
	}
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	u.RawPath = "/" + strings.Join(segs, "/")
	u.Path, _ = url.PathUnescape(u.RawPath)
	u.RawQuery = c.Params.Encode()
	return u.String()
}

// target names the remote table for messages: driver, host and table,
// never credentials.
func (c *Conn) target() string {
	t := c.Database + "/" + c.Table
	if c.Driver == Postgres {
		t = c.Database + "/" + c.Schema + "." + c.Table
	}
	return fmt.Sprintf("%s %s:%d/%s", c.Driver, c.Host, c.Port, t)
}
