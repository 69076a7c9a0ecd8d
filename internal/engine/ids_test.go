package engine

import (
	"log/slog"
	"regexp"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/idgen"
	"github.com/cairndb/cairn/internal/mongoerr"
)

var seqNS = Namespace{"ids", "seq"}

func openAt(t *testing.T, dir string, now time.Time) *Engine {
	t.Helper()
	e, err := Open(dir, Options{Logger: slog.New(slog.DiscardHandler), Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// insertGenerated inserts n documents without _id and returns the ids made.
func insertGenerated(t *testing.T, e *Engine, n int) []string {
	t.Helper()
	docs := make([]bsoncore.Document, n)
	for i := range docs {
		docs[i] = doc(t, bson.D{{"i", i}})
	}
	res, err := e.Insert(seqNS, docs, true)
	if err != nil || len(res.GeneratedIDs) != n {
		t.Fatalf("insert: %+v %v", res, err)
	}
	ids := make([]string, n)
	for i, g := range res.GeneratedIDs {
		if g.Index != i {
			t.Fatalf("generated id %d reported at index %d", i, g.Index)
		}
		ids[i] = g.ID.StringValue()
		// The id reported is the id stored, first in the document.
		got, found, _ := e.Get(nil, seqNS, g.ID)
		if first, _ := bsoncore.Document(got).IndexErr(0); !found || first.Key() != "_id" || first.Value().StringValue() != ids[i] {
			t.Fatalf("generated id %s not stored first in its document", ids[i])
		}
	}
	return ids
}

func TestSequentialIDs(t *testing.T) {
	dir := t.TempDir()
	t0 := time.Unix(0x6075f681, 0)
	e := openAt(t, dir, t0)
	if err := e.CreateCollection(seqNS, bson.Raw(doc(t, bson.D{{"idGenerator", "sequential"}}))); err != nil {
		t.Fatal(err)
	}
	format := regexp.MustCompile(`^0000[0-9a-f]{8}[0-9a-f]{16}$`)
	first := insertGenerated(t, e, 5)
	second := insertGenerated(t, e, 5)
	all := append(first, second...)
	for i, id := range all {
		if !format.MatchString(id) {
			t.Fatalf("id %q: want 4 prefix + 8 timestamp + 16 serial lower-case hex", id)
		}
		if i > 0 && id <= all[i-1] {
			t.Fatalf("ids not strictly increasing: %s then %s", all[i-1], id)
		}
	}
	if all[0][4:12] != "6075f681" {
		t.Fatalf("timestamp part %s, want the start time 6075f681", all[0][4:12])
	}
	// A user-supplied _id is kept as it is.
	res, _ := e.Insert(seqNS, []bsoncore.Document{doc(t, bson.D{{"_id", "mine"}})}, true)
	if res.Inserted != 1 || len(res.GeneratedIDs) != 0 {
		t.Fatalf("user _id: %+v", res)
	}
	// Prefix, offset and increment are honoured and survive a restart.
	if err := e.SetIDConfig(idgen.Config{Prefix: 0x00ab, Offset: 2, Increment: 3}); err != nil {
		t.Fatal(err)
	}
	withCfg := insertGenerated(t, e, 2)
	if withCfg[0][:4] != "00ab" {
		t.Fatalf("prefix not applied: %s", withCfg[0])
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	// Restart with the clock set back: ids must still rise, never repeat.
	e = openAt(t, dir, t0.Add(-time.Hour))
	defer e.Close()
	after := insertGenerated(t, e, 3)
	if after[0] <= withCfg[len(withCfg)-1] {
		t.Fatalf("after a restart with the clock behind, id %s ≤ previous %s", after[0], withCfg[len(withCfg)-1])
	}
	if after[0][:4] != "00ab" || e.IDConfig().Increment != 3 {
		t.Fatalf("persisted parameters lost across restart: %s %+v", after[0], e.IDConfig())
	}
	if serial := after[0][12:]; serial != "0000000000000002" {
		t.Fatalf("first serial after restart %s, want the offset 2", serial)
	}
	if got, want := after[1][12:], "0000000000000005"; got != want {
		t.Fatalf("second serial %s, want offset+increment %s", got, want)
	}
}

func TestIDConfigRange(t *testing.T) {
	e := openEngine(t, "")
	for _, cfg := range []idgen.Config{{Offset: 0, Increment: 1}, {Offset: 1, Increment: 0}, {Offset: 1, Increment: 1 << 20}} {
		if err := e.SetIDConfig(cfg); mongoerr.CodeOf(err) != mongoerr.BadValue {
			t.Errorf("SetIDConfig(%+v) = %v, want BadValue", cfg, err)
		}
	}
	if err := e.CreateCollection(Namespace{"ids", "bad"}, bson.Raw(doc(t, bson.D{{"idGenerator", "uuid"}}))); mongoerr.CodeOf(err) != mongoerr.BadValue {
		t.Errorf("idGenerator uuid: %v, want BadValue", err)
	}
}

func TestDefaultGeneratorIsObjectID(t *testing.T) {
	e := openEngine(t, "")
	res, err := e.Insert(Namespace{"ids", "plain"}, []bsoncore.Document{doc(t, bson.D{{"a", 1}}), doc(t, bson.D{{"a", 2}})}, true)
	if err != nil || len(res.GeneratedIDs) != 2 {
		t.Fatalf("%+v %v", res, err)
	}
	a, b := res.GeneratedIDs[0].ID, res.GeneratedIDs[1].ID
	if a.Type != bsoncore.TypeObjectID || b.Type != bsoncore.TypeObjectID {
		t.Fatalf("types %v %v, want ObjectId", a.Type, b.Type)
	}
	// ObjectId: 4-byte seconds, 5 random bytes per process, 3-byte counter.
	oa, ob := a.ObjectID(), b.ObjectID()
	if string(oa[4:9]) != string(ob[4:9]) {
		t.Errorf("the per-process random part differs between %x and %x", oa, ob)
	}
	ca := int(oa[9])<<16 | int(oa[10])<<8 | int(oa[11])
	cb := int(ob[9])<<16 | int(ob[10])<<8 | int(ob[11])
	if (ca+1)&0xffffff != cb {
		t.Errorf("counters %d then %d, want consecutive", ca, cb)
	}
}
