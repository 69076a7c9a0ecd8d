package server_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/wire"
)

// The live-server fuzzers check "The server outlives its clients" with
// real driver traffic: the OP_MSG (and legacy OP_QUERY handshake) requests
// the official Go driver sends for hello, insert, find, getMore, aggregate,
// update and delete are captured through a loopback proxy, mutated (bytes,
// and the structure: header lengths, sections, BSON elements and their
// types), and sent over TCP to an in-process server. Every reply must be a
// well-formed OP_MSG (an OP_REPLY to an OP_QUERY) with a BSON body holding
// ok, or the server closes the connection, as MongoDB does on a message it
// cannot frame; no connection may panic, and a separate connection must
// keep answering ping.
//
// TestLiveServerMutations runs -livefuzz.n seeded mutants (make test: 2,000;
// make fuzz: LIVEFUZZ_N) and reports the heap and RSS before and after;
// FuzzLiveServer gives the same check to go's coverage-guided fuzzer.

var liveFuzzN = flag.Int("livefuzz.n", 2000, "mutated messages TestLiveServerMutations sends")

// panicCounter is a slog handler that counts the server's recovered panics.
type panicCounter struct {
	slog.Handler
	n *atomic.Int64
}

func (h panicCounter) Handle(ctx context.Context, r slog.Record) error {
	if r.Level >= slog.LevelError && strings.Contains(r.Message, "panicked") {
		h.n.Add(1)
		fmt.Fprintf(os.Stderr, "server: %s\n", r.Message)
		r.Attrs(func(a slog.Attr) bool { fmt.Fprintf(os.Stderr, "  %s: %v\n", a.Key, a.Value); return true })
	}
	return nil
}
func (h panicCounter) Enabled(context.Context, slog.Level) bool { return true }
func (h panicCounter) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h panicCounter) WithGroup(string) slog.Handler            { return h }

// fuzzTarget is a server under fuzzing, with its panic count and a
// connection kept open for pings.
type fuzzTarget struct {
	*testServer
	panics *atomic.Int64
}

func startFuzzTarget(t testing.TB) *fuzzTarget {
	n := &atomic.Int64{}
	srv, addr := startRawServer(t, slog.New(panicCounter{Handler: slog.DiscardHandler, n: n}))
	return &fuzzTarget{testServer: &testServer{addr: addr, env: srv.env}, panics: n}
}

// captureDriverTraffic runs a short driver session through a recording
// proxy in front of s and returns every request message, in order.
func captureDriverTraffic(t testing.TB, s *testServer) [][]byte {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var msgs [][]byte
	var wg sync.WaitGroup
	go func() {
		for {
			cc, err := ln.Accept()
			if err != nil {
				return
			}
			sc, err := net.Dial("tcp", s.addr)
			if err != nil {
				_ = cc.Close()
				continue
			}
			wg.Go(func() { _, _ = io.Copy(cc, sc); _ = cc.Close() })
			wg.Go(func() {
				var buf []byte
				tmp := make([]byte, 32<<10)
				for {
					n, err := cc.Read(tmp)
					if n > 0 {
						_, _ = sc.Write(tmp[:n])
						buf = append(buf, tmp[:n]...)
						for len(buf) >= 4 {
							l := int(binary.LittleEndian.Uint32(buf))
							if l < 16 || len(buf) < l {
								break
							}
							mu.Lock()
							msgs = append(msgs, append([]byte(nil), buf[:l]...))
							mu.Unlock()
							buf = buf[l:]
						}
					}
					if err != nil {
						_ = sc.Close()
						return
					}
				}
			})
		}
	}()
	ts := &testServer{addr: ln.Addr().String()}
	c := ts.client(t, options.Client().SetDirect(true))
	ctx := context.Background()
	coll := c.Database("fz").Collection("c")
	docs := make([]any, 7)
	for i := range docs {
		docs[i] = bson.D{{Key: "_id", Value: i}, {Key: "a", Value: bson.A{i, "x"}}, {Key: "s", Value: strings.Repeat("y", i)}}
	}
	steps := []func() error{
		func() error { _, err := coll.InsertMany(ctx, docs); return err },
		func() error {
			cur, err := coll.Find(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$gte", Value: 1}}}}, options.Find().SetBatchSize(2).SetSort(bson.D{{Key: "_id", Value: -1}}))
			if err != nil {
				return err
			}
			return cur.All(ctx, &[]bson.Raw{})
		},
		func() error {
			cur, err := coll.Aggregate(ctx, bson.A{bson.D{{Key: "$match", Value: bson.D{{Key: "a", Value: "x"}}}}, bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: nil}, {Key: "n", Value: bson.D{{Key: "$sum", Value: 1}}}}}}})
			if err != nil {
				return err
			}
			return cur.All(ctx, &[]bson.Raw{})
		},
		func() error {
			_, err := coll.UpdateMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$lt", Value: 3}}}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}, {Key: "$push", Value: bson.D{{Key: "a", Value: 9}}}})
			return err
		},
		func() error { _, err := coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: 6}}); return err },
		func() error { return c.Ping(ctx, nil) },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			t.Fatalf("capturing driver traffic: %v", err)
		}
	}
	_ = c.Disconnect(ctx)
	_ = ln.Close()
	time.Sleep(50 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	// Awaitable hellos wait (maxAwaitTimeMS) for a topology change that
	// never comes on a standalone, as in mongod: not seeds.
	var out [][]byte
	for _, m := range msgs {
		if !bytes.Contains(m, []byte("maxAwaitTimeMS")) {
			out = append(out, m)
		}
	}
	if len(out) < 6 {
		t.Fatalf("captured only %d driver requests", len(out))
	}
	return out
}

