// Package tlsconn is how Cairn's processes speak TLS: a listener's mode
// (mongod's net.tls.mode) and the accept-side handshake that tells a TLS
// connection from a plain one by its first bytes, the server's tls.Config
// from PEM files, and the client configuration a member (a replica set
// member, a shard, a router) dials other members with.
//
// MongoDB's modes decide two things: what a listener accepts, and whether
// a member's own connections to other members use TLS —
//
//	mode        accepts            member connections out
//	disabled    plain              plain
//	allowTLS    TLS and plain      plain
//	preferTLS   TLS and plain      TLS
//	requireTLS  TLS only           TLS
//
// Invariants:
//
//   - "A required TLS is never skipped": under requireTLS, Listener.Accept
//     refuses every connection that does not open with a TLS handshake,
//     whatever it carries (a client's message, a member's Raft stream), so
//     no byte of one is read as a request (TestAcceptModes).
//   - "Members dial as the mode says": DialsTLS is true exactly for
//     preferTLS and requireTLS, and Member's configuration presents the
//     process's own certificate and verifies the peer's against the CA file
//     (or the system's roots) unless allowInvalidCertificates
//     (TestMemberConfig; the cluster's TLS tests check it end to end).
package tlsconn

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

// Modes (mongod's net.tls.mode).
const (
	Disabled = "disabled"
	// Allow and Prefer accept TLS and plain connections on the same port;
	// they differ in what a member uses to connect out (DialsTLS).
	Allow   = "allowTLS"
	Prefer  = "preferTLS"
	Require = "requireTLS"
)

// DialsTLS reports whether a process in mode connects to other members
// with TLS (preferTLS and requireTLS, as MongoDB).
func DialsTLS(mode string) bool { return mode == Prefer || mode == Require }

// Listener configures a listener's TLS. Mode disabled (or a nil
// *Listener) serves plain connections only.
type Listener struct {
	Mode   string
	Config *tls.Config
}

// On reports whether l accepts TLS connections at all.
func (l *Listener) On() bool { return l != nil && l.Mode != Disabled && l.Mode != "" }

// Files are the PEM files and checks a tls.Config is built from (mongod's
// --tls* options).
type Files struct {
	// CertificateKeyFile holds the process's certificate chain and its
	// unencrypted private key: what it presents to clients, and, as a
	// member, to the members it connects to.
	CertificateKeyFile string
	// CAFile holds the authorities certificates are checked against: a
	// client's (with it, clients must present a certificate unless
	// AllowConnectionsWithoutCertificates) and, as a member, the peer's.
	CAFile string
	// AllowInvalidCertificates accepts certificates that do not verify
	// (development only).
	AllowInvalidCertificates bool
	// AllowConnectionsWithoutCertificates lets clients without a
	// certificate connect when CAFile is set.
	AllowConnectionsWithoutCertificates bool
}

// HandshakeTimeout bounds how long a new connection may take to show
// whether it speaks TLS and to finish the handshake, either way.
const HandshakeTimeout = 10 * time.Second

// LoadServer builds a listener's tls.Config from PEM files, on the standard
// library's crypto/tls: TLS 1.2 or later.
func LoadServer(f Files) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(f.CertificateKeyFile, f.CertificateKeyFile)
	if err != nil {
		return nil, fmt.Errorf("cannot read the certificate and key from %s: %w", f.CertificateKeyFile, err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	if f.CAFile == "" {
		return cfg, nil
	}
	pool, err := loadPool(f.CAFile)
	if err != nil {
		return nil, err
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

// Member builds the tls.Config a member connects to other members with:
// its own certificate (MongoDB's net.tls.clusterFile defaults to the
// certificateKeyFile) and the peer's verified against CAFile, or the
// system's roots without one, unless AllowInvalidCertificates. The server
// name is set per connection (Dial).
func Member(f Files) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(f.CertificateKeyFile, f.CertificateKeyFile)
	if err != nil {
		return nil, fmt.Errorf("cannot read the certificate and key from %s: %w", f.CertificateKeyFile, err)
	}
	cfg := &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12,
		InsecureSkipVerify: f.AllowInvalidCertificates}
	if f.CAFile != "" {
		if cfg.RootCAs, err = loadPool(f.CAFile); err != nil {
			return nil, err
		}
	}
	return cfg, nil
}

func loadPool(path string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("cannot read the CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("the CA file %s holds no PEM certificate", path)
	}
	return pool, nil
}

// Dial finishes a TLS client handshake on nc, a connection to addr
// ("host:port", whose host the peer's certificate must name), within ctx.
// On failure nc is closed.
func Dial(ctx context.Context, nc net.Conn, cfg *tls.Config, addr string) (net.Conn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	c := cfg.Clone()
	c.ServerName = host
	tc := tls.Client(nc, c)
	ctx, cancel := context.WithTimeout(ctx, HandshakeTimeout)
	defer cancel()
	if err := tc.HandshakeContext(ctx); err != nil {
		nc.Close()
		return nil, fmt.Errorf("TLS handshake with %s failed: %w", addr, err)
	}
	return tc, nil
}

// ErrPlainRefused is a plain connection under requireTLS.
var ErrPlainRefused = errors.New("connection without TLS refused (--tlsMode requireTLS)")

// Accept looks at a new connection's first bytes: a TLS handshake is
// completed and the TLS connection returned; a plain connection is
// returned as it is (its first bytes put back), or refused under
// requireTLS. l must be On.
func (l *Listener) Accept(nc net.Conn) (net.Conn, error) {
	deadline := time.Now().Add(HandshakeTimeout)
	_ = nc.SetDeadline(deadline)
	var first [3]byte
	if _, err := io.ReadFull(nc, first[:]); err != nil {
		return nil, err
	}
	pc := &prefixConn{Conn: nc, prefix: first[:]}
	if !looksLikeTLS(first) {
		if l.Mode == Require {
			return nil, ErrPlainRefused
		}
		_ = nc.SetDeadline(time.Time{})
		return pc, nil
	}
	tc := tls.Server(pc, l.Config)
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
// and a client's first message is its small hello; a member's Raft
// stream starts with "CRft".
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
