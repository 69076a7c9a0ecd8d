package router

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/hlc"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/servertest"
	"github.com/cairndb/cairn/internal/shard"
	"github.com/cairndb/cairn/internal/wire"
)

// fakeShard is a shard server reduced to the versioning contract: it
// answers hello as the primary of its set, and find with the one document
// {_id: <its name>} when the request's shardVersion is the one it wants,
// StaleConfig (13388, errInfo {ns, vReceived, vWanted, shardId})
// otherwise.
type fakeShard struct {
	name string
	addr string
	mu   sync.Mutex
	want shard.ShardVersion
	got  []shard.ShardVersion
	// inserts are the insert commands it took, each with its documents'
	// a values.
	inserts []fakeInsert
}

type fakeInsert struct {
	body bsoncore.Document
	as   []int32
}

func startFakeShard(t *testing.T, name string) *fakeShard {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	f := &fakeShard{name: name, addr: ln.Addr().String()}
	go func() {
		for {
			nc, err := ln.Accept()
			if err != nil {
				return
			}
			go f.serve(nc)
		}
	}()
	return f
}

func (f *fakeShard) serve(nc net.Conn) {
	defer nc.Close()
	rd, w := wireReader(nc), bufio.NewWriter(nc)
	for {
		msg, err := rd.ReadMessage()
		if err != nil {
			return
		}
		body := msg.Msg.Body
		var reply bsoncore.Document
		switch body.Index(0).Key() {
		case "hello":
			reply = okReply("isWritablePrimary", true, "setName", f.name)
		case "find", "insert":
			if body.Index(0).Key() == "insert" { // every one, refused or not
				ins := fakeInsert{body: append(bsoncore.Document(nil), body...)}
				for _, sq := range msg.Msg.Sequences {
					for _, d := range sq.Documents {
						ins.as = append(ins.as, d.Lookup("a").Int32())
					}
				}
				f.mu.Lock()
				f.inserts = append(f.inserts, ins)
				f.mu.Unlock()
			}
			v, err := shard.ParseShardVersion(body.Lookup("shardVersion"))
			f.mu.Lock()
			f.got = append(f.got, v)
			want := f.want
			f.mu.Unlock()
			ns := "db." + body.Index(0).Value().StringValue()
			if err != nil || !v.Equal(want) {
				reply = marshal(bson.D{{Key: "ok", Value: 0.0}, {Key: "errmsg", Value: "stale"}, {Key: "code", Value: int32(mongoerr.StaleConfig)},
					{Key: "codeName", Value: "StaleConfig"}, {Key: "errInfo", Value: bson.Raw(shard.StaleConfigInfo(ns, v, &want, f.name))}})
			} else if body.Index(0).Key() == "insert" {
				reply = okReply("n", int32(len(msg.Msg.Sequences[0].Documents)))
			} else {
				reply = marshal(bson.D{{Key: "cursor", Value: bson.D{{Key: "id", Value: int64(0)}, {Key: "ns", Value: ns},
					{Key: "firstBatch", Value: bson.A{bson.D{{Key: "_id", Value: f.name}}}}}}, {Key: "ok", Value: 1.0}})
			}
		default:
			reply = okReply()
		}
		frame := appendReplyMsg(msg.Header.RequestID, reply)
		if _, err := w.Write(frame); err != nil || w.Flush() != nil {
			return
		}
	}
}

func (f *fakeShard) received() []shard.ShardVersion {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]shard.ShardVersion(nil), f.got...)
}

// startConfigServer is an in-process standalone Cairn server standing in
// for the config servers.
func startConfigServer(t *testing.T) string {
	t.Helper()
	return startKeyedConfigServer(t, nil)
}

// startKeyedConfigServer is startConfigServer with access control and the
// internal user of key, as --keyFile gives (nil: neither).
func startKeyedConfigServer(t testing.TB, key []byte) string {
	return servertest.Start(t, key)
}

// staleCluster is a router over two fake shards and an in-process config
// server, db.c sharded on {a: 1} in one chunk on s0.
type staleCluster struct {
	r      *Router
	s0, s1 *fakeShard
	m      *shard.Map
	coll   shard.Collection
}

