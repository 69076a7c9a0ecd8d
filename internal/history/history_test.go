package history

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/hlc"
	"github.com/cairndb/cairn/internal/keystring"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// versionsOf lists the versions the history holds for each _id (an int).
func versionsOf(t *testing.T, eng *engine.Engine, ns engine.Namespace) (map[int32][]uint64, map[int32][]hlc.Timestamp) {
	t.Helper()
	r, err := eng.NewReader(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cur, err := r.Versions(engine.AllVersions)
	if err != nil {
		t.Fatal(err)
	}
	defer cur.Close()
	vs, from := map[int32][]uint64{}, map[int32][]hlc.Timestamp{}
	for {
		v, ok, err := cur.Next()
		if err != nil {
			t.Fatal(err)
		}
		if !ok {
			return vs, from
		}
		id, _ := v.ID()
		vs[id.Int32()] = append(vs[id.Int32()], v.V)
		from[id.Int32()] = append(from[id.Int32()], hlc.Timestamp(v.ValidFrom))
	}
}

// TestRetention prunes with a clock the test controls: nothing goes while
// the versions are younger than minSecondsToKeep, then every version
// beyond minVersionsToKeep goes, the newest always stays (a tombstone
// too), the log and the counters say so, and an as-of read before what
// was pruned is SnapshotTooOld while one after it still answers.
func TestRetention(t *testing.T) {
	var logs bytes.Buffer
	eng, err := engine.Open(t.TempDir(), engine.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	ns := engine.Namespace{DB: "db", Coll: "c"}
	keepAll := engine.Namespace{DB: "db", Coll: "all"}
	opts, _ := bson.Marshal(bson.D{{Key: "versioning", Value: bson.D{{Key: "enabled", Value: true}, {Key: "minVersionsToKeep", Value: 2}, {Key: "minSecondsToKeep", Value: 60}}}})
	if err := eng.CreateCollection(ns, opts); err != nil {
		t.Fatal(err)
	}
	all, _ := bson.Marshal(bson.D{{Key: "versioning", Value: bson.D{{Key: "enabled", Value: true}}}})
	if err := eng.CreateCollection(keepAll, all); err != nil {
		t.Fatal(err)
	}
	for _, c := range []engine.Namespace{ns, keepAll} {
		for id := range int32(3) {
			d, _ := bson.Marshal(bson.D{{Key: "_id", Value: id}, {Key: "n", Value: 0}})
			if _, err := eng.Insert(c, []bsoncore.Document{d}, true); err != nil {
				t.Fatal(err)
			}
		}
		// _id 0: 5 versions; _id 1: 1 version; _id 2: 2 versions then a tombstone.
		for n := 1; n <= 4; n++ {
			d, _ := bson.Marshal(bson.D{{Key: "_id", Value: 0}, {Key: "n", Value: n}})
			if _, err := eng.Replace(c, bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 0)}, d); err != nil {
				t.Fatal(err)
			}
		}
		two := bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 2)}
		d, _ := bson.Marshal(bson.D{{Key: "_id", Value: 2}, {Key: "n", Value: 1}})
		if _, err := eng.Replace(c, two, d); err != nil {
			t.Fatal(err)
		}
		if _, err := eng.Delete(c, two); err != nil {
			t.Fatal(err)
		}
	}
	_, before := versionsOf(t, eng, ns)

	now := time.Now()
	m := New(eng, Options{Now: func() time.Time { return now }, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if n := m.Pass(); n != 0 {
		t.Fatalf("versions younger than minSecondsToKeep: pruned %d", n)
	}
	now = now.Add(time.Hour)
	// _id 0 keeps versions 5 and 4 (3 go); _id 1 keeps its only one; _id
	// 2 keeps its tombstone (3) and version 2 (version 1 goes).
	if n := m.Pass(); n != 4 {
		t.Fatalf("an hour later: pruned %d, want 4", n)
	}
	got, _ := versionsOf(t, eng, ns)
	want := map[int32][]uint64{0: {5, 4}, 1: {1}, 2: {3, 2}}
	for id, vs := range want {
		if !equal(got[id], vs) {
			t.Fatalf("_id %d keeps %v, want %v", id, got[id], vs)
		}
	}
	if m.Pruned() != 4 || m.Passes() != 2 {
		t.Fatalf("counters: pruned %d, passes %d", m.Pruned(), m.Passes())
	}
	if !strings.Contains(logs.String(), "numPruned=4") {
		t.Fatalf("log: %s", logs.String())
	}
	if n := m.Pass(); n != 0 {
		t.Fatalf("a second pass pruned %d more", n)
	}
	keep, _ := versionsOf(t, eng, keepAll)
	if len(keep[0]) != 5 {
		t.Fatalf("a collection without bounds lost versions: %v", keep)
	}
	// _id 0's version 1 began before the horizon: reading then is too old.
	if _, err := eng.NewReaderAt(ns, before[0][4]); mongoerr.CodeOf(err) != mongoerr.SnapshotTooOld {
		t.Fatalf("as-of read before the pruned versions: %v, want SnapshotTooOld", err)
	}
	// The horizon is the collection's: the latest validTo pruned (_id 2's
	// version 1 ended when its version 2 began). From there on, reads answer.
	r, err := eng.NewReaderAt(ns, before[2][1])
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for id, n := range map[int32]int32{0: 4, 2: 1} {
		doc, found, err := r.Fetch(nil, keystring.Append(nil, bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, id)}))
		if err != nil || !found || bsoncore.Document(doc).Lookup("n").Int32() != n {
			t.Fatalf("_id %d at the horizon: %v %v %v, want n %d", id, bson.Raw(doc), found, err, n)
		}
	}
}

func equal(a, b []uint64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
