package server

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"
)

// TLS modes (mongod's net.tls.mode).
const (
	TLSDisabled = "disabled"
	// TLSAllow and TLSPrefer accept TLS and plain connections on the same
	// port (mongod's two differ only in what a member uses to connect out,
	// which a standalone never does).
	TLSAllow   = "allowTLS"
	TLSPrefer  = "preferTLS"
	TLSRequire = "requireTLS"
)

// TLSOptions configure the listener's TLS. Mode disabled (or a nil
// *TLSOptions) serves plain connections only.
type TLSOptions struct {
	Mode   string
	Config *tls.Config
}

// TLSFiles are the PEM files and checks a tls.Config is built from.
type TLSFiles struct {
	// CertificateKeyFile holds the server's certificate chain and its
	// unencrypted private key.
	CertificateKeyFile string
	// CAFile holds the authorities client certificates are checked
	// against; with it, clients must present a certificate (unless
	// AllowConnectionsWithoutCertificates).
	CAFile string
	// AllowInvalidCertificates accepts client certificates that do not
	// verify (development only).
	AllowInvalidCertificates bool
	// AllowConnectionsWithoutCertificates lets clients without a
	// certificate connect when CAFile is set.
	AllowConnectionsWithoutCertificates bool
}

// handshakeTimeout bounds how long a new connection may take to show
// whether it speaks TLS and to finish the handshake.
const handshakeTimeout = 10 * time.Second

// LoadTLS builds the server's tls.Config from PEM files, on the standard
// library's crypto/tls: TLS 1.2 or later.
func LoadTLS(f TLSFiles) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(f.CertificateKeyFile, f.CertificateKeyFile)
	if err != nil {
		return nil, fmt.Errorf("cannot read the certificate and key from %s: %w", f.CertificateKeyFile, err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if f.CAFile == "" {
		return cfg, nil
	}
	pem, err := os.ReadFile(f.CAFile)
	if err != nil {
		return nil, fmt.Errorf("cannot read the CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("the CA file %s holds no PEM certificate", f.CAFile)
	}
	cfg.ClientCAs = pool
	switch {
	case f.AllowInvalidCertificates && f.AllowConnectionsWithoutCertificates:
		cfg.ClientAuth = tls.RequestClientCert
	case f.AllowInvalidCertificates:
		cfg.ClientAuth = tls.RequireAnyClientCert
	case f.AllowConnectionsWithoutCertificates:
		cfg.ClientAuth = tls.VerifyClientCertIfGiven
	default:
		cfg.ClientAuth = tls.RequireAndVerifyClientCert
	}
	return cfg, nil
}

// errPlainRefused is a plain connection under requireTLS.
var errPlainRefused = errors.New("connection without TLS refused (--tlsMode requireTLS)")

// secure looks at a new connection's first bytes: a TLS handshake is
// completed and the TLS connection returned; a plain connection is
// returned as it is (its first bytes put back), or refused under
// requireTLS.
func (s *Server) secure(nc net.Conn) (net.Conn, error) {
	deadline := time.Now().Add(handshakeTimeout)
	_ = nc.SetDeadline(deadline)
	var first [3]byte
	if _, err := io.ReadFull(nc, first[:]); err != nil {
		return nil, err
	}
	pc := &prefixConn{Conn: nc, prefix: first[:]}
	if !looksLikeTLS(first) {
		if s.opts.TLS.Mode == TLSRequire {
			return nil, errPlainRefused
		}
		_ = nc.SetDeadline(time.Time{})
		return pc, nil
	}
	tc := tls.Server(pc, s.opts.TLS.Config)
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		return nil, fmt.Errorf("TLS handshake failed: %w", err)
	}
	_ = nc.SetDeadline(time.Time{})
	return tc, nil
}

// looksLikeTLS reports whether a connection's first three bytes are a TLS
// handshake record's header (content type 22, version 3.x), as mongod
// decides. A MongoDB message starts with its length, little-endian: it
// reads the same only for a first message of 790 + k·65536 bytes (k ≤ 4),
// and a client's first message is its small hello.
func looksLikeTLS(b [3]byte) bool {
	return b[0] == 0x16 && b[1] == 0x03 && b[2] <= 0x04
}

// prefixConn is a connection whose first bytes were read already.
type prefixConn struct {
	net.Conn
	prefix []byte
}

func (p *prefixConn) Read(b []byte) (int, error) {
	if len(p.prefix) > 0 {
		n := copy(b, p.prefix)
		p.prefix = p.prefix[n:]
		return n, nil
	}
	return p.Conn.Read(b)
}