func startStaleCluster(t *testing.T) *staleCluster {
	t.Helper()
	ctx := context.Background()
	s0, s1 := startFakeShard(t, "s0"), startFakeShard(t, "s1")
	r, err := New(Options{ConfigDB: startConfigServer(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	for _, s := range []*fakeShard{s0, s1} {
		if err := r.configInsert(ctx, "shards", marshal(bson.D{{Key: "_id", Value: s.name}, {Key: "host", Value: s.name + "/" + s.addr}, {Key: "state", Value: 1}})); err != nil {
			t.Fatal(err)
		}
	}
	if err := r.cache.createDB(ctx, "db", "s0"); err != nil {
		t.Fatal(err)
	}
	p, _ := shard.ParsePattern(doc(t, `{"a": 1}`))
	m := shard.NewMap("db.c", p, bson.NewObjectID(), "s0")
	coll := shard.Collection{NS: "db.c", Epoch: m.Epoch, Updated: time.Now(), Timestamp: hlc.New(1700000000, 1), UUID: newUUID(), Key: p.Doc}
	if err := r.configInsert(ctx, "chunks", m.ChunkDocs(coll.UUID)...); err != nil {
		t.Fatal(err)
	}
	if err := r.configInsert(ctx, "collections", coll.Doc()); err != nil {
		t.Fatal(err)
	}
	s0.want = m.ShardVersionFor("s0", coll.Timestamp)
	return &staleCluster{r: r, s0: s0, s1: s1, m: m, coll: coll}
}

// move is another router's migration: [10, MaxKey) moves to s1; the
// shards learn their new versions, this router's cache does not.
func (c *staleCluster) move(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	old := c.m.ChunkDocs(c.coll.UUID)
	if err := c.m.Split(doc(t, `{"a": 10}`)); err != nil {
		t.Fatal(err)
	}
	if err := c.m.Move(1, "s1"); err != nil {
		t.Fatal(err)
	}
	if err := c.r.configDelete(ctx, "chunks", bson.D{{Key: "_id", Value: bson.Raw(old[0]).Lookup("_id").ObjectID()}}); err != nil {
		t.Fatal(err)
	}
	if err := c.r.configInsert(ctx, "chunks", c.m.ChunkDocs(c.coll.UUID)...); err != nil {
		t.Fatal(err)
	}
	c.s0.mu.Lock()
	c.s0.want = c.m.ShardVersionFor("s0", c.coll.Timestamp)
	c.s0.mu.Unlock()
	c.s1.mu.Lock()
	c.s1.want = c.m.ShardVersionFor("s1", c.coll.Timestamp)
	c.s1.mu.Unlock()
}

// TestStaleConfigRefreshes: a router whose cached routing predates a chunk
// move sends the old shardVersion, the donor answers StaleConfig, and the
// router reads the config servers again and finds the document on the
// recipient, which gets the new version.
func TestStaleConfigRefreshes(t *testing.T) {
	ctx := context.Background()
	c := startStaleCluster(t)
	find := func() string {
		t.Helper()
		reply := c.r.run(ctx, &request{name: "find", db: "db", body: doc(t, `{"find": "c", "filter": {"a": 50}, "$db": "db"}`)})
		batch := arrayDocs(reply.Lookup("cursor", "firstBatch"))
		if len(batch) != 1 {
			t.Fatalf("find: %s", reply)
		}
		return batch[0].Lookup("_id").StringValue()
	}
	if got := find(); got != "s0" {
		t.Fatalf("before the move: the document came from %s", got)
	}
	c.move(t)
	if got := find(); got != "s1" {
		t.Fatalf("after the move: the document came from %s", got)
	}
	got0, got1 := c.s0.received(), c.s1.received()
	if len(got0) != 2 || got0[1].V != (shard.Version{Major: 1}) || len(got1) != 1 || !got1[0].Equal(c.s1.want) {
		t.Fatalf("versions received: s0 %v, s1 %v (want s0: 1|0 twice, the second refused; s1: %v once)", got0, got1, c.s1.want)
	}
}

// TestStaleConfigRetryKeepsTxnNumber: a retryable insert refused by a
// StaleConfig is sent again with the client's lsid and txnNumber, and each
// document with its position in the client's batch (stmtIds), however the
// fresh routing groups them.
func TestStaleConfigRetryKeepsTxnNumber(t *testing.T) {
	ctx := context.Background()
	c := startStaleCluster(t)
	// Warm the cache, then move the chunk behind the router's back.
	c.r.run(ctx, &request{name: "find", db: "db", body: doc(t, `{"find": "c", "filter": {"a": 1}, "$db": "db"}`)})
	c.move(t)
	lsid := `{"id": {"$binary": {"base64": "3bRFJtsySImyXSwV5AOZtg==", "subType": "04"}}}`
	body := doc(t, `{"insert": "c", "documents": [{"a": 5}, {"a": 50}, {"a": 7}], "ordered": false, "lsid": `+lsid+`, "txnNumber": {"$numberLong": "7"}, "$db": "db"}`)
	reply := c.r.run(ctx, &request{name: "insert", db: "db", body: body})
	if n, _ := reply.Lookup("n").AsInt64OK(); n != 3 {
		t.Fatalf("insert: %s", reply)
	}
	want := map[string][]struct{ as, ids []int32 }{
		"s0": {{[]int32{5, 50, 7}, []int32{0, 1, 2}}, {[]int32{5, 7}, []int32{0, 2}}}, // refused, then its own
		"s1": {{[]int32{50}, []int32{1}}},
	}
	// The shards get the client's session id with its uid named (the
	// user's: here none, SHA-256 of ""), so their session is the user's.
	noUser := sha256.Sum256(nil)
	_, clientID := doc(t, lsid).Lookup("id").Binary()
	wantLSID := bsoncore.NewDocumentBuilder().AppendBinary("id", 4, clientID).
		AppendBinary("uid", 0, noUser[:]).Build()
	for _, f := range []*fakeShard{c.s0, c.s1} {
		f.mu.Lock()
		got := f.inserts
		f.mu.Unlock()
		if len(got) != len(want[f.name]) {
			t.Fatalf("%s took %d inserts, want %d", f.name, len(got), len(want[f.name]))
		}
		for i, ins := range got {
			var ids []int32
			vals, _ := ins.body.Lookup("stmtIds").Array().Values()
			for _, v := range vals {
				ids = append(ids, v.Int32())
			}
			w := want[f.name][i]
			txn, _ := ins.body.Lookup("txnNumber").Int64OK()
			if fmt.Sprint(ins.as) != fmt.Sprint(w.as) || fmt.Sprint(ids) != fmt.Sprint(w.ids) ||
				txn != 7 || !bytes.Equal(ins.body.Lookup("lsid").Document(), wantLSID) {
				t.Errorf("%s insert %d: documents %v stmtIds %v txnNumber %d lsid %s; want %v, %v, 7", f.name, i, ins.as, ids, txn, ins.body.Lookup("lsid"), w.as, w.ids)
			}
		}
	}
}

func wireReader(nc net.Conn) interface {
	ReadMessage() (*wire.Message, error)
} {
	return wire.NewReader(nc, 0)
}

func appendReplyMsg(responseTo int32, body bsoncore.Document) []byte {
	return wire.AppendMsg(nil, 1, responseTo, 0, body)
}
