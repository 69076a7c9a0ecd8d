package exec

import (
	"context"
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/query"
	"github.com/cairndb/cairn/internal/update"
)

// TestNewDocumentsInAReusedBuffer checks invariant "New documents in a
// reused buffer": updates write each new document over one buffer, so the
// engine must have copied each before the next is written. A multi-update
// of flat $sets (each document keeps its own _id and b), then single
// updates and a findAndModify in turn, and every document read back must
// be exactly what its own updates made it.
func TestNewDocumentsInAReusedBuffer(t *testing.T) {
	eng := openTestEngine(t)
	ns := engine.Namespace{DB: "db", Coll: "c"}
	const n = 20
	want := map[int]bson.D{}
	for i := range n {
		want[i] = bson.D{{Key: "_id", Value: int32(i)}, {Key: "a", Value: "aaaaaaaa"}, {Key: "b", Value: int32(i * 10)}}
	}
	insertD(t, eng, ns, n, func(i int) bson.D { return want[i] })
	x := New(eng)
	run := func(filter, mod bson.D, multi, find bool) {
		t.Helper()
		f, _ := bson.Marshal(filter)
		sel, err := NewSelection(ns, f, query.Options{})
		if err != nil {
			t.Fatal(err)
		}
		m, _ := bson.Marshal(mod)
		u, err := update.ParseDocument(m, update.Options{})
		if err != nil {
			t.Fatal(err)
		}
		spec := Update{Sel: sel, Mod: u, Multi: multi}
		if find {
			_, err = x.FindAndUpdate(context.Background(), spec)
		} else {
			_, err = x.Update(context.Background(), spec)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	run(bson.D{}, bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: "bbbbbbbb"}}}}, true, false)
	for i := range n {
		want[i][1].Value = "bbbbbbbb"
	}
	for i := range n {
		v := fmt.Sprintf("c%07d", i)
		run(bson.D{{Key: "_id", Value: int32(i)}}, bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: v}}}}, false, i%3 == 0)
		want[i][1].Value = v
	}
	for i := range n {
		got, found, err := eng.Get(nil, ns, bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, int32(i))})
		if err != nil || !found {
			t.Fatalf("document %d: found %v, %v", i, found, err)
		}
		w, _ := bson.Marshal(want[i])
		if string(got) != string(w) {
			t.Errorf("document %d is %s, want %s", i, bson.Raw(got), bson.Raw(w))
		}
	}
}

// insertD inserts the n documents doc(0)…doc(n-1) into ns.
func insertD(t *testing.T, eng *engine.Engine, ns engine.Namespace, n int, doc func(i int) bson.D) {
	t.Helper()
	docs := make([]bsoncore.Document, n)
	for i := range docs {
		docs[i], _ = bson.Marshal(doc(i))
	}
	if _, err := eng.Insert(ns, docs, true); err != nil {
		t.Fatal(err)
	}
}
