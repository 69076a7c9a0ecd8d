package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"net"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/wire"
)

// scriptedServer answers each request that wants a reply with the next
// plan's replies (OP_MSG with moreToCome on all but the last, or one
// OP_REPLY for an OP_QUERY), recording every message it received.
type scriptedServer struct {
	ln       net.Listener
	received chan []byte
}

func startScriptedServer(t *testing.T, plans []int) *scriptedServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &scriptedServer{ln: ln, received: make(chan []byte, 64)}
	t.Cleanup(func() { _ = ln.Close() })
	go func() {
		nc, err := ln.Accept()
		if err != nil {
			return
		}
		defer nc.Close()
		r := bufio.NewReader(nc)
		id := int32(1000)
		next := 0
		for {
			msg, err := readFrame(r, nil)
			if err != nil {
				return
			}
			s.received <- msg
			if moreToCome(msg) {
				continue
			}
			answer := int32(binary.LittleEndian.Uint32(msg[offRequestID:]))
			n := 1
			if next < len(plans) {
				n = plans[next]
			}
			next++
			for i := range n {
				id++
				var out []byte
				if wire.OpCode(binary.LittleEndian.Uint32(msg[offOpCode:])) == wire.OpQuery {
					out = wire.AppendReply(nil, id, answer, &wire.Reply{Documents: []bsoncore.Document{replyDoc(i)}})
				} else {
					var fl wire.MsgFlags
					if i < n-1 {
						fl = wire.FlagMoreToCome
					}
					out = wire.AppendMsg(nil, id, answer, fl, replyDoc(i))
				}
				if _, err := nc.Write(out); err != nil {
					return
				}
				answer = id
			}
		}
	}()
	return s
}

func replyDoc(i int) bsoncore.Document {
	return bsoncore.NewDocumentBuilder().AppendInt32("n", int32(i)).AppendDouble("ok", 1).Build()
}

func cmdDoc(name string) bsoncore.Document {
	return bsoncore.NewDocumentBuilder().AppendInt32(name, 1).AppendString("$db", "admin").Build()
}

// sameButIDs reports whether a and b are the same message but bytes 4–11.
func sameButIDs(a, b []byte) bool {
	return len(a) == len(b) && len(a) >= hdrLen && bytes.Equal(a[:4], b[:4]) && bytes.Equal(a[12:], b[12:])
}

