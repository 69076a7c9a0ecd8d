package tlsconn_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/cairndb/cairn/internal/testpki"
	"github.com/cairndb/cairn/internal/tlsconn"
)

// accepted runs l.Accept on the server end of a loopback connection whose
// client end client drives, and returns the first 4 bytes the server reads
// through the accepted connection (or the Accept error).
func accepted(t *testing.T, l *tlsconn.Listener, client func(net.Conn) net.Conn) (string, error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	type result struct {
		got string
		err error
	}
	done := make(chan result, 1)
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			done <- result{err: err}
			return
		}
		defer nc.Close()
		c, err := l.Accept(nc)
		if err != nil {
			done <- result{err: err}
			return
		}
		var b [4]byte
		_, err = io.ReadFull(c, b[:])
		done <- result{string(b[:]), err}
	}()
	nc, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	c := client(nc)
	if c != nil {
		_, _ = c.Write([]byte("CRft"))
	}
	select {
	case r := <-done:
		return r.got, r.err
	case <-time.After(15 * time.Second):
		t.Fatal("Accept did not return")
		return "", nil
	}
}

// TestAcceptModes: invariant "A required TLS is never skipped" — under
// requireTLS a plain stream (here a member's Raft magic) is refused before
// a byte of it is handed on; allowTLS and preferTLS take both; a TLS
// stream's bytes arrive decrypted in every mode that is on.
func TestAcceptModes(t *testing.T) {
	ca := testpki.New(t, "CA")
	_, serverPEM := ca.Issue(t, "server", x509.ExtKeyUsageServerAuth)
	cfg, err := tlsconn.LoadServer(tlsconn.Files{CertificateKeyFile: serverPEM})
	if err != nil {
		t.Fatal(err)
	}
	plain := func(nc net.Conn) net.Conn { return nc }
	secure := func(nc net.Conn) net.Conn {
		tc := tls.Client(nc, &tls.Config{RootCAs: ca.Pool, ServerName: "127.0.0.1"})
		if err := tc.Handshake(); err != nil {
			t.Errorf("handshake: %v", err)
			return nil
		}
		return tc
	}
	for _, c := range []struct {
		mode                  string
		plainOK, tlsOK, plain bool
	}{
		{tlsconn.Require, false, true, false},
		{tlsconn.Prefer, true, true, false},
		{tlsconn.Allow, true, true, false},
	} {
		l := &tlsconn.Listener{Mode: c.mode, Config: cfg}
		got, err := accepted(t, l, plain)
		if c.plainOK != (err == nil && got == "CRft") {
			t.Errorf("%s: a plain stream: %q %v", c.mode, got, err)
		}
		if !c.plainOK && !errors.Is(err, tlsconn.ErrPlainRefused) {
			t.Errorf("%s: a plain stream refused with %v, want ErrPlainRefused", c.mode, err)
		}
		if got, err := accepted(t, l, secure); c.tlsOK != (err == nil && got == "CRft") {
			t.Errorf("%s: a TLS stream: %q %v", c.mode, got, err)
		}
	}
}

// TestMemberConfig: invariant "Members dial as the mode says" — DialsTLS
// by mode, and Member's configuration presents the member's certificate
// (a server that requires one verifies it) and checks the peer's against
// the CA file: a server whose certificate another CA signed is refused,
// unless allowInvalidCertificates.
func TestMemberConfig(t *testing.T) {
	for mode, want := range map[string]bool{tlsconn.Disabled: false, tlsconn.Allow: false, tlsconn.Prefer: true, tlsconn.Require: true} {
		if tlsconn.DialsTLS(mode) != want {
			t.Errorf("DialsTLS(%s) = %v", mode, !want)
		}
	}
	ca := testpki.New(t, "CA")
	other := testpki.New(t, "another CA")
	_, memberPEM := ca.Issue(t, "member", x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth)
	_, strangerPEM := other.Issue(t, "stranger", x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth)
	for _, c := range []struct {
		name    string
		server  string // the listening member's certificate
		client  tlsconn.Files
		wantErr bool
	}{
		{"same CA", memberPEM, tlsconn.Files{CertificateKeyFile: memberPEM, CAFile: ca.CAFile}, false},
		{"peer from another CA", strangerPEM, tlsconn.Files{CertificateKeyFile: memberPEM, CAFile: ca.CAFile}, true},
		{"allowInvalidCertificates", strangerPEM, tlsconn.Files{CertificateKeyFile: memberPEM, CAFile: ca.CAFile, AllowInvalidCertificates: true}, false},
	} {
		// The listening side requires a certificate its CA signed: the
		// dialling member must present its own.
		scfg, err := tlsconn.LoadServer(tlsconn.Files{CertificateKeyFile: c.server, CAFile: ca.CAFile, AllowInvalidCertificates: c.server == strangerPEM})
		if err != nil {
			t.Fatal(err)
		}
		mcfg, err := tlsconn.Member(c.client)
		if err != nil {
			t.Fatal(err)
		}
		got, err := accepted(t, &tlsconn.Listener{Mode: tlsconn.Require, Config: scfg}, func(nc net.Conn) net.Conn {
			tc, err := tlsconn.Dial(context.Background(), nc, mcfg, nc.RemoteAddr().String())
			if (err != nil) != c.wantErr {
				t.Errorf("%s: dial: %v", c.name, err)
			}
			if err != nil {
				return nil
			}
			return tc
		})
		if !c.wantErr && (err != nil || got != "CRft") {
			t.Errorf("%s: server side: %q %v", c.name, got, err)
		}
	}
	if _, err := tlsconn.Member(tlsconn.Files{CertificateKeyFile: memberPEM, CAFile: strangerPEM + ".missing"}); err == nil {
		t.Error("Member with a missing CA file: no error")
	}
}
