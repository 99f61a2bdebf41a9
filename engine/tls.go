package engine

import (
	"crypto/tls"
)

// tlsConfig returns the listener's TLS configuration: nil when no
// certificate is configured, otherwise the certificate and key of the
// configuration with TLS 1.2 as the minimum version.
func (c *Config) tlsConfig() (*tls.Config, error) {
	if c.TLSCert == "" && c.TLSKey == "" {
		return nil, nil
	}
	cert, err := tls.LoadX509KeyPair(c.TLSCert, c.TLSKey)
	if err != nil {
		return nil, ErrConfig.Wrap(err, "loading TLS certificate %q and key %q", c.TLSCert, c.TLSKey)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// validateTLS reports an incomplete TLS configuration.
func (c *Config) validateTLS() error {
	switch {
	case (c.TLSCert == "") != (c.TLSKey == ""):
		return ErrConfig.New("TLS needs both a certificate (--tls-cert) and a key (--tls-key)")
	case c.RequireTLS && c.TLSCert == "":
		return ErrConfig.New("requiring TLS (--require-tls) needs a certificate (--tls-cert) and a key (--tls-key)")
	}
	return nil
}