// TestProxyFloorForwards checks invariant "The proxy changes only ids":
// requests reach the server and replies the client byte for byte but
// their requestID and responseTo; each reply answers the client's
// request; exhaust replies answer the reply before them; a moreToCome
// request gets no reply.
func TestProxyFloorForwards(t *testing.T) {
	type request struct {
		msg     []byte
		replies int // what the client must receive
		opQuery bool
	}
	cases := []struct {
		name     string
		plans    []int // replies the server sends to each request that wants one
		requests []request
	}{
		{"one request, one reply", []int{1}, []request{
			{msg: wire.AppendMsg(nil, 7, 0, 0, cmdDoc("ping")), replies: 1}}},
		{"requests in turn", []int{1, 1, 1}, []request{
			{msg: wire.AppendMsg(nil, 7, 0, 0, cmdDoc("ping")), replies: 1},
			{msg: wire.AppendMsg(nil, 8, 0, 0, cmdDoc("find")), replies: 1},
			{msg: wire.AppendMsg(nil, 70, 0, 0, cmdDoc("insert")), replies: 1}}},
		{"moreToCome request, then one", []int{1}, []request{
			{msg: wire.AppendMsg(nil, 9, 0, wire.FlagMoreToCome, cmdDoc("insert")), replies: 0},
			{msg: wire.AppendMsg(nil, 10, 0, 0, cmdDoc("ping")), replies: 1}}},
		{"exhaust: three replies to one request", []int{3}, []request{
			{msg: wire.AppendMsg(nil, 11, 0, wire.FlagExhaustAllowed, cmdDoc("hello")), replies: 3}}},
		{"OP_QUERY handshake, then OP_MSG", []int{1, 1}, []request{
			{msg: wire.AppendQuery(nil, 12, &wire.Query{FullCollectionName: "admin.$cmd", NumberToReturn: -1, Query: cmdDoc("isMaster")}), replies: 1, opQuery: true},
			{msg: wire.AppendMsg(nil, 13, 0, 0, cmdDoc("ping")), replies: 1}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := startScriptedServer(t, tc.plans)
			p, err := startProxyFloor("127.0.0.1:0", srv.ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer p.close()
			nc, err := net.Dial("tcp", p.addr())
			if err != nil {
				t.Fatal(err)
			}
			defer nc.Close()
			_ = nc.SetDeadline(time.Now().Add(10 * time.Second))
			r := bufio.NewReader(nc)
			seenIDs := map[int32]bool{}
			for i, rq := range tc.requests {
				if _, err := nc.Write(rq.msg); err != nil {
					t.Fatal(err)
				}
				select {
				case got := <-srv.received:
					if !sameButIDs(got, rq.msg) {
						t.Fatalf("request %d reached the server as %x, sent %x", i, got, rq.msg)
					}
					if id := int32(binary.LittleEndian.Uint32(got[offRequestID:])); id == 0 || seenIDs[id] {
						t.Errorf("request %d reached the server with requestID %d (zero or used before)", i, id)
					} else {
						seenIDs[id] = true
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("request %d never reached the server", i)
				}
				answer := int32(binary.LittleEndian.Uint32(rq.msg[offRequestID:]))
				for j := range rq.replies {
					got, err := readFrame(r, nil)
					if err != nil {
						t.Fatalf("request %d reply %d: %v", i, j, err)
					}
					var want []byte
					if rq.opQuery {
						want = wire.AppendReply(nil, 0, 0, &wire.Reply{Documents: []bsoncore.Document{replyDoc(j)}})
					} else {
						var fl wire.MsgFlags
						if j < rq.replies-1 {
							fl = wire.FlagMoreToCome
						}
						want = wire.AppendMsg(nil, 0, 0, fl, replyDoc(j))
					}
					if !sameButIDs(got, want) {
						t.Fatalf("request %d reply %d is %x, want %x but ids", i, j, got, want)
					}
					if to := int32(binary.LittleEndian.Uint32(got[offResponseTo:])); to != answer {
						t.Errorf("request %d reply %d answers %d, want %d", i, j, to, answer)
					}
					answer = int32(binary.LittleEndian.Uint32(got[offRequestID:]))
				}
			}
			// Nothing more arrives: a moreToCome request had no reply.
			_ = nc.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
			if extra, err := readFrame(r, nil); err == nil {
				t.Errorf("an unexpected message after the last reply: %x", extra)
			}
		})
	}
}

// TestProxyFloorRefusesOversizedFrames: a length past the wire limit ends
// the connection instead of allocating it.
func TestProxyFloorRefusesOversizedFrames(t *testing.T) {
	for _, n := range []uint32{3, 15, 48_000_001, 1 << 31} {
		var b [hdrLen]byte
		binary.LittleEndian.PutUint32(b[:], n)
		if _, err := readFrame(bufio.NewReader(bytes.NewReader(b[:])), nil); err != errBadFrame {
			t.Errorf("length %d: err %v, want errBadFrame", n, err)
		}
	}
}

// TestProxyFloorEndToEnd runs the harness with --floor proxy: the driver
// reaches the embedded server through the proxy child (its hello, reads
// and updates), the proxy target's records are its own, and the report
// compares it with cairn.
func TestProxyFloorEndToEnd(t *testing.T) {
	quickWindows(t)
	ws, _ := ParseWorkloads([]string{"a"})
	rep, err := Run(context.Background(), Config{
		Workloads: ws, Records: 200, Ops: 400, Threads: 2, Batch: 50, Runs: 1, Seed: 3,
		Floors: []string{FloorProxy}, Self: testSelf, Version: "test",
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Targets) != 2 || rep.Targets[1].Name != TargetFloorProxy {
		t.Fatalf("targets %+v, want cairn and floor-proxy", rep.Targets)
	}
	if !strings.Contains(rep.Targets[1].ServerCPU, "together") {
		t.Errorf("floor-proxy's CPU from %q: want the proxy's and the server's", rep.Targets[1].ServerCPU)
	}
	for _, tr := range rep.Workloads[0].Targets {
		if tr.Failed != "" || len(tr.Runs) != 1 {
			t.Fatalf("workload a on %s: failed %q, %d runs", tr.Target, tr.Failed, len(tr.Runs))
		}
		checkRun(t, "workload a on "+tr.Target, "a", tr.Runs[0])
	}
	found := false
	for _, r := range rep.Workloads[0].Ratios {
		if r.Target == TargetFloorProxy && r.Against == TargetCairn && r.Throughput > 0 {
			found = true
		}
	}
	if !found {
		t.Errorf("no floor-proxy vs cairn ratio: %+v", rep.Workloads[0].Ratios)
	}
}
