package engine

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/catalog"
	"github.com/cairndb/cairn/internal/storage"
)

// TestCollectionStatsSizes checks the figures of CollectionStats: count and
// data size from the documents, the _id index as the bytes of the encoded
// _ids, a secondary index as the bytes of its stored keys and values.
func TestCollectionStatsSizes(t *testing.T) {
	e := openEngine(t, t.TempDir())
	ns := Namespace{DB: "db", Coll: "c"}
	var docs []bsoncore.Document
	var dataSize, idBytes int64
	for i := range 10 {
		d := doc(t, bson.D{{Key: "_id", Value: int32(i)}, {Key: "a", Value: "x"}})
		docs = append(docs, d)
		dataSize += int64(len(d))
		idBytes += int64(len(appendIDKey(nil, d.Lookup("_id"))))
	}
	if _, err := e.Insert(ns, docs, true); err != nil {
		t.Fatal(err)
	}
	if _, err := e.CreateIndexes(context.Background(), ns, []bsoncore.Document{spec(t, bson.D{{Key: "key", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "name", Value: "a_1"}})}); err != nil {
		t.Fatal(err)
	}
	coll := e.Catalog().Collection(ns.DB, ns.Coll)
	prefix := storage.Prefix(nil, storage.SpaceIndex, coll.Indexes[0].ID)
	it, err := e.db.NewIter(prefix, storage.PrefixEnd(prefix))
	if err != nil {
		t.Fatal(err)
	}
	var ixBytes int64
	for ok := it.First(); ok; ok = it.Next() {
		v, _ := it.Value()
		ixBytes += int64(len(it.Key()) + len(v))
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}

	st, err := e.CollectionStats(context.Background(), ns)
	if err != nil {
		t.Fatal(err)
	}
	want := []IndexSize{{Name: catalog.IDIndexName, Bytes: idBytes}, {Name: "a_1", Bytes: ixBytes}}
	if st.Count != 10 || st.DataSize != dataSize || st.Indexes != 1 || len(st.IndexSizes) != 2 ||
		st.IndexSizes[0] != want[0] || st.IndexSizes[1] != want[1] || ixBytes <= int64(10*len(prefix)) {
		t.Fatalf("stats %+v, want count 10, data %d, index sizes %v", st, dataSize, want)
	}
	if st.TotalIndexSize() != idBytes+ixBytes {
		t.Fatalf("TotalIndexSize %d, want %d", st.TotalIndexSize(), idBytes+ixBytes)
	}
}