// sendAndCheck sends stream (one or more messages) on a new connection,
// half-closes it, and checks everything the server sends back until it
// closes: well-formed replies only, nothing left over. It returns how many
// replies said ok: 1 and how many ok: 0.
func (f *fuzzTarget) sendAndCheck(t testing.TB, stream []byte) (oks, errs int) {
	t.Helper()
	nc, err := net.DialTimeout("tcp", f.addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(20 * time.Second))
	go func() {
		_, _ = nc.Write(stream)
		_ = nc.(*net.TCPConn).CloseWrite()
	}()
	r := wire.NewReader(nc, 0)
	for {
		m, err := r.ReadMessage()
		if errors.Is(err, io.EOF) || errors.Is(err, net.ErrClosed) || isReset(err) {
			return oks, errs
		}
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() && bytes.Contains(stream, []byte("maxAwaitTimeMS")) {
				return oks, errs // an awaitable hello may wait as long as it asked
			}
			t.Fatalf("reading the server's reply to %x: %v", head(stream), err)
		}
		var body bsoncore.Document
		switch m.Header.OpCode {
		case wire.OpMsg:
			body = m.Msg.Body
		case wire.OpReply:
			if len(m.Reply.Documents) != 1 {
				t.Fatalf("OP_REPLY with %d documents to %x", len(m.Reply.Documents), head(stream))
			}
			body = m.Reply.Documents[0]
		default:
			t.Fatalf("the server answered with opcode %v to %x", m.Header.OpCode, head(stream))
		}
		if err := body.Validate(); err != nil {
			t.Fatalf("reply body is not BSON (%v) to %x", err, head(stream))
		}
		if _, err := body.LookupErr("ok"); err != nil {
			t.Fatalf("reply without ok: %s to %x", truncate(body), head(stream))
		}
		if ok, isNum := body.Lookup("ok").AsFloat64OK(); isNum && ok == 0 {
			errs++
			if _, err := body.LookupErr("codeName"); err != nil {
				t.Fatalf("error reply without codeName: %s", truncate(body))
			}
		} else {
			oks++
		}
	}
}

func isReset(err error) bool {
	return err != nil && (strings.Contains(err.Error(), "connection reset") || strings.Contains(err.Error(), "broken pipe"))
}

func head(b []byte) []byte { return b[:min(len(b), 96)] }

