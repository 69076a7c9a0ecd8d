package server_test

import (
	"encoding/binary"
	"errors"
	"flag"
	"io"
	"math/rand/v2"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xdg-go/scram"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/auth"
	"github.com/cairndb/cairn/internal/wire"
)

// The pre-authentication soak: a server with --auth and a user takes a
// stream of hostile messages on unauthenticated connections, each
// connection first opening a real SCRAM conversation (with the wrong
// password), so the messages arrive before and in the middle of SASL. The
// messages are well-framed OP_MSGs (framing is the live fuzzers' job)
// whose bodies are handshake, SASL and ordinary commands mutated at random
// (bytes flipped, values replaced, elements truncated or spliced, lengths
// broken). What must hold for every one: a well-formed reply with ok (or
// the connection closed); no command outside the handshake's succeeds;
// every connection ends unauthenticated (connectionStatus); no panic; the
// server answers ping afterwards, its clock was not advanced by any
// client's $clusterTime (the server runs as a member: cluster times on,
// so signatures are checked), and its heap does not grow by more than a
// bound. make test sends -preauth.n (20,000); `make soak-preauth` sends
// 1,000,000 (issue 22's bound). The seed is printed; -preauth.seed replays.

var (
	preAuthN    = flag.Int("preauth.n", 20_000, "hostile messages TestPreAuthSoak sends")
	preAuthSeed = flag.Uint64("preauth.seed", 0, "TestPreAuthSoak's seed (0: random)")
)

// preAuthOK are the commands that may answer ok before authentication
// (as commands' FuzzPreAuth).
var preAuthOK = map[string]bool{
	"hello": true, "isMaster": true, "ismaster": true, "buildInfo": true, "buildinfo": true, "ping": true,
	"saslStart": true, "saslContinue": true, "logout": true, "connectionStatus": true,
}

func preAuthSeeds(t testing.TB) [][]byte {
	first := func(mech string) string {
		var c *scram.Client
		if mech == auth.SCRAMSHA1 {
			c, _ = scram.SHA1.NewClient("ann", "not the password", "")
		} else {
			c, _ = scram.SHA256.NewClient("ann", "not the password", "")
		}
		m, _ := c.NewConversation().Step("")
		return m
	}
	seeds := []bson.D{
		{{Key: "hello", Value: 1}, {Key: "speculativeAuthenticate", Value: bson.D{{Key: "saslStart", Value: 1}, {Key: "mechanism", Value: "SCRAM-SHA-256"}, {Key: "db", Value: "admin"}, {Key: "payload", Value: bson.Binary{Data: []byte(first(auth.SCRAMSHA256))}}}}, {Key: "$db", Value: "admin"}},
		{{Key: "hello", Value: 1}, {Key: "saslSupportedMechs", Value: "admin.ann"}, {Key: "client", Value: bson.D{{Key: "driver", Value: bson.D{{Key: "name", Value: "x"}}}}}, {Key: "$db", Value: "admin"}},
		{{Key: "isMaster", Value: 1}, {Key: "$db", Value: "admin"}},
		{{Key: "saslStart", Value: 1}, {Key: "mechanism", Value: "SCRAM-SHA-1"}, {Key: "payload", Value: bson.Binary{Data: []byte(first(auth.SCRAMSHA1))}}, {Key: "$db", Value: "admin"}},
		{{Key: "saslStart", Value: 1}, {Key: "mechanism", Value: "SCRAM-SHA-256"}, {Key: "payload", Value: bson.Binary{Data: []byte(first(auth.SCRAMSHA256))}}, {Key: "options", Value: bson.D{{Key: "skipEmptyExchange", Value: true}}}, {Key: "$db", Value: "admin"}},
		{{Key: "saslContinue", Value: 1}, {Key: "conversationId", Value: 1}, {Key: "payload", Value: bson.Binary{Data: []byte("c=biws,r=abcdefghijklmnop,p=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=")}}, {Key: "$db", Value: "admin"}},
		{{Key: "saslContinue", Value: 1}, {Key: "conversationId", Value: 2}, {Key: "payload", Value: ""}, {Key: "$db", Value: "admin"}},
		{{Key: "authenticate", Value: 1}, {Key: "mechanism", Value: "MONGODB-X509"}, {Key: "user", Value: "CN=x"}, {Key: "$db", Value: "$external"}},
		{{Key: "logout", Value: 1}, {Key: "$db", Value: "admin"}},
		{{Key: "connectionStatus", Value: 1}, {Key: "showPrivileges", Value: true}, {Key: "$db", Value: "admin"}},
		{{Key: "buildInfo", Value: 1}, {Key: "$db", Value: "admin"}},
		{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "a", Value: bson.D{{Key: "$gt", Value: 1}}}}}, {Key: "$db", Value: "test"}},
		{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 1}}}}, {Key: "$db", Value: "test"}},
		{{Key: "createUser", Value: "evil"}, {Key: "pwd", Value: "x"}, {Key: "roles", Value: bson.A{"root"}}, {Key: "$db", Value: "admin"}},
		{{Key: "usersInfo", Value: 1}, {Key: "$db", Value: "admin"}},
		{{Key: "aggregate", Value: 1}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$currentOp", Value: bson.D{}}}}}, {Key: "cursor", Value: bson.D{}}, {Key: "$db", Value: "admin"}},
		{{Key: "ping", Value: 1}, {Key: "$clusterTime", Value: bson.D{{Key: "clusterTime", Value: bson.Timestamp{T: 1 << 31, I: 1}}}}, {Key: "$db", Value: "admin"}},
		{{Key: "hello", Value: 1}, {Key: "$clusterTime", Value: bson.D{{Key: "clusterTime", Value: bson.Timestamp{T: uint32(time.Now().Unix()) + 3600, I: 7}}, {Key: "signature", Value: bson.D{{Key: "hash", Value: bson.Binary{Data: make([]byte, 20)}}, {Key: "keyId", Value: int64(7)}}}}}, {Key: "$db", Value: "admin"}},
		{{Key: "shutdown", Value: 1}, {Key: "force", Value: true}, {Key: "$db", Value: "admin"}},
	}
	out := make([][]byte, len(seeds))
	for i, s := range seeds {
		b, err := bson.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = b
	}
	return out
}

