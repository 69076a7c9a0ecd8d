package rstest

import (
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/hlc"
)

// TestVersionsReplicate checks that replication carries a versioned
// collection's history with its documents (issue #23): writes on the
// primary while a secondary is down past two log compactions (it comes
// back through a snapshot), then every member holds the same store, its
// history validates (CheckHistory), its $versions scan lists every
// version, and an as-of read on it answers what the primary answers.
func TestVersionsReplicate(t *testing.T) {
	s := Start(t, 3, 23, Options{CompactEntries: 30})
	p := s.WaitForPrimary(20 * time.Second)
	ns := engine.Namespace{DB: "db", Coll: "v"}
	opts, _ := bson.Marshal(bson.D{{Key: "versioning", Value: bson.D{{Key: "enabled", Value: true}}}})
	if err := s.Engine(p).CreateCollection(ns, opts); err != nil {
		t.Fatal(err)
	}
	doc := func(n int) bsoncore.Document {
		d, _ := bson.Marshal(bson.D{{Key: "_id", Value: 1}, {Key: "n", Value: n}})
		return d
	}
	id := bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 1)}
	if _, err := s.Engine(p).Insert(ns, []bsoncore.Document{doc(0)}, true); err != nil {
		t.Fatal(err)
	}
	down := (p + 1) % 3
	s.Kill(down)
	var mid hlc.Timestamp
	const writes = 80
	for n := 1; n < writes; n++ {
		if _, err := s.Engine(p).Replace(ns, id, doc(n)); err != nil {
			t.Fatalf("write %d: %v", n, err)
		}
		if n == 10 {
			mid = s.Engine(p).Storage().LastCommitted()
		}
	}
	if _, err := s.Engine(p).Delete(ns, id); err != nil {
		t.Fatal(err)
	}
	s.Restart(down)
	s.WaitSame(30 * time.Second)
	for i := range 3 {
		eng := s.Engine(i)
		if err := eng.CheckHistory(ns); err != nil {
			t.Fatalf("member %d: %v", i, err)
		}
		r, err := eng.NewReader(ns)
		if err != nil {
			t.Fatal(err)
		}
		cur, err := r.Versions(engine.AllVersions)
		if err != nil {
			t.Fatal(err)
		}
		var vs []uint64
		for {
			v, ok, err := cur.Next()
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				break
			}
			vs = append(vs, v.V)
		}
		_ = cur.Close()
		_ = r.Close()
		if len(vs) != writes+1 || vs[0] != writes+1 {
			t.Fatalf("member %d holds versions %v, want %d…1", i, vs, writes+1)
		}
		got, found, err := eng.GetAt(nil, ns, id, mid)
		if err != nil || !found || bsoncore.Document(got).Lookup("n").Int32() != 10 {
			t.Fatalf("member %d as of write 10: %s %v %v", i, bsoncore.Document(got), found, err)
		}
	}
}
