package engine

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
)

func spec(t *testing.T, d bson.D) bsoncore.Document { return doc(t, d) }

// TestIndexesFollowDocuments runs random writes against a collection with a
// unique index, a multikey index and a sparse compound index, and checks
// after each round that every index holds exactly its documents' entries
// and that the unique index admits no duplicates.
func TestIndexesFollowDocuments(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	rng := rand.New(rand.NewPCG(seed, 7))
	t.Logf("seed %d", seed)
	e := openEngine(t, "")
	ns := Namespace{"ix", "c"}
	_, err := e.CreateIndexes(context.Background(), ns, []bsoncore.Document{
		spec(t, bson.D{{"key", bson.D{{"email", 1}}}, {"name", "email_1"}, {"unique", true}}),
		spec(t, bson.D{{"key", bson.D{{"tags", 1}}}, {"name", "tags_1"}}),
		spec(t, bson.D{{"key", bson.D{{"a.b", 1}, {"n", -1}}}, {"name", "a.b_1_n_-1"}, {"sparse", true}}),
	})
	if err != nil {
		t.Fatal(err)
	}
	randomDoc := func(id int) bsoncore.Document {
		d := bson.D{{"_id", id}}
		if rng.IntN(4) > 0 {
			d = append(d, bson.E{"email", fmt.Sprintf("u%d@x", rng.IntN(40))})
		}
		if rng.IntN(2) == 0 {
			tags := bson.A{}
			for range rng.IntN(4) {
				tags = append(tags, rng.IntN(5))
			}
			d = append(d, bson.E{"tags", tags})
		}
		if rng.IntN(3) == 0 {
			d = append(d, bson.E{"a", bson.D{{"b", rng.IntN(3)}}}, bson.E{"n", rng.IntN(3)})
		}
		return doc(t, d)
	}
	dups := 0
	for round := range 30 {
		for range 20 {
			id := rng.IntN(60)
			switch rng.IntN(3) {
			case 0:
				res, err := e.Insert(ns, []bsoncore.Document{randomDoc(id)}, true)
				if err != nil {
					t.Fatal(err)
				}
				if len(res.WriteErrors) > 0 && mongoerr.CodeOf(res.WriteErrors[0].Err) == mongoerr.DuplicateKey {
					dups++
				}
			case 1:
				next := randomDoc(id)
				_, err := e.Modify(ns, []bsoncore.Value{val(t, id)}, true, func(int, bsoncore.Document) (Action, error) {
					return Action{Replace: next}, nil
				})
				if err != nil {
					t.Fatal(err)
				}
			case 2:
				if _, err := e.Delete(ns, val(t, id)); err != nil {
					t.Fatal(err)
				}
			}
		}
		if err := e.CheckIndexes(ns); err != nil {
			t.Fatalf("round %d (seed %d): %v", round, seed, err)
		}
	}
	if dups == 0 {
		t.Errorf("no duplicate key was ever refused (seed %d); the unique index went untested", seed)
	}
	if !e.Catalog().Collection("ix", "c").Index("tags_1").Multikey {
		t.Error("tags_1 saw arrays but is not flagged multikey")
	}
}

func TestUniqueIndexBuildOverDuplicatesLeavesNothing(t *testing.T) {
	e := openEngine(t, "")
	ns := Namespace{"ix", "d"}
	_, _ = e.Insert(ns, []bsoncore.Document{doc(t, bson.D{{"_id", 1}, {"k", "x"}}), doc(t, bson.D{{"_id", 2}, {"k", "x"}})}, true)
	_, err := e.CreateIndexes(context.Background(), ns, []bsoncore.Document{spec(t, bson.D{{"key", bson.D{{"k", 1}}}, {"name", "k_1"}, {"unique", true}})})
	if mongoerr.CodeOf(err) != mongoerr.DuplicateKey {
		t.Fatalf("unique build over duplicates: %v, want DuplicateKey", err)
	}
	if ix := e.Catalog().Collection("ix", "d").Index("k_1"); ix != nil {
		t.Fatalf("failed build left index %+v behind", ix)
	}
	it, _ := e.db.NewIter([]byte{'i'}, []byte{'j'})
	defer it.Close()
	if it.First() {
		t.Fatalf("failed build left index entries behind: %x", it.Key())
	}
}

func TestIndexConflicts(t *testing.T) {
	e := openEngine(t, "")
	ns := Namespace{"ix", "e"}
	a := spec(t, bson.D{{"key", bson.D{{"a", 1}}}, {"name", "a_1"}})
	if _, err := e.CreateIndexes(context.Background(), ns, []bsoncore.Document{a}); err != nil {
		t.Fatal(err)
	}
	res, err := e.CreateIndexes(context.Background(), ns, []bsoncore.Document{a})
	if err != nil || !res.AllExisted || res.Before != 2 || res.After != 2 {
		t.Fatalf("re-creating the same index: %+v %v", res, err)
	}
	if _, err := e.CreateIndexes(context.Background(), ns, []bsoncore.Document{spec(t, bson.D{{"key", bson.D{{"b", 1}}}, {"name", "a_1"}})}); mongoerr.CodeOf(err) != mongoerr.IndexKeySpecsConflict {
		t.Errorf("same name, other key: %v, want IndexKeySpecsConflict", err)
	}
	if _, err := e.CreateIndexes(context.Background(), ns, []bsoncore.Document{spec(t, bson.D{{"key", bson.D{{"a", 1}}}, {"name", "other"}})}); mongoerr.CodeOf(err) != mongoerr.IndexOptionsConflict {
		t.Errorf("same key, other name: %v, want IndexOptionsConflict", err)
	}
	if _, err := e.DropIndexes(ns, []string{"_id_"}); mongoerr.CodeOf(err) != mongoerr.InvalidOptions {
		t.Errorf("dropping _id_: %v", err)
	}
	if was, err := e.DropIndexes(ns, []string{"*"}); err != nil || was != 2 {
		t.Fatalf("drop *: %d %v", was, err)
	}
	if n := len(e.Catalog().Collection("ix", "e").Indexes); n != 0 {
		t.Fatalf("%d indexes left after drop *", n)
	}
}