// mutateBody changes a command body: a few bytes flipped, an interesting
// number written somewhere, a value's type byte changed, a cut, a splice
// of another seed, or the length prefix broken.
func mutateBody(rng *rand.Rand, seeds [][]byte) []byte {
	b := append([]byte(nil), seeds[rng.IntN(len(seeds))]...)
	for range 1 + rng.IntN(3) {
		if len(b) < 5 {
			break
		}
		switch rng.IntN(7) {
		case 0:
			for range 1 + rng.IntN(4) {
				b[4+rng.IntN(len(b)-4)] ^= byte(1 << rng.IntN(8))
			}
		case 1:
			if len(b) > 8 {
				off := 4 + rng.IntN(len(b)-8)
				binary.LittleEndian.PutUint32(b[off:], interesting32[rng.IntN(len(interesting32))])
			}
		case 2: // a type byte: the first element's, or any byte
			off := 4
			if rng.IntN(2) == 0 {
				off = 4 + rng.IntN(len(b)-4)
			}
			b[off] = []byte{0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x07, 0x08, 0x0a, 0x0b, 0x10, 0x11, 0x12, 0x13, 0x7f, 0xff, 0x06, 0x0c, 0x0d, 0x0e, 0x0f}[rng.IntN(21)]
		case 3: // cut, keeping the length right or not
			b = b[:4+rng.IntN(len(b)-4)]
			if rng.IntN(2) == 0 {
				b = append(b, 0)
			}
		case 4: // splice another seed's tail
			o := seeds[rng.IntN(len(seeds))]
			at := 4 + rng.IntN(len(b)-4)
			b = append(b[:at], o[4+rng.IntN(len(o)-4):]...)
		case 5: // repeat a slice (deep or long input)
			at := 4 + rng.IntN(len(b)-4)
			n := min(len(b)-at, 1+rng.IntN(64))
			chunk := append([]byte(nil), b[at:at+n]...)
			for range 1 + rng.IntN(50) {
				b = append(b[:at:at], append(chunk, b[at:]...)...)
			}
		case 6:
			binary.LittleEndian.PutUint32(b, interesting32[rng.IntN(len(interesting32))])
			continue
		}
		if rng.IntN(4) != 0 {
			binary.LittleEndian.PutUint32(b, uint32(len(b)))
		}
	}
	return b
}

// preAuthConn is one unauthenticated connection under the soak.
type preAuthConn struct {
	nc  net.Conn
	r   *wire.Reader
	req int32
}

// roundTrip sends body as an OP_MSG and returns the reply's body, nil
// with closed true when the server closed the connection.
func (c *preAuthConn) roundTrip(t testing.TB, body []byte) (reply bsoncore.Document, closed bool) {
	c.req++
	c.nc.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := c.nc.Write(wire.AppendMsg(nil, c.req, 0, 0, body)); err != nil {
		return nil, true
	}
	m, err := c.r.ReadMessage()
	if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || isReset(err) {
		return nil, true
	}
	if err != nil {
		t.Fatalf("reading the reply to %x: %v", head(body), err)
	}
	if m.Header.OpCode != wire.OpMsg || m.Msg.Body.Validate() != nil {
		t.Fatalf("malformed reply (opcode %v) to %x", m.Header.OpCode, head(body))
	}
	if _, err := m.Msg.Body.LookupErr("ok"); err != nil {
		t.Fatalf("reply without ok to %x: %s", head(body), truncate(m.Msg.Body))
	}
	return m.Msg.Body, false
}