// checkAlive fails if the server panicked or does not answer ping.
func (f *fuzzTarget) checkAlive(t testing.TB) {
	t.Helper()
	if n := f.panics.Load(); n > 0 {
		t.Fatalf("the server recovered %d panics", n)
	}
	nc, err := net.DialTimeout("tcp", f.addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial after fuzzing: %v", err)
	}
	defer nc.Close()
	_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
	body, _ := bson.Marshal(bson.D{{Key: "ping", Value: 1}, {Key: "$db", Value: "admin"}})
	if _, err := nc.Write(wire.AppendMsg(nil, 1, 0, 0, body)); err != nil {
		t.Fatalf("ping after fuzzing: %v", err)
	}
	m, err := wire.NewReader(nc, 0).ReadMessage()
	if err != nil || m.Msg.Body.Lookup("ok").Double() != 1 {
		t.Fatalf("ping after fuzzing: %v", err)
	}
}

// mutator changes captured messages: bytes anywhere, or their structure.
type mutator struct{ rng *rand.Rand }

// interesting values for lengths, counts and numbers.
var interesting32 = []uint32{0, 1, 4, 5, 15, 16, 17, 0x7f, 0x80, 0xff, 0x7fff, 0xffff, 0x7fffffff, 0x80000000, 0xfffffffe, 0xffffffff, 48_000_000, 16 << 20}

func (m *mutator) mutate(msgs [][]byte) []byte {
	// One to three messages of the capture, in order or not.
	k := 1 + m.rng.IntN(3)
	var out []byte
	for range k {
		msg := append([]byte(nil), msgs[m.rng.IntN(len(msgs))]...)
		for range 1 + m.rng.IntN(3) {
			msg = m.mutateOne(msg)
		}
		out = append(out, msg...)
	}
	return out
}

func (m *mutator) mutateOne(msg []byte) []byte {
	if len(msg) < 4 {
		return msg // truncated already: nothing left to mutate
	}
	fixLen := true
	switch m.rng.IntN(9) {
	case 0: // flip bytes (header included)
		for range 1 + m.rng.IntN(4) {
			msg[m.rng.IntN(len(msg))] ^= byte(1 << m.rng.IntN(8))
		}
		fixLen = m.rng.IntN(2) == 0
	case 1: // an interesting 32-bit value at a random offset
		if len(msg) >= 4 {
			off := m.rng.IntN(len(msg) - 3)
			binary.LittleEndian.PutUint32(msg[off:], interesting32[m.rng.IntN(len(interesting32))])
		}
		fixLen = m.rng.IntN(2) == 0
	case 2: // truncate
		msg = msg[:m.rng.IntN(len(msg))]
		fixLen = m.rng.IntN(2) == 0
	case 3: // the flags word: checksum, moreToCome, exhaustAllowed, unknown bits
		if len(msg) >= 20 {
			binary.LittleEndian.PutUint32(msg[16:], []uint32{1, 2, 1 << 16, 3, 1 << 5, 0xffffffff}[m.rng.IntN(6)])
		}
	case 4: // a BSON type byte inside the body
		if i := m.elementAt(msg); i > 0 {
			msg[i] = []byte{0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x07, 0x08, 0x0a, 0x0b, 0x10, 0x11, 0x12, 0x13, 0x7f, 0xff, 0x06, 0x0c, 0x0d, 0x0e, 0x0f}[m.rng.IntN(21)]
		}
	case 5: // duplicate a span (repeated fields, sections, documents)
		a := m.rng.IntN(len(msg))
		b := a + m.rng.IntN(min(64, len(msg)-a)+1)
		msg = append(msg[:b:b], append(append([]byte(nil), msg[a:b]...), msg[b:]...)...)
	case 6: // delete a span
		a := m.rng.IntN(len(msg))
		b := a + m.rng.IntN(min(64, len(msg)-a)+1)
		msg = append(msg[:a:a], msg[b:]...)
	case 7: // a second, random section kind after the body
		msg = append(msg, byte(m.rng.IntN(3)))
		msg = binary.LittleEndian.AppendUint32(msg, interesting32[m.rng.IntN(len(interesting32))])
		msg = append(msg, "documents\x00"...)
	case 8: // the opcode
		if len(msg) >= 16 {
			binary.LittleEndian.PutUint32(msg[12:], []uint32{1, 2004, 2012, 2013, 2010, 0, 9999}[m.rng.IntN(7)])
		}
	}
	if fixLen && len(msg) >= 4 {
		binary.LittleEndian.PutUint32(msg, uint32(len(msg)))
	}
	return msg
}

