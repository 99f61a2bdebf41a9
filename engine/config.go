package engine

import (
	"log/slog"
	"net"
	"strconv"
)

// Defaults used by Config.
const (
	DefaultDataDir = "./dpsql-data"
	DefaultHost    = "127.0.0.1"
	DefaultPort    = 3306
)

// Config configures a server. The zero value is not usable; start from
// DefaultConfig or fill every field.
type Config struct {
	// DataDir is the directory holding all durable state. It is created on
	// first start and reused afterwards.
	DataDir string
	// Host is the address to listen on.
	Host string
	// Port is the TCP port to listen on; 0 picks a free port (see
	// Engine.Addr).
	Port int
	// RootPassword, if set, is root's password: it is stored (hashed) on
	// first start and replaces the stored one on later starts. If empty on
	// first start, a random password is generated and logged once.
	RootPassword string
	// Demo creates the demo database on start if it does not exist yet.
	Demo bool
	// Version is the dpsql version reported by SHOW DPSQL STATUS.
	Version string
	// Logger receives the server's own log lines; nil logs to stderr.
	Logger *slog.Logger
	// TLSCert and TLSKey are the PEM files of the server's certificate
	// and private key. With them, clients may (or, with RequireTLS, must)
	// encrypt their connection; without them the server speaks plain TCP.
	TLSCert, TLSKey string
	// RequireTLS refuses connections that do not switch to TLS.
	RequireTLS bool
	// Listener, if set, is where the server accepts connections instead of
	// binding Host:Port: the embedding API (package dpsql) passes an
	// in-memory listener, so that no TCP port is opened.
	Listener net.Listener
}

// DefaultConfig returns the configuration used when no flags are given.
func DefaultConfig() Config {
	return Config{
		DataDir: DefaultDataDir,
		Host:    DefaultHost,
		Port:    DefaultPort,
		Version: "dev",
	}
}

// validate reports the first invalid field of c.
func (c *Config) validate() error {
	switch {
	case c.DataDir == "":
		return ErrConfig.New("data directory must not be empty")
	case c.Port < 0 || c.Port > 65535:
		return ErrConfig.New("port %d out of range 0..65535", c.Port)
	}
	return c.validateTLS()
}

// addr is the host:port to listen on.
func (c *Config) addr() string {
	return net.JoinHostPort(c.Host, strconv.Itoa(c.Port))
}
