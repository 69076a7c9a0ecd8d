package server_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/cairndb/cairn/internal/commands"
	"github.com/cairndb/cairn/internal/server"
	"github.com/cairndb/cairn/internal/testpki"
)

func writePEM(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// startTLSServer starts a server with TLS mode and files.
func startTLSServer(t *testing.T, mode string, files server.TLSFiles) string {
	t.Helper()
	cfg, err := server.LoadTLS(files)
	if err != nil {
		t.Fatal(err)
	}
	_, addr := startServerFull(t, server.Options{Logger: discard(), TLS: &server.TLSOptions{Mode: mode, Config: cfg}}, commands.Config{CairnVer: "test"})
	return addr
}

// ping connects the Go driver (over TLS when tlsCfg is not nil) and pings.
// A connection expected to fail is given 500 ms, one expected to succeed
// 5 s (on loopback either answers in milliseconds).
func ping(t *testing.T, addr string, tlsCfg *tls.Config, expectOK bool) error {
	t.Helper()
	ms := "500"
	if expectOK {
		ms = "5000"
	}
	uri := "mongodb://" + addr + "/?serverSelectionTimeoutMS=" + ms + "&connectTimeoutMS=" + ms
	o := options.Client().ApplyURI(uri)
	if tlsCfg != nil {
		o.SetTLSConfig(tlsCfg)
	}
	c, err := mongo.Connect(o)
	if err != nil {
		return err
	}
	defer func() {
		// A client whose server is unreachable waits in Disconnect for
		// its monitor; nothing of it needs to finish.
		ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
		defer cancel()
		_ = c.Disconnect(ctx)
	}()
	return c.Ping(context.Background(), nil)
}

// TestTLSModes: the Go driver with tls=true and the test CA connects under
// requireTLS, preferTLS and allowTLS; a plain client connects under the
// last two and is refused under requireTLS; a TLS client is refused by a
// server with TLS disabled.
func TestTLSModes(t *testing.T) {
	pki := testpki.New(t, "Cairn test CA")
	_, serverPEM := pki.Issue(t, "server", x509.ExtKeyUsageServerAuth)
	files := server.TLSFiles{CertificateKeyFile: serverPEM}
	trusting := &tls.Config{RootCAs: pki.Pool}
	for _, c := range []struct {
		mode           string
		tlsOK, plainOK bool
	}{
		{server.TLSRequire, true, false},
		{server.TLSPrefer, true, true},
		{server.TLSAllow, true, true},
	} {
		addr := startTLSServer(t, c.mode, files)
		if err := ping(t, addr, trusting, c.tlsOK); (err == nil) != c.tlsOK {
			t.Errorf("%s: TLS client: %v", c.mode, err)
		}
		if err := ping(t, addr, nil, c.plainOK); (err == nil) != c.plainOK {
			t.Errorf("%s: plain client: %v", c.mode, err)
		}
	}
	// A client that does not trust the server's CA is refused by the
	// handshake (the driver checks the server's certificate).
	other := testpki.New(t, "another CA")
	addr := startTLSServer(t, server.TLSRequire, files)
	if err := ping(t, addr, &tls.Config{RootCAs: other.Pool}, false); err == nil {
		t.Error("a client trusting another CA connected")
	}
	plain := startServer(t)
	if err := ping(t, plain.addr, trusting, false); err == nil {
		t.Error("a TLS client connected to a server with TLS disabled")
	}
}

// TestTLSClientCertificates: with --tlsCAFile clients must present a
// certificate the CA signed; --tlsAllowConnectionsWithoutCertificates lets
// clients without one in; --tlsAllowInvalidCertificates accepts one from
// another CA.
func TestTLSClientCertificates(t *testing.T) {
	pki := testpki.New(t, "Cairn test CA")
	_, serverPEM := pki.Issue(t, "server", x509.ExtKeyUsageServerAuth)
	good, _ := pki.Issue(t, "client", x509.ExtKeyUsageClientAuth)
	other := testpki.New(t, "another CA")
	bad, _ := other.Issue(t, "intruder", x509.ExtKeyUsageClientAuth)
	ca := pki.CAFile
	with := func(cert *tls.Certificate) *tls.Config {
		// GetClientCertificate sends the certificate whatever CAs the
		// server names (Go's client would otherwise send none that
		// another CA signed), so the server's check is what is tested.
		return &tls.Config{RootCAs: pki.Pool, GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			if cert == nil {
				return &tls.Certificate{}, nil
			}
			return cert, nil
		}}
	}
	for _, c := range []struct {
		name                  string
		files                 server.TLSFiles
		none, signed, invalid bool // does a client with no / a signed / another CA's certificate connect?
	}{
		{"CAFile", server.TLSFiles{CertificateKeyFile: serverPEM, CAFile: ca}, false, true, false},
		{"allowConnectionsWithoutCertificates", server.TLSFiles{CertificateKeyFile: serverPEM, CAFile: ca, AllowConnectionsWithoutCertificates: true}, true, true, false},
		{"allowInvalidCertificates", server.TLSFiles{CertificateKeyFile: serverPEM, CAFile: ca, AllowInvalidCertificates: true}, false, true, true},
		{"no CAFile", server.TLSFiles{CertificateKeyFile: serverPEM}, true, true, true},
	} {
		addr := startTLSServer(t, server.TLSRequire, c.files)
		for _, k := range []struct {
			who  string
			cert *tls.Certificate
			want bool
		}{{"no certificate", nil, c.none}, {"a signed certificate", &good, c.signed}, {"another CA's certificate", &bad, c.invalid}} {
			err := ping(t, addr, with(k.cert), k.want)
			if (err == nil) != k.want {
				t.Errorf("%s: client with %s: err %v, want connected=%v", c.name, k.who, err, k.want)
			}
		}
	}
}

// TestLoadTLSErrors: missing or wrong files fail at startup with the file
// named.
func TestLoadTLSErrors(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.pem")
	writePEM(t, junk, []byte("not a certificate"))
	pki := testpki.New(t, "CA")
	_, serverPEM := pki.Issue(t, "server", x509.ExtKeyUsageServerAuth)
	for _, f := range []server.TLSFiles{
		{CertificateKeyFile: filepath.Join(dir, "missing.pem")},
		{CertificateKeyFile: junk},
		{CertificateKeyFile: serverPEM, CAFile: junk},
		{CertificateKeyFile: serverPEM, CAFile: filepath.Join(dir, "missing.pem")},
	} {
		if _, err := server.LoadTLS(f); err == nil {
			t.Errorf("%+v: loaded", f)
		}
	}
}
