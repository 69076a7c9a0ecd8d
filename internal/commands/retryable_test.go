package commands

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/exec"
)

// TestStmtResultShape: a statement's record as stmtResult appends it is
// byte for byte the document the builders make with the same fields, in
// the same order (n, m, u, b, a, g; zero fields absent), and decodes
// (fromStmtResult) to what it encodes.
func TestStmtResultShape(t *testing.T) {
	strVal := func(s string) bsoncore.Value {
		return bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, s)}
	}
	oid := bsoncore.Value{Type: bsoncore.TypeObjectID, Data: make([]byte, 12)}
	before, _ := bson.Marshal(bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 1}})
	after, _ := bson.Marshal(bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 2}})
	for _, c := range []struct {
		name string
		did  exec.UpdateResult
		gen  bsoncore.Value
	}{
		{"nothing", exec.UpdateResult{}, bsoncore.Value{}},
		{"an update", exec.UpdateResult{Matched: 1, Modified: 1}, bsoncore.Value{}},
		{"a no-op update", exec.UpdateResult{Matched: 1}, bsoncore.Value{}},
		{"an upsert", exec.UpdateResult{UpsertedID: strVal("k")}, bsoncore.Value{}},
		{"findAndModify", exec.UpdateResult{Matched: 1, Modified: 1, Before: before, After: after}, bsoncore.Value{}},
		{"findAndModify that upserts", exec.UpdateResult{UpsertedID: strVal("k"), After: after}, bsoncore.Value{}},
		{"an insert with a server-made _id", exec.UpdateResult{}, oid},
		{"every field", exec.UpdateResult{Matched: 1 << 40, Modified: -1, UpsertedID: oid, Before: before, After: after}, strVal("g")},
	} {
		b := bsoncore.NewDocumentBuilder()
		if c.did.Matched != 0 {
			b.AppendInt64("n", c.did.Matched)
		}
		if c.did.Modified != 0 {
			b.AppendInt64("m", c.did.Modified)
		}
		if c.did.UpsertedID.Type != 0 {
			b.AppendValue("u", c.did.UpsertedID)
		}
		if c.did.Before != nil {
			b.AppendDocument("b", c.did.Before)
		}
		if c.did.After != nil {
			b.AppendDocument("a", c.did.After)
		}
		if c.gen.Type != 0 {
			b.AppendValue("g", c.gen)
		}
		want := b.Build()
		got := stmtResult(c.did, c.gen)
		if string(got) != string(want) {
			t.Errorf("%s: %v, want %v", c.name, got, want)
		}
		if cap(got) != len(got) {
			t.Errorf("%s: %d bytes in a buffer of %d: the size was not exact", c.name, len(got), cap(got))
		}
		did, gen := fromStmtResult(got)
		if did.Matched != c.did.Matched || did.Modified != c.did.Modified || !did.UpsertedID.Equal(c.did.UpsertedID) ||
			string(did.Before) != string(c.did.Before) || string(did.After) != string(c.did.After) || !gen.Equal(c.gen) {
			t.Errorf("%s: decoded %+v %v, want %+v %v", c.name, did, gen, c.did, c.gen)
		}
	}
}
