package engine

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// oplogEntries reads local.oplog.rs in $natural order.
func oplogEntries(t *testing.T, e *Engine) []bsoncore.Document {
	t.Helper()
	r, err := e.NewReader(OplogNS)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	c, err := r.Natural(0, false)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var out []bsoncore.Document
	for c.Next() {
		v, err := c.Value()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, append(bsoncore.Document(nil), v...))
	}
	return out
}

// TestOplogEntries: every document change has one entry in MongoDB's
// shape, in commit order with rising ts ("Change and entry commit
// together"), with the session of a retryable write; a failed write and a
// no-op update leave none.
func TestOplogEntries(t *testing.T) {
	e := openEngine(t, "")
	ns := Namespace{"db", "c"}
	if _, err := e.Insert(ns, []bsoncore.Document{doc(t, bson.D{{"_id", 1}}), doc(t, bson.D{{"_id", 1}}), doc(t, bson.D{{"_id", 2}})}, false); err != nil {
		t.Fatal(err)
	}
	set := func(id int, a int, replacement bool) {
		t.Helper()
		lsid := doc(t, bson.D{{"id", bson.Binary{Subtype: 4, Data: make([]byte, 16)}}})
		_, err := e.ModifyWith(ns, []bsoncore.Value{val(t, id)}, ModifyOptions{Ordered: true, Session: &OplogSession{LSID: lsid, TxnNumber: 7, StmtIDs: []int32{3}}},
			func(int, bsoncore.Document) (Action, error) {
				return Action{Replace: doc(t, bson.D{{"_id", id}, {"a", a}}), Replacement: replacement}, nil
			})
		if err != nil {
			t.Fatal(err)
		}
	}
	set(1, 5, false)
	set(1, 5, false) // a no-op
	set(1, 6, true)
	if _, err := e.Delete(ns, val(t, 2)); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Insert(OplogNS, []bsoncore.Document{doc(t, bson.D{{"_id", 9}})}, true); err == nil {
		t.Error("a client insert into local.oplog.rs was accepted")
	}
	got := oplogEntries(t, e)
	want := []struct{ op, o, o2 string }{
		{"c", `{"create": "c"}`, ""}, // the insert creates the collection
		{"i", `{"_id": {"$numberInt":"1"}}`, ""},
		{"i", `{"_id": {"$numberInt":"2"}}`, ""},
		{"u", `{"$v": {"$numberInt":"2"},"diff": {"i": {"a": {"$numberInt":"5"}}}}`, `{"_id": {"$numberInt":"1"}}`}, // an update: a diff
		{"u", `{"_id": {"$numberInt":"1"},"a": {"$numberInt":"6"}}`, `{"_id": {"$numberInt":"1"}}`},                 // a replacement: whole
		{"d", `{"_id": {"$numberInt":"2"}}`, ""},
	}
	if len(got) != len(want) {
		t.Fatalf("%d entries, want %d: %v", len(got), len(want), got)
	}
	coll := e.Catalog().Collection("db", "c")
	var last uint64
	for i, w := range want {
		g := got[i]
		if op, _ := g.Lookup("op").StringValueOK(); op != w.op {
			t.Errorf("entry %d: op %q, want %q", i, op, w.op)
		}
		if o := g.Lookup("o").Document().String(); o != w.o {
			t.Errorf("entry %d: o %s, want %s", i, o, w.o)
		}
		if o2, ok := g.Lookup("o2").DocumentOK(); w.o2 != "" && (!ok || o2.String() != w.o2) || w.o2 == "" && ok {
			t.Errorf("entry %d: o2 %s, want %q", i, g.Lookup("o2"), w.o2)
		}
		if ns, _ := g.Lookup("ns").StringValueOK(); ns != "db.c" && !(w.op == "c" && ns == "db.$cmd") {
			t.Errorf("entry %d: ns %q", i, ns)
		}
		if _, ui, _ := g.Lookup("ui").BinaryOK(); !bytes.Equal(ui, coll.UUID.Data) {
			t.Errorf("entry %d: ui is not the collection's UUID", i)
		}
		if v, _ := g.Lookup("v").Int64OK(); v != 2 {
			t.Errorf("entry %d: v %d, want 2", i, v)
		}
		ts, inc := g.Lookup("ts").Timestamp()
		if cur := uint64(ts)<<32 | uint64(inc); cur <= last {
			t.Errorf("entry %d: ts %d not above %d", i, cur, last)
		} else {
			last = cur
		}
		_, hasLSID := g.Lookup("lsid").DocumentOK()
		if hasLSID != (w.op == "u") {
			t.Errorf("entry %d: lsid present %v, want %v", i, hasLSID, w.op == "u")
		}
		if w.op == "u" {
			if n, _ := g.Lookup("txnNumber").Int64OK(); n != 7 {
				t.Errorf("entry %d: txnNumber %d, want 7", i, n)
			}
			if s, _ := g.Lookup("stmtId").Int32OK(); s != 3 {
				t.Errorf("entry %d: stmtId %d, want 3", i, s)
			}
		}
	}
}