func TestPreAuthSoak(t *testing.T) {
	seed := *preAuthSeed
	if seed == 0 {
		seed = rand.Uint64()
	}
	f := startFuzzTarget(t)
	f.env.Access.Enabled = true
	// As a replica set member: replies carry signed cluster times and a
	// client's $clusterTime is validated before it may advance the clock.
	f.env.SetClusterTimes(true)
	creds := map[string]auth.Credential{}
	for _, m := range []string{auth.SCRAMSHA1, auth.SCRAMSHA256} {
		c, err := auth.NewCredential(m, "ann", "secret")
		if err != nil {
			t.Fatal(err)
		}
		creds[m] = c
	}
	if err := f.env.Access.Users.Create(&auth.User{Name: "ann", DB: "admin", Credentials: creds, Roles: []auth.RoleName{{Role: "root", DB: "admin"}}}); err != nil {
		t.Fatal(err)
	}
	seeds := preAuthSeeds(t)
	const workers = 4
	t.Logf("seed %d (-preauth.seed=%d replays the streams; %d connections interleave), %d messages", seed, seed, workers, *preAuthN)
	heap0, rss0 := memFigures()
	start := time.Now()
	var sent, oks, closed atomic.Int64
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			per := *preAuthN / workers
			for int(sent.Load()) < *preAuthN && per > 0 {
				n := preAuthSession(t, f, rng, seeds, min(per, 200+rng.IntN(800)), &oks)
				per -= n.sent
				sent.Add(int64(n.sent))
				if n.closed {
					closed.Add(1)
				}
				if t.Failed() {
					return
				}
			}
		}()
	}
	wg.Wait()
	f.checkAlive(t)
	if now := f.env.Engine.Storage().Clock().Current(); now.T() > uint32(time.Now().Unix())+600 {
		t.Errorf("an unauthenticated client advanced the cluster time to %v", now)
	}
	heap1, rss1 := memFigures()
	elapsed := time.Since(start)
	t.Logf("%d hostile messages in %s (%.0f/s) on unauthenticated connections: %d answered ok (handshake commands only), %d connections closed by the server, 0 authenticated, 0 panics; heap %.1f → %.1f MiB, RSS %.1f → %.1f MiB",
		sent.Load(), elapsed.Round(time.Millisecond), float64(sent.Load())/elapsed.Seconds(), oks.Load(), closed.Load(), heap0, heap1, rss0, rss1)
	if heap1-heap0 > liveFuzzHeapGrowthMiB {
		t.Fatalf("heap in use grew by %.1f MiB (bound %d MiB)", heap1-heap0, liveFuzzHeapGrowthMiB)
	}
}

type sessionResult struct {
	sent   int
	closed bool
}

// preAuthSession opens a connection, starts a SCRAM conversation with the
// wrong password, sends up to n mutated messages, and checks the
// connection did not authenticate.
func preAuthSession(t testing.TB, f *fuzzTarget, rng *rand.Rand, seeds [][]byte, n int, oks *atomic.Int64) sessionResult {
	nc, err := net.DialTimeout("tcp", f.addr, 5*time.Second)
	if err != nil {
		t.Errorf("dial: %v", err)
		return sessionResult{}
	}
	defer nc.Close()
	c := &preAuthConn{nc: nc, r: wire.NewReader(nc, 0)}
	if reply, _ := c.roundTrip(t, seeds[4]); reply == nil || reply.Lookup("ok").AsFloat64() != 1 {
		t.Errorf("saslStart: %s", truncate(reply))
		return sessionResult{}
	}
	res := sessionResult{}
	for range n {
		body := mutateBody(rng, seeds)
		res.sent++
		reply, closed := c.roundTrip(t, body)
		if closed {
			res.closed = true
			return res
		}
		if ok, _ := reply.Lookup("ok").AsFloat64OK(); ok == 1 {
			oks.Add(1)
			name := ""
			if bsoncore.Document(body).Validate() == nil {
				if e, err := bsoncore.Document(body).IndexErr(0); err == nil {
					name = e.Key()
				}
			}
			if !preAuthOK[name] {
				t.Errorf("%q answered ok before authentication: %x → %s", name, head(body), truncate(reply))
				return res
			}
		}
	}
	status, _ := bson.Marshal(bson.D{{Key: "connectionStatus", Value: 1}, {Key: "$db", Value: "admin"}})
	reply, closed := c.roundTrip(t, status)
	if closed {
		return res
	}
	users, _ := reply.Lookup("authInfo", "authenticatedUsers").ArrayOK()
	if vals, _ := users.Values(); len(vals) != 0 {
		t.Errorf("the connection authenticated: %s", truncate(reply))
	}
	return res
}
