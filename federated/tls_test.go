package federated_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"math/big"
	"net"
	"net/url"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/dpsql/dpsql/federated"
	"github.com/dpsql/dpsql/internal/testdb"
)

// writeCerts makes a CA and a server certificate for 127.0.0.1 signed by
// it, in dir: ca.pem, server.crt, server.key.
func writeCerts(t *testing.T, dir string) {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "dpsql test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	srv := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	caCert, _ := x509.ParseCertificate(caDER)
	srvDER, err := x509.CreateCertificate(rand.Reader, srv, caCert, &key.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string]*pem.Block{
		"ca.pem":     {Type: "CERTIFICATE", Bytes: caDER},
		"server.crt": {Type: "CERTIFICATE", Bytes: srvDER},
		"server.key": {Type: "EC PRIVATE KEY", Bytes: keyDER},
	} {
		if err := os.WriteFile(filepath.Join(dir, name), pem.EncodeToMemory(b), 0o600); err != nil {
			t.Fatal(err)
		}
	}
}

// TestPostgresTLS turns TLS on in the local test PostgreSQL with a
// certificate made here, then connects with sslmode=verify-full: the
// connection must be encrypted, and a wrong CA must be refused. It needs
// the server on this machine (to read the files) and a superuser.
func TestPostgresTLS(t *testing.T) {
	srv := testdb.Postgres(t)
	if srv.Host != "127.0.0.1" && srv.Host != "localhost" {
		t.Skip("test PostgreSQL is not local")
	}
	pgUser, err := user.Lookup("postgres")
	if err != nil || os.Geteuid() != 0 {
		t.Skip("needs root and a postgres user to hand the server its key")
	}
	dir, err := os.MkdirTemp("", "dpsql-tls")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	writeCerts(t, dir)
	uid, _ := strconv.Atoi(pgUser.Uid)
	gid, _ := strconv.Atoi(pgUser.Gid)
	for _, f := range []string{"", "server.crt", "server.key"} {
		if err := os.Chown(filepath.Join(dir, f), uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	admin := testdb.Open(t, srv)
	defer admin.Close()
	q := func(s string) string { return "'" + s + "'" }
	admin.MustExec(t,
		"ALTER SYSTEM SET ssl_cert_file = "+q(filepath.Join(dir, "server.crt")),
		"ALTER SYSTEM SET ssl_key_file = "+q(filepath.Join(dir, "server.key")),
		"ALTER SYSTEM SET ssl = on",
		"SELECT pg_reload_conf()")
	t.Cleanup(func() {
		admin := testdb.Open(t, srv)
		defer admin.Close()
		admin.MustExec(t, "ALTER SYSTEM RESET ssl", "ALTER SYSTEM RESET ssl_cert_file", "ALTER SYSTEM RESET ssl_key_file", "SELECT pg_reload_conf()")
	})
	if !testdb.Wait(5*time.Second, func() bool {
		n, err := admin.QueryInt(context.Background(), "SELECT CASE WHEN current_setting('ssl') = 'on' THEN 1 ELSE 0 END")
		return err == nil && n == 1
	}) {
		t.Fatal("the server did not turn ssl on")
	}

	conn := testdb.Table(srv, "pg_class")
	conn.Schema = "pg_catalog"
	conn.Params = url.Values{"sslmode": {"verify-full"}, "sslrootcert": {filepath.Join(dir, "ca.pem")}}
	ctx := context.Background()
	src, err := federated.Open(ctx, conn)
	if err != nil {
		t.Fatalf("verify-full with the right CA: %s", federated.Detail(err))
	}
	defer src.Close()
	var ssl []any
	// Scan runs on a connection of its own, opened with the same settings.
	sslConn := *conn
	sslConn.Schema, sslConn.Table = "pg_catalog", "pg_stat_ssl"
	src2, err := federated.Open(ctx, &sslConn)
	if err != nil {
		t.Fatal(err)
	}
	defer src2.Close()
	if err := src2.Scan(ctx, []string{"ssl"}, func(row []any) error {
		ssl = append(ssl, row[0])
		return nil
	}); err != nil {
		t.Fatal(federated.Detail(err))
	}
	// Only this test's connections ask for TLS (the admin one disables it).
	encrypted := 0
	for _, v := range ssl {
		if v == int64(1) {
			encrypted++
		}
	}
	if encrypted == 0 {
		t.Fatalf("no encrypted connection in pg_stat_ssl: %v", ssl)
	}

	// A CA that did not sign the server's certificate is refused.
	other := t.TempDir()
	writeCerts(t, other)
	bad := *conn
	bad.Params = url.Values{"sslmode": {"verify-full"}, "sslrootcert": {filepath.Join(other, "ca.pem")}}
	if _, err := federated.Open(ctx, &bad); !errors.Is(err, federated.ErrConnect) {
		t.Errorf("wrong CA: %v, want ErrConnect", err)
	}
	// sslmode=disable still works: the server accepts both.
	plain := *conn
	plain.Params = url.Values{"sslmode": {"disable"}}
	if s, err := federated.Open(ctx, &plain); err != nil {
		t.Errorf("sslmode=disable: %v", err)
	} else {
		s.Close()
	}
}
