package memberclient

import (
	"context"
	"errors"
	"net"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/servertest"
)

// startMember is an in-process Cairn server; with a key it runs with
// --auth and the internal user __system@local, as --keyFile does.
func startMember(t *testing.T, key []byte) string {
	return servertest.Start(t, key)
}

func cmd(t *testing.T, d bson.D) bsoncore.Document {
	t.Helper()
	raw, err := bson.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// TestAuthenticatesBeforeUse: with the member's key a client runs data
// commands on a member started with it; without a key it is refused (13);
// with another key it never gets a connection (18), and nothing is pooled.
func TestAuthenticatesBeforeUse(t *testing.T) {
	ctx := context.Background()
	key := []byte("c2VjcmV0IG9mIHRoZSBjbHVzdGVy")
	addr := startMember(t, key)
	insert := cmd(t, bson.D{{Key: "insert", Value: "c"}, {Key: "$db", Value: "test"}})
	docs := &Sequence{ID: "documents", Docs: []bsoncore.Document{cmd(t, bson.D{{Key: "_id", Value: 1}}), cmd(t, bson.D{{Key: "_id", Value: 2}})}}

	good := New(Options{Key: key})
	defer good.Close()
	reply, err := Check(good.Host(addr).RunSeq(ctx, insert, docs))
	if err != nil {
		t.Fatalf("insert with the key: %v", err)
	}
	if n, _ := reply.Lookup("n").AsInt32OK(); n != 2 {
		t.Fatalf("insert with the key: %s", reply)
	}
	status, err := Check(good.Run(ctx, addr, cmd(t, bson.D{{Key: "connectionStatus", Value: 1}, {Key: "$db", Value: "admin"}})))
	if err != nil {
		t.Fatal(err)
	}
	if u, _ := status.Lookup("authInfo", "authenticatedUsers", "0", "user").StringValueOK(); u != "__system" {
		t.Fatalf("connectionStatus: %s, want __system", status)
	}

	none := New(Options{})
	defer none.Close()
	_, err = Check(none.Run(ctx, addr, insert))
	if mongoerr.CodeOf(err) != mongoerr.Unauthorized {
		t.Fatalf("insert without a key: %v, want Unauthorized", err)
	}
	var re *ReplyError
	if !errors.As(err, &re) || len(re.Reply) == 0 {
		t.Fatalf("an ok: 0 reply is not a *ReplyError keeping the reply: %#v", err)
	}

	other := New(Options{Key: []byte("YW5vdGhlciBrZXk=")})
	defer other.Close()
	_, err = other.Run(ctx, addr, insert)
	if mongoerr.CodeOf(err) != mongoerr.AuthenticationFailed {
		t.Fatalf("another key: %v, want AuthenticationFailed", err)
	}
	if n := len(other.Host(addr).idle); n != 0 {
		t.Fatalf("%d connections pooled after a failed authentication", n)
	}
	if Retryable(err) {
		t.Errorf("a wrong key is retryable: %v", err)
	}
}

// TestSetFindsPrimary: a standalone is its own primary; a host that does
// not answer is a retryable *NetError.
func TestSetFindsPrimary(t *testing.T) {
	ctx := context.Background()
	addr := startMember(t, nil)
	c := New(Options{DialTimeout: time.Second})
	defer c.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	s := c.Set("", []string{dead, addr})
	p, err := s.FindPrimary(ctx, 5*time.Second)
	if err != nil || p.Addr() != addr {
		t.Fatalf("FindPrimary: %v, %v", p, err)
	}
	if _, err := Check(s.Run(ctx, cmd(t, bson.D{{Key: "ping", Value: 1}, {Key: "$db", Value: "admin"}}))); err != nil {
		t.Fatal(err)
	}
	_, err = c.Run(ctx, dead, cmd(t, bson.D{{Key: "ping", Value: 1}, {Key: "$db", Value: "admin"}}))
	var ne *NetError
	if !errors.As(err, &ne) || !Retryable(err) {
		t.Fatalf("a closed port: %v, want a retryable *NetError", err)
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if _, err := c.RunPrimary(short, dead, cmd(t, bson.D{{Key: "ping", Value: 1}, {Key: "$db", Value: "admin"}})); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("RunPrimary on nobody: %v, want the context's deadline", err)
	}
}

func TestParseConnString(t *testing.T) {
	for _, c := range []struct {
		in    string
		name  string
		hosts []string
		code  mongoerr.Code
	}{
		{"cfg/a:1,b:2", "cfg", []string{"a:1", "b:2"}, 0},
		{"a:1", "", []string{"a:1"}, 0},
		{"rs/a", "rs", []string{"a:27017"}, 0},
		{"mongodb://a:1,b:2/?replicaSet=rs", "", []string{"a:1", "b:2"}, 0},
		{"rs/", "", nil, mongoerr.FailedToParse},
	} {
		name, hosts, err := ParseConnString(c.in)
		if mongoerr.CodeOf(err) != c.code || name != c.name || len(hosts) != len(c.hosts) {
			t.Fatalf("%q: %q %v %v", c.in, name, hosts, err)
		}
		for i := range hosts {
			if hosts[i] != c.hosts[i] {
				t.Fatalf("%q: hosts %v, want %v", c.in, hosts, c.hosts)
			}
		}
	}
}

// TestErr: an ok: 0 reply keeps its fields and its code; ok: 1 is nil.
func TestErr(t *testing.T) {
	if Err(cmd(t, bson.D{{Key: "ok", Value: 1.0}})) != nil {
		t.Fatal("ok: 1 is an error")
	}
	bad := cmd(t, bson.D{{Key: "ok", Value: 0.0}, {Key: "errmsg", Value: "stale"}, {Key: "code", Value: int32(mongoerr.StaleConfig)},
		{Key: "errInfo", Value: bson.D{{Key: "x", Value: 1}}}})
	err := Err(bad)
	e, ok := mongoerr.As(err)
	if !ok || e.Code != mongoerr.StaleConfig || len(e.Extra) != 1 || e.Extra[0].Name != "errInfo" {
		t.Fatalf("Err: %#v", err)
	}
}

func TestRetryable(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{mongoerr.New(mongoerr.NotWritablePrimary, "x"), true},
		{mongoerr.New(mongoerr.InterruptedDueToReplStateChange, "x"), true},
		{Err(cmd(t, bson.D{{Key: "ok", Value: 0.0}, {Key: "code", Value: int32(mongoerr.PrimarySteppedDown)}})), true},
		{&NetError{Host: "h:1", Op: "connecting", Err: errors.New("refused")}, true},
		{mongoerr.New(mongoerr.StaleConfig, "x"), false},
		{mongoerr.New(mongoerr.IllegalOperation, "no migration"), false},
		{errors.New("other"), false},
	} {
		if got := Retryable(tc.err); got != tc.want {
			t.Errorf("Retryable(%v) = %v", tc.err, got)
		}
	}
}

