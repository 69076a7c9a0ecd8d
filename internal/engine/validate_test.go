package engine

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/opctx"
	"github.com/cairndb/cairn/internal/storage"
)

// TestValidateFindsCorruptIndexes corrupts a secondary index behind the
// engine's back (one extra entry, one missing) and checks that Validate
// and CheckIndexes report each.
func TestValidateFindsCorruptIndexes(t *testing.T) {
	e := openEngine(t, "")
	if _, err := e.CreateIndexes(context.Background(), users, []bsoncore.Document{doc(t, bson.D{{"key", bson.D{{"a", 1}}}, {"name", "a_1"}})}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Insert(users, []bsoncore.Document{doc(t, bson.D{{"_id", 1}, {"a", 1}}), doc(t, bson.D{{"_id", 2}, {"a", 2}})}, true); err != nil {
		t.Fatal(err)
	}
	v, err := e.Validate(context.Background(), users)
	if err != nil || !v.Valid() || v.Records != 2 || len(v.Indexes) != 2 || v.Indexes[1].Keys != 2 {
		t.Fatalf("clean collection: %+v %v", v, err)
	}
	ix := e.Catalog().Collection(users.DB, users.Coll).Indexes[0]
	prefix := storage.Prefix(nil, storage.SpaceIndex, ix.ID)
	snap := e.Storage().NewSnapshot()
	it, err := snap.NewIter(prefix, storage.PrefixEnd(prefix))
	if err != nil {
		t.Fatal(err)
	}
	it.First()
	first := append([]byte(nil), it.Key()...)
	it.Close()
	snap.Close()
	faultSkipVerify.Store(true) // the corruption is the point
	err = e.Storage().Write(func(tx *storage.Txn) error {
		tx.Delete(first)
		tx.Set(append(append([]byte(nil), prefix...), 0xff, 0xfe), nil)
		return nil
	})
	faultSkipVerify.Store(false)
	if err != nil {
		t.Fatal(err)
	}
	v, err = e.Validate(context.Background(), users)
	if err != nil {
		t.Fatal(err)
	}
	got := v.Indexes[1]
	if v.Valid() || got.Name != "a_1" || got.Missing != 1 || got.Extra != 1 || got.Keys != 2 {
		t.Fatalf("corrupt index: %+v", v)
	}
	if !v.Indexes[0].Valid() {
		t.Fatal("the _id index reported invalid")
	}
	if len(v.Inconsistencies) != 2 {
		t.Fatalf("inconsistencies %+v, want one missing and one extra", v.Inconsistencies)
	}
	for _, in := range v.Inconsistencies {
		switch {
		case in.Missing:
			// The deleted entry was document 1's {a: 1}.
			if in.Index != "a_1" || bsoncore.Document(in.Key).Lookup("a").Int32() != 1 || in.ID.Int32() != 1 {
				t.Errorf("missing entry %+v, want a_1 {a: 1} of _id 1", in)
			}
		default:
			if in.Index != "a_1" || in.Key != nil {
				t.Errorf("extra entry %+v: the garbage key decoded", in)
			}
		}
	}
	if err := e.CheckIndexes(users); err == nil {
		t.Fatal("CheckIndexes passed a corrupt index")
	}
}

// TestValidateStopsWithItsOperation: a validate whose operation ends
// (killOp here) stops its walk with the operation's cause.
func TestValidateStopsWithItsOperation(t *testing.T) {
	e := openEngine(t, "")
	ns := Namespace{"v", "killed"}
	loadN(t, e, ns, 200, 10)
	ctx, cancel := context.WithCancelCause(context.Background())
	if v, err := e.Validate(ctx, ns); err != nil || v.Records != 200 {
		t.Fatalf("live operation: %+v %v", v, err)
	}
	cancel(opctx.ErrKilled)
	if _, err := e.Validate(ctx, ns); mongoerr.CodeOf(err) != mongoerr.Interrupted {
		t.Fatalf("killed operation: %v, want Interrupted", err)
	}
}

// TestValidateBSONConformance stores documents that are well-formed BSON
// but do not conform (a string that is not UTF-8, regular expression
// options out of order): plain validation passes them, checkBSONConformance
// counts each as invalid.
func TestValidateBSONConformance(t *testing.T) {
	e := openEngine(t, "")
	notUTF8 := bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).AppendString("s", "a\xffb").Build()
	badRegex := bsoncore.NewDocumentBuilder().AppendInt32("_id", 2).AppendRegex("r", "a", "mi").Build()
	fine := bsoncore.NewDocumentBuilder().AppendInt32("_id", 3).AppendString("s", "héllo").AppendRegex("r", "a", "im").Build()
	if _, err := e.Insert(users, []bsoncore.Document{notUTF8, badRegex, fine}, true); err != nil {
		t.Fatal(err)
	}
	v, err := e.Validate(context.Background(), users)
	if err != nil || !v.Valid() || v.InvalidDocuments != 0 {
		t.Fatalf("plain validation: %+v %v", v, err)
	}
	v, err = e.ValidateWith(context.Background(), users, ValidateOptions{BSONConformance: true})
	if err != nil || v.Valid() || v.InvalidDocuments != 2 || v.Records != 3 {
		t.Fatalf("checkBSONConformance: %+v %v, want 2 invalid of 3", v, err)
	}
}