// elementAt finds the offset of some element's type byte in an OP_MSG's
// body (after header, flags and section kind), or -1.
func (m *mutator) elementAt(msg []byte) int {
	const bodyStart = 16 + 4 + 1
	if len(msg) < bodyStart+5 {
		return -1
	}
	body := bsoncore.Document(msg[bodyStart:])
	elems, err := body.Elements()
	if err != nil || len(elems) == 0 {
		return -1
	}
	pick := m.rng.IntN(len(elems))
	off := bodyStart + 4
	for _, e := range elems[:pick] {
		off += len(e)
	}
	return off
}

// memFigures are the process's heap after a collection and its resident
// set, in MiB.
func memFigures() (heap, rss float64) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	heap = float64(ms.HeapInuse) / (1 << 20)
	if b, err := os.ReadFile("/proc/self/statm"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 1 {
			pages, _ := strconv.Atoi(f[1])
			rss = float64(pages*os.Getpagesize()) / (1 << 20)
		}
	}
	return heap, rss
}

// liveFuzzHeapGrowthMiB bounds how much the live heap may grow over a run:
// every mutant's buffers must be let go once its connection closes.
const liveFuzzHeapGrowthMiB = 64

func TestLiveServerMutations(t *testing.T) {
	f := startFuzzTarget(t)
	msgs := captureDriverTraffic(t, f.testServer)
	seed := rand.Uint64()
	t.Logf("seed %d, %d captured driver requests, %d mutants", seed, len(msgs), *liveFuzzN)
	mu := &mutator{rng: rand.New(rand.NewPCG(seed, 2))}
	heap0, rss0 := memFigures()
	peakRSS := rss0
	start := time.Now()
	// The captured requests, unmutated, must each be answered (a getMore
	// of a cursor long gone with an error): the harness reaches the server.
	var oks, errs int
	for _, m := range msgs {
		o, e := f.sendAndCheck(t, m)
		oks, errs = oks+o, errs+e
	}
	if oks+errs != len(msgs) || oks < len(msgs)/2 {
		t.Fatalf("of %d captured requests replayed, %d were answered ok and %d with an error", len(msgs), oks, errs)
	}
	oks, errs = 0, 0
	for i := range *liveFuzzN {
		stream := mu.mutate(msgs)
		o, e := f.sendAndCheck(t, stream)
		oks, errs = oks+o, errs+e
		if i%100 == 99 {
			f.checkAlive(t)
			if _, rss := memFigures(); rss > peakRSS {
				peakRSS = rss
			}
		}
	}
	f.checkAlive(t)
	heap1, rss1 := memFigures()
	t.Logf("%d mutated streams in %s: %d replies ok, %d error replies, the rest closed; 0 panics, ping answered; heap in use %.1f → %.1f MiB, RSS %.1f → %.1f MiB (peak %.1f); %d cursors left open (they live until cursorTimeoutMillis, as in mongod)",
		*liveFuzzN, time.Since(start).Round(time.Millisecond), oks, errs, heap0, heap1, rss0, rss1, peakRSS, f.env.Cursors.Len())
	if heap1-heap0 > liveFuzzHeapGrowthMiB {
		t.Fatalf("heap in use grew by %.1f MiB over the run (bound %d MiB)", heap1-heap0, liveFuzzHeapGrowthMiB)
	}
}

// FuzzLiveServer is the live-server check under go's fuzzer. frame true
// treats data as an OP_MSG's flags and sections and frames it with a correct
// header, so mutations reach the section and BSON parsers; false sends data
// as it is.
func FuzzLiveServer(f *testing.F) {
	target := startFuzzTarget(f)
	for _, m := range captureDriverTraffic(f, target.testServer) {
		f.Add(m, false)
		f.Add(m[16:], true)
	}
	f.Fuzz(func(t *testing.T, data []byte, frame bool) {
		if frame {
			msg := binary.LittleEndian.AppendUint32(nil, uint32(16+len(data)))
			msg = binary.LittleEndian.AppendUint32(msg, 1)
			msg = binary.LittleEndian.AppendUint32(msg, 0)
			msg = binary.LittleEndian.AppendUint32(msg, uint32(wire.OpMsg))
			data = append(msg, data...)
		}
		target.sendAndCheck(t, data)
		target.checkAlive(t)
	})
}
