package server_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/cairndb/cairn/internal/commands"
	"github.com/cairndb/cairn/internal/repl"
	"github.com/cairndb/cairn/internal/server"
	"github.com/cairndb/cairn/internal/testpki"
	"github.com/cairndb/cairn/internal/tlsconn"
)

func writePEM(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// startTLSServer starts a server with TLS mode and files.
func startTLSServer(t *testing.T, mode string, files tlsconn.Files) string {
	t.Helper()
	cfg, err := tlsconn.LoadServer(files)
	if err != nil {
		t.Fatal(err)
	}
	_, addr := startServerFull(t, server.Options{Logger: discard(), TLS: &tlsconn.Listener{Mode: mode, Config: cfg}}, commands.Config{CairnVer: "test"})
	return addr
}

// ping connects the Go driver (over TLS when tlsCfg is not nil) and pings.
// A connection expected to fail is given 500 ms, one expected to succeed
// 30 s (on loopback either answers in milliseconds, but a CI machine
// running every package at once has taken more than 5 s for a TLS
// handshake and hello).
func ping(t *testing.T, addr string, tlsCfg *tls.Config, expectOK bool) error {
	t.Helper()
	ms := "500"
	if expectOK {
		ms = "30000"
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
	files := tlsconn.Files{CertificateKeyFile: serverPEM}
	trusting := &tls.Config{RootCAs: pki.Pool}
	for _, c := range []struct {
		mode           string
		tlsOK, plainOK bool
	}{
		{tlsconn.Require, true, false},
		{tlsconn.Prefer, true, true},
		{tlsconn.Allow, true, true},
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
	addr := startTLSServer(t, tlsconn.Require, files)
	if err := ping(t, addr, &tls.Config{RootCAs: other.Pool}, false); err == nil {
		t.Error("a client trusting another CA connected")
	}
	plain := startServer(t)
	if err := ping(t, plain.addr, trusting, false); err == nil {
		t.Error("a TLS client connected to a server with TLS disabled")
	}
}

// TestTLSMemberStreams: a replica set member's Raft stream arrives on the
// client port inside TLS when the member dialled with it (preferTLS,
// requireTLS) and reaches Options.Members with its first bytes intact,
// while a client on the same port still gets answers; under requireTLS a
// plain member stream is closed without reaching Members (invariant "A
// required TLS is never skipped").
func TestTLSMemberStreams(t *testing.T) {
	pki := testpki.New(t, "Cairn test CA")
	_, memberPEM := pki.Issue(t, "member", x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth)
	for _, mode := range []string{tlsconn.Require, tlsconn.Prefer, tlsconn.Allow} {
		cfg, err := tlsconn.LoadServer(tlsconn.Files{CertificateKeyFile: memberPEM, CAFile: pki.CAFile})
		if err != nil {
			t.Fatal(err)
		}
		streams := make(chan string, 4)
		members := func(c net.Conn, r *bufio.Reader) {
			defer c.Close()
			b, _ := r.Peek(4)
			_, isTLS := c.(*tls.Conn)
			streams <- fmt.Sprintf("%s tls=%v", b, isTLS)
		}
		_, addr := startServerFull(t, server.Options{Logger: discard(), Members: members, TLS: &tlsconn.Listener{Mode: mode, Config: cfg}}, commands.Config{CairnVer: "test"})
		mcfg, err := tlsconn.Member(tlsconn.Files{CertificateKeyFile: memberPEM, CAFile: pki.CAFile})
		if err != nil {
			t.Fatal(err)
		}
		send := func(secure bool) string {
			nc, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			if secure {
				if nc, err = tlsconn.Dial(context.Background(), nc, mcfg, addr); err != nil {
					t.Fatalf("%s: %v", mode, err)
				}
			}
			_, _ = nc.Write([]byte(repl.MemberStreamMagic + "\x02"))
			select {
			case got := <-streams:
				return got
			case <-time.After(2 * time.Second):
				return "closed"
			}
		}
		if got := send(true); got != "CRft tls=true" {
			t.Errorf("%s: a member's TLS stream reached Members as %q", mode, got)
		}
		wantPlain := "CRft tls=false"
		if mode == tlsconn.Require {
			wantPlain = "closed"
		}
		if got := send(false); got != wantPlain {
			t.Errorf("%s: a plain member stream: %q, want %q", mode, got, wantPlain)
		}
		client := &tls.Config{RootCAs: pki.Pool, Certificates: []tls.Certificate{mustPair(t, memberPEM)}}
		if err := ping(t, addr, client, true); err != nil {
			t.Errorf("%s: a TLS client beside member streams: %v", mode, err)
		}
	}
}

func mustPair(t *testing.T, pem string) tls.Certificate {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(pem, pem)
	if err != nil {
		t.Fatal(err)
	}
	return pair
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
		files                 tlsconn.Files
		none, signed, invalid bool // does a client with no / a signed / another CA's certificate connect?
	}{
		{"CAFile", tlsconn.Files{CertificateKeyFile: serverPEM, CAFile: ca}, false, true, false},
		{"allowConnectionsWithoutCertificates", tlsconn.Files{CertificateKeyFile: serverPEM, CAFile: ca, AllowConnectionsWithoutCertificates: true}, true, true, false},
		{"allowInvalidCertificates", tlsconn.Files{CertificateKeyFile: serverPEM, CAFile: ca, AllowInvalidCertificates: true}, false, true, true},
		{"no CAFile", tlsconn.Files{CertificateKeyFile: serverPEM}, true, true, true},
	} {
		addr := startTLSServer(t, tlsconn.Require, c.files)
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
	for _, f := range []tlsconn.Files{
		{CertificateKeyFile: filepath.Join(dir, "missing.pem")},
		{CertificateKeyFile: junk},
		{CertificateKeyFile: serverPEM, CAFile: junk},
		{CertificateKeyFile: serverPEM, CAFile: filepath.Join(dir, "missing.pem")},
	} {
		if _, err := tlsconn.LoadServer(f); err == nil {
			t.Errorf("%+v: loaded", f)
		}
	}
}

// TestX509Authentication: under --auth with --tlsCAFile, a user on
// $external named by a certificate's subject authenticates with that
// certificate (MONGODB-X509, the Go driver's way: speculatively in hello,
// and the authenticate command); another certificate the CA signed, whose
// subject is no user, is refused with AuthenticationFailed.
func TestX509Authentication(t *testing.T) {
	pki := testpki.New(t, "Cairn test CA")
	_, serverPEM := pki.Issue(t, "server", x509.ExtKeyUsageServerAuth)
	member, _ := pki.Issue(t, "x509-user", x509.ExtKeyUsageClientAuth)
	stranger, _ := pki.Issue(t, "stranger", x509.ExtKeyUsageClientAuth)
	cfg, err := tlsconn.LoadServer(tlsconn.Files{CertificateKeyFile: serverPEM, CAFile: pki.CAFile})
	if err != nil {
		t.Fatal(err)
	}
	_, addr := startServerFull(t, server.Options{Logger: discard(), TLS: &tlsconn.Listener{Mode: tlsconn.Require, Config: cfg}}, commands.Config{CairnVer: "test", Auth: true})
	connect := func(cert tls.Certificate, x509Auth bool) *mongo.Client {
		o := options.Client().ApplyURI("mongodb://" + addr + "/?serverSelectionTimeoutMS=30000").
			SetTLSConfig(&tls.Config{RootCAs: pki.Pool, Certificates: []tls.Certificate{cert}})
		if x509Auth {
			o.SetAuth(options.Credential{AuthMechanism: "MONGODB-X509", AuthSource: "$external"})
		}
		c, err := mongo.Connect(o)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Disconnect(context.Background()) })
		return c
	}
	subject := "CN=x509-user"
	// The localhost exception: the first user, on $external, without a password.
	anon := connect(member, false)
	if err := runCmd(anon, "$external", bson.D{{Key: "createUser", Value: subject}, {Key: "pwd", Value: "x"}, {Key: "roles", Value: bson.A{}}}); codeOf(err) != 2 {
		t.Fatalf("an $external user with a password: %v", err)
	}
	if err := runCmd(anon, "$external", bson.D{{Key: "createUser", Value: subject},
		{Key: "roles", Value: bson.A{bson.D{{Key: "role", Value: "readWrite"}, {Key: "db", Value: "app"}}}}}); err != nil {
		t.Fatalf("createUser on $external: %v", err)
	}

	c := connect(member, true)
	ctx := context.Background()
	if _, err := c.Database("app").Collection("c").InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}); err != nil {
		t.Fatalf("insert as the x.509 user: %v", err)
	}
	var st struct {
		AuthInfo struct {
			AuthenticatedUsers []struct{ User, DB string } `bson:"authenticatedUsers"`
		} `bson:"authInfo"`
	}
	if err := c.Database("admin").RunCommand(ctx, bson.D{{Key: "connectionStatus", Value: 1}}).Decode(&st); err != nil {
		t.Fatal(err)
	}
	if u := st.AuthInfo.AuthenticatedUsers; len(u) != 1 || u[0].User != subject || u[0].DB != "$external" {
		t.Errorf("connectionStatus users %+v", u)
	}
	if err := runCmd(c, "other", bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{}}}}); codeOf(err) != 13 {
		t.Errorf("the x.509 user wrote outside its role: %v", err)
	}

	// The authenticate command itself, on a connection with no user yet.
	if err := runCmd(anon, "$external", bson.D{{Key: "authenticate", Value: 1}, {Key: "mechanism", Value: "MONGODB-X509"}, {Key: "user", Value: "CN=someone-else"}}); codeOf(err) != 18 {
		t.Errorf("authenticate as another subject: %v", err)
	}
	if err := runCmd(anon, "admin", bson.D{{Key: "authenticate", Value: 1}, {Key: "mechanism", Value: "MONGODB-X509"}}); codeOf(err) != 2 {
		t.Errorf("authenticate on admin: %v", err)
	}
	if err := runCmd(anon, "$external", bson.D{{Key: "authenticate", Value: 1}, {Key: "mechanism", Value: "MONGODB-CR"}}); codeOf(err) != 334 {
		t.Errorf("authenticate with MONGODB-CR: %v", err)
	}

	s := connect(stranger, true)
	if err := s.Ping(ctx, nil); codeOf(err) != 18 {
		t.Errorf("a certificate whose subject is no user: %v", err)
	}
}
