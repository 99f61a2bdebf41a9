package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// selfSigned writes a self-signed certificate for 127.0.0.1 and its key
// into dir and returns their paths and a pool trusting the certificate.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "dpsql test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		DNSNames:              []string{"localhost"},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	if err := os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600); err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// withTLS makes the client require TLS, verifying the server against pool,
// and counts completed handshakes in n.
func withTLS(pool *x509.CertPool, n *atomic.Int32) func(*mysql.Config) {
	return func(c *mysql.Config) {
		c.TLS = &tls.Config{
			RootCAs:    pool,
			ServerName: "127.0.0.1",
			MinVersion: tls.VersionTLS12,
			VerifyConnection: func(tls.ConnectionState) error {
				n.Add(1)
				return nil
			},
		}
	}
}

func TestTLS(t *testing.T) {
	certDir := t.TempDir()
	certFile, keyFile, pool := selfSigned(t, certDir)

	t.Run("optional", func(t *testing.T) {
		s := startServer(t, t.TempDir(), "--tls-cert", certFile, "--tls-key", keyFile)
		var handshakes atomic.Int32
		secure := s.open("root", rootPassword, withTLS(pool, &handshakes))
		if got := queryStrings(t, secure, "SELECT 1"); len(got) != 1 || got[0][0] != "1" {
			t.Fatalf("SELECT 1 over TLS = %v", got)
		}
		if handshakes.Load() == 0 {
			t.Fatal("the client did not complete a TLS handshake")
		}
		// A wrong password is still refused over TLS.
		var h2 atomic.Int32
		if _, err := tryQueryStrings(s.open("root", "wrong", withTLS(pool, &h2)), "SELECT 1"); err == nil {
			t.Fatal("wrong password accepted over TLS")
		}
		// Without require-tls, plain clients still connect.
		if _, err := tryQueryStrings(s.root(), "SELECT 1"); err != nil {
			t.Fatalf("plain client refused by a server that does not require TLS: %v", err)
		}
		// A client that does not trust the certificate refuses the server.
		untrusted := s.open("root", rootPassword, func(c *mysql.Config) {
			c.TLS = &tls.Config{RootCAs: x509.NewCertPool(), ServerName: "127.0.0.1"}
		})
		if _, err := tryQueryStrings(untrusted, "SELECT 1"); err == nil {
			t.Fatal("client accepted a certificate it does not trust")
		}
	})

	t.Run("required", func(t *testing.T) {
		s := startServer(t, t.TempDir(), "--tls-cert", certFile, "--tls-key", keyFile, "--require-tls")
		if _, err := tryQueryStrings(s.root(), "SELECT 1"); err == nil {
			t.Fatal("plain client accepted by a server requiring TLS")
		}
		var handshakes atomic.Int32
		if _, err := tryQueryStrings(s.open("root", rootPassword, withTLS(pool, &handshakes)), "SELECT 1"); err != nil || handshakes.Load() == 0 {
			t.Fatalf("TLS client: %v (handshakes %d)", err, handshakes.Load())
		}
		host, port, _ := strings.Cut(s.addr, ":")
		cli := mariadbCLI(t)
		out, err := runCmd(cli, "-h"+host, "-P"+port, "-uroot", "-p"+rootPassword, "--ssl", "--ssl-ca="+certFile,
			"--ssl-verify-server-cert", "--batch", "--skip-column-names", "-e", "SHOW STATUS LIKE 'Ssl_version'; SELECT 42")
		if err != nil || !strings.Contains(out, "42") {
			t.Fatalf("mariadb CLI over TLS: %v\n%s", err, out)
		}
		if out, err := runCmd(cli, "-h"+host, "-P"+port, "-uroot", "-p"+rootPassword, "--skip-ssl", "-e", "SELECT 42"); err == nil {
			t.Fatalf("mariadb CLI without TLS accepted by a server requiring TLS:\n%s", out)
		}
	})

	t.Run("plain server", func(t *testing.T) {
		s := startServer(t, t.TempDir())
		var handshakes atomic.Int32
		if _, err := tryQueryStrings(s.open("root", rootPassword, withTLS(pool, &handshakes)), "SELECT 1"); err == nil {
			t.Fatal("a client requiring TLS connected to a server without TLS")
		}
	})

	t.Run("bad flags", func(t *testing.T) {
		for _, args := range [][]string{
			{"--tls-cert", certFile},
			{"--tls-key", keyFile},
			{"--require-tls"},
			{"--tls-cert", filepath.Join(certDir, "missing.pem"), "--tls-key", keyFile},
			{"--tls-cert", keyFile, "--tls-key", certFile},
		} {
			full := append([]string{"serve", "--data-dir", t.TempDir(), "--port", "0", "--root-password", rootPassword}, args...)
			_, stderr, code := runDpsql(t, full...)
			if code == 0 || !strings.Contains(strings.ToLower(stderr), "tls") {
				t.Errorf("dpsql %v: exit %d, stderr %q; want a TLS configuration error", args, code, stderr)
			}
		}
	})
}

// runCmd runs a client command with a time limit and returns its combined
// output.
func runCmd(name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).CombinedOutput()
	return string(out), err
}