// TestOplogCrash: after a power cut, the changes that survived are exactly
// those whose entries survived (both ride in one commit).
func TestOplogCrash(t *testing.T) {
	fs := vfs.NewCrashableMem()
	quiet := slog.New(slog.DiscardHandler)
	e, err := Open("db", Options{FS: fs, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	ns := Namespace{"db", "c"}
	for i := range 20 {
		if _, err := e.Insert(ns, []bsoncore.Document{doc(t, bson.D{{"_id", i}})}, true); err != nil {
			t.Fatal(err)
		}
	}
	crashed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	_ = e.Close()
	e2, err := Open("db", Options{FS: crashed, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer e2.Close()
	entries := oplogEntries(t, e2)
	if len(entries) != 21 {
		t.Fatalf("%d entries after the crash, want the create and the 20 acknowledged inserts", len(entries))
	}
	for i, en := range entries[1:] {
		id := en.Lookup("o", "_id")
		if _, found, _ := e2.Get(nil, ns, id); !found {
			t.Errorf("entry %d names _id %s, which is not stored", i, id)
		}
	}
}

// TestOplogTrim: entries beyond the size cap are removed, oldest first.
func TestOplogTrim(t *testing.T) {
	e := openEngine(t, "")
	e.SetOplogSize(4 << 10)
	ns := Namespace{"db", "c"}
	pad := string(make([]byte, 200))
	for i := range 200 {
		if _, err := e.Insert(ns, []bsoncore.Document{doc(t, bson.D{{"_id", i}, {"p", pad}})}, true); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.trimOplog(); err != nil {
		t.Fatal(err)
	}
	entries := oplogEntries(t, e)
	size, max := e.OplogSize()
	if size > max || len(entries) == 0 || len(entries) > 20 {
		t.Fatalf("after trimming: %d entries, %d bytes, cap %d", len(entries), size, max)
	}
	if last, _ := entries[len(entries)-1].Lookup("o", "_id").Int32OK(); last != 199 {
		t.Errorf("the newest entry is _id %d, want 199", last)
	}
}

// TestOplogCommands: catalog changes are logged as op "c" entries in
// MongoDB's shape, and the oplog itself cannot be dropped or renamed.
func TestOplogCommands(t *testing.T) {
	e := openEngine(t, "")
	ns := Namespace{"db", "c"}
	if err := e.CreateCollection(ns, nil); err != nil {
		t.Fatal(err)
	}
	ix := doc(t, bson.D{{"key", bson.D{{"a", 1}}}, {"name", "a_1"}})
	if _, err := e.CreateIndexes(context.Background(), ns, []bsoncore.Document{ix}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.DropIndexes(ns, []string{"a_1"}); err != nil {
		t.Fatal(err)
	}
	if err := e.RenameCollection(ns, Namespace{"db", "d"}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := e.DropCollection(Namespace{"db", "d"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.DropDatabase("db"); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, en := range oplogEntries(t, e) {
		if op, _ := en.Lookup("op").StringValueOK(); op == "c" {
			got = append(got, en.Lookup("o").Document().String())
		}
	}
	want := []string{
		`{"create": "c"}`,
		`{"createIndexes": "c","key": {"a": {"$numberInt":"1"}},"name": "a_1"}`,
		`{"dropIndexes": "c","index": "a_1"}`,
		`{"renameCollection": "db.c","to": "db.d","dropTarget": false}`,
		`{"drop": "d"}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("command entries:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if _, err := e.DropCollection(OplogNS); err == nil {
		t.Error("dropping local.oplog.rs was accepted")
	}
	if _, err := e.DropDatabase("local"); err == nil {
		t.Error("dropping the local database was accepted")
	}
}

// TestOplogRecount: RecountOplog sums the entries afresh (a replica set
// calls it after applying groups made elsewhere), and the background sum
// at open finds what the store held.
func TestOplogRecount(t *testing.T) {
	dir := t.TempDir()
	e := openEngine(t, dir)
	ns := Namespace{"db", "c"}
	for i := range 10 {
		if _, err := e.Insert(ns, []bsoncore.Document{doc(t, bson.D{{"_id", i}})}, true); err != nil {
			t.Fatal(err)
		}
	}
	var want int64
	for _, en := range oplogEntries(t, e) {
		want += int64(len(en))
	}
	e.oplog.size.Store(0)
	if err := e.RecountOplog(); err != nil {
		t.Fatal(err)
	}
	if got, _ := e.OplogSize(); got != want {
		t.Errorf("recounted %d bytes, want %d", got, want)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = openEngine(t, dir)
	<-e.oplog.counting
	if got, _ := e.OplogSize(); got != want {
		t.Errorf("summed at open %d bytes, want %d", got, want)
	}
}

// TestOplogStart: the ts bounds a read of the oplog seeks to.
func TestOplogStart(t *testing.T) {
	ts := func(t, i uint32) bson.Timestamp { return bson.Timestamp{T: t, I: i} }
	for _, c := range []struct {
		filter bson.D
		want   uint64
	}{
		{bson.D{{"ts", bson.D{{"$gte", ts(5, 2)}}}}, 5<<32 | 1},
		{bson.D{{"ts", bson.D{{"$gt", ts(5, 2)}}}}, 5<<32 | 2},
		{bson.D{{"ts", ts(5, 2)}}, 5<<32 | 1},
		{bson.D{{"$and", bson.A{bson.D{{"ts", bson.D{{"$gte", ts(5, 2)}}}}, bson.D{{"ts", bson.D{{"$gt", ts(6, 0)}}}}}}}, 6 << 32},
		{bson.D{{"ts", bson.D{{"$lt", ts(5, 2)}}}}, 0},
		{bson.D{{"$or", bson.A{bson.D{{"ts", ts(5, 2)}}}}}, 0},
		{bson.D{{"op", "i"}}, 0},
	} {
		if got := OplogStart(doc(t, c.filter)); got != c.want {
			t.Errorf("%v: start after %d, want %d", c.filter, got, c.want)
		}
	}
}
