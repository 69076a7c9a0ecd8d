package shard

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/hlc"
)

// TestWireVersionRoundTrip checks the shapes routers and shards exchange:
// shardVersion {e, t, v}, StaleConfig's errInfo and databaseVersion read
// back as they were written, and a shard's version follows its chunks.
func TestWireVersionRoundTrip(t *testing.T) {
	p, _ := ParsePattern(ext(t, `{"a": 1}`))
	m := NewMap("db.c", p, bson.NewObjectID(), "s0")
	if err := m.Split(ext(t, `{"a": 5}`)); err != nil {
		t.Fatal(err)
	}
	if err := m.Move(1, "s1"); err != nil {
		t.Fatal(err)
	}
	ts := hlc.New(1700000000, 3)
	s0, s1, s2 := m.ShardVersionFor("s0", ts), m.ShardVersionFor("s1", ts), m.ShardVersionFor("s2", ts)
	if s1.V != (Version{2, 0}) || s0.V != (Version{2, 1}) || s2.V != (Version{}) || s2.IsUnsharded() {
		t.Fatalf("shard versions: s0 %v, s1 %v, s2 %v", s0, s1, s2)
	}
	for _, v := range []ShardVersion{s0, s1, Unsharded} {
		d := v.Doc()
		if keys := keysOf(t, d); keys != "e,t,v" {
			t.Fatalf("shardVersion fields %s", keys)
		}
		back, err := ParseShardVersion(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: d})
		if err != nil || !back.Equal(v) {
			t.Fatalf("round trip of %v: %v, %v", v, back, err)
		}
	}
	info := StaleConfigInfo("db.c", s0, &s1, "s0")
	sc, err := ParseStaleConfigInfo(info)
	if err != nil || sc.NS != "db.c" || sc.ShardID != "s0" || !sc.Received.Equal(s0) || sc.Wanted == nil || !sc.Wanted.Equal(s1) {
		t.Fatalf("StaleConfig errInfo %s read as %+v, %v", info, sc, err)
	}
	if sc, err := ParseStaleConfigInfo(StaleConfigInfo("db.c", s0, nil, "s0")); err != nil || sc.Wanted != nil {
		t.Fatalf("StaleConfig without vWanted: %+v, %v", sc, err)
	}
	dv := DatabaseVersion{UUID: [16]byte{1, 2, 3}, Timestamp: ts, LastMod: 4}
	back, err := ParseDatabaseVersion(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: dv.Doc()})
	if err != nil || back != dv {
		t.Fatalf("databaseVersion round trip: %+v, %v", back, err)
	}
	if _, err := ParseShardVersion(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: ext(t, `{"e": 1}`)}); err == nil {
		t.Fatal("a malformed shardVersion parsed")
	}
}

func keysOf(t *testing.T, d bsoncore.Document) string {
	t.Helper()
	els, err := d.Elements()
	if err != nil {
		t.Fatal(err)
	}
	s := ""
	for i, el := range els {
		if i > 0 {
			s += ","
		}
		s += el.Key()
	}
	return s
}