// TestCancelledRoundTripEnds: a member that takes a command and never
// answers holds a round trip only as long as its context lives
// ("Cancelled round trips end"): cancelled, at its deadline, or at the
// client's Timeout; the error wraps the context's, and the connection is
// closed, not pooled.
func TestCancelledRoundTripEnds(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	closed := make(chan struct{}, 8) // one per connection the client closed
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go func() { // read whatever comes, answer nothing
				buf := make([]byte, 4096)
				for {
					if _, err := nc.Read(buf); err != nil {
						nc.Close()
						closed <- struct{}{}
						return
					}
				}
			}()
		}
	}()
	ping := cmd(t, bson.D{{Key: "ping", Value: 1}, {Key: "$db", Value: "admin"}})
	for _, tc := range []struct {
		name    string
		timeout time.Duration // the client's Options.Timeout
		ctx     func() (context.Context, context.CancelFunc)
		want    error
	}{
		{"cancelled", 0, func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(context.Background())
			time.AfterFunc(100*time.Millisecond, cancel)
			return ctx, cancel
		}, context.Canceled},
		{"deadline", 0, func() (context.Context, context.CancelFunc) {
			return context.WithTimeout(context.Background(), 100*time.Millisecond)
		}, context.DeadlineExceeded},
		{"client timeout", 100 * time.Millisecond, func() (context.Context, context.CancelFunc) {
			return context.WithCancel(context.Background())
		}, context.DeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := New(Options{Timeout: tc.timeout})
			defer c.Close()
			ctx, cancel := tc.ctx()
			defer cancel()
			done := make(chan error, 1)
			go func() {
				_, err := c.Run(ctx, ln.Addr().String(), ping)
				done <- err
			}()
			select {
			case err := <-done:
				if !errors.Is(err, tc.want) {
					t.Fatalf("Run: %v, want an error wrapping %v", err, tc.want)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("Run still waiting 30s after its context ended")
			}
			if n := len(c.Host(ln.Addr().String()).idle); n != 0 {
				t.Fatalf("%d connections pooled after an ended round trip", n)
			}
			select {
			case <-closed:
			case <-time.After(30 * time.Second):
				t.Fatal("the connection of an ended round trip was not closed")
			}
		})
	}
}
