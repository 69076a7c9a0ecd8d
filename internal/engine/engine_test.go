package engine

import (
	"fmt"
	"log/slog"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
)

func openEngine(t *testing.T, dir string) *Engine {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	e, err := Open(dir, Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e
}

func doc(t *testing.T, d bson.D) bsoncore.Document {
	t.Helper()
	b, err := bson.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func val(t *testing.T, v any) bsoncore.Value {
	t.Helper()
	typ, data, err := bson.MarshalValue(v)
	if err != nil {
		t.Fatal(err)
	}
	return bsoncore.Value{Type: bsoncore.Type(typ), Data: data}
}

var users = Namespace{"app", "users"}

func scanIDs(t *testing.T, e *Engine, ns Namespace) []string {
	t.Helper()
	r, err := e.NewReader(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	it, err := r.Docs(KeyRange{}, false)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for it.Next() {
		var id any
		d, err := it.Value()
		if err != nil {
			t.Fatal(err)
		}
		v := d.Lookup("_id")
		if err := bson.UnmarshalValue(bson.Type(v.Type), v.Data, &id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, fmt.Sprint(id))
	}
	if err := it.Close(); err != nil {
		t.Fatal(err)
	}
	return ids
}

func TestInsertGetScan(t *testing.T) {
	e := openEngine(t, "")
	res, err := e.Insert(users, []bsoncore.Document{
		doc(t, bson.D{{"_id", 3}, {"name", "c"}}),
		doc(t, bson.D{{"name", "b"}, {"_id", 1}}),
		doc(t, bson.D{{"_id", 2}, {"name", "a"}}),
	}, true)
	if err != nil || res.Inserted != 3 || len(res.WriteErrors) != 0 {
		t.Fatalf("insert: %+v %v", res, err)
	}
	got, found, err := e.Get(nil, users, val(t, 1))
	if err != nil || !found {
		t.Fatalf("get 1: %v %v", found, err)
	}
	// "_id first": the stored document starts with _id even if sent later.
	if first, _ := bsoncore.Document(got).IndexErr(0); first.Key() != "_id" {
		t.Errorf("stored document %s does not start with _id", bsoncore.Document(got))
	}
	// 1.0 and int64 1 are the same _id as int32 1, as in MongoDB.
	for _, id := range []any{1.0, int64(1)} {
		if _, found, _ := e.Get(nil, users, val(t, id)); !found {
			t.Errorf("get by %T(1) did not find the document", id)
		}
	}
	if got := fmt.Sprint(scanIDs(t, e, users)); got != "[1 2 3]" {
		t.Errorf("scan order = %s, want [1 2 3]", got)
	}
}

func TestInsertGeneratesObjectID(t *testing.T) {
	e := openEngine(t, "")
	res, err := e.Insert(users, []bsoncore.Document{doc(t, bson.D{{"a", 1}}), doc(t, bson.D{{"_id", "mine"}}), doc(t, bson.D{{"b", 2}})}, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.GeneratedIDs) != 2 || res.GeneratedIDs[0].Index != 0 || res.GeneratedIDs[1].Index != 2 {
		t.Fatalf("generated ids = %+v, want indexes 0 and 2", res.GeneratedIDs)
	}
	for _, g := range res.GeneratedIDs {
		if g.ID.Type != bsoncore.TypeObjectID {
			t.Errorf("generated id type %v, want ObjectId", g.ID.Type)
		}
		got, found, err := e.Get(nil, users, g.ID)
		if err != nil || !found {
			t.Fatalf("generated id %v not stored: %v", g.ID, err)
		}
		if first, _ := bsoncore.Document(got).IndexErr(0); first.Key() != "_id" {
			t.Errorf("generated _id not first in %s", bsoncore.Document(got))
		}
	}
}

func TestInsertRejectsBadIDs(t *testing.T) {
	e := openEngine(t, "")
	cases := []struct {
		name string
		id   any
		code mongoerr.Code
	}{
		{"array", bson.A{1, 2}, mongoerr.InvalidIDField},
		{"regex", bson.Regex{Pattern: "a"}, mongoerr.InvalidIDField},
		{"undefined", bson.Undefined{}, mongoerr.InvalidIDField},
		{"dollar field in subdocument", bson.D{{"$x", 1}}, mongoerr.DollarPrefixedFieldName},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			res, err := e.Insert(users, []bsoncore.Document{doc(t, bson.D{{"_id", c.id}})}, true)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.WriteErrors) != 1 || mongoerr.CodeOf(res.WriteErrors[0].Err) != c.code {
				t.Fatalf("write errors = %+v, want code %d", res.WriteErrors, c.code)
			}
		})
	}
	if ids := scanIDs(t, e, users); len(ids) != 0 {
		t.Errorf("rejected documents were stored: %v", ids)
	}
}

func TestInsertCompoundIDFieldOrderMatters(t *testing.T) {
	e := openEngine(t, "")
	a := bson.D{{"env", "prod"}, {"name", "x"}}
	b := bson.D{{"name", "x"}, {"env", "prod"}}
	res, err := e.Insert(users, []bsoncore.Document{doc(t, bson.D{{"_id", a}}), doc(t, bson.D{{"_id", b}}), doc(t, bson.D{{"_id", a}})}, false)
	if err != nil {
		t.Fatal(err)
	}
	if res.Inserted != 2 || len(res.WriteErrors) != 1 || res.WriteErrors[0].Index != 2 {
		t.Fatalf("result %+v: want {a} and {b} distinct, the second {a} a duplicate", res)
	}
}

func TestOrderedAndUnorderedBatches(t *testing.T) {
	batch := func(t *testing.T) []bsoncore.Document {
		return []bsoncore.Document{
			doc(t, bson.D{{"_id", 1}}),
			doc(t, bson.D{{"_id", 1}}),        // duplicate
			doc(t, bson.D{{"_id", bson.A{}}}), // invalid _id
			doc(t, bson.D{{"_id", 2}}),
		}
	}
	t.Run("ordered stops at the first error", func(t *testing.T) {
		e := openEngine(t, "")
		res, err := e.Insert(users, batch(t), true)
		if err != nil {
			t.Fatal(err)
		}
		if res.Inserted != 1 || len(res.WriteErrors) != 1 || res.WriteErrors[0].Index != 1 ||
			mongoerr.CodeOf(res.WriteErrors[0].Err) != mongoerr.DuplicateKey {
			t.Fatalf("result %+v", res)
		}
		if got := fmt.Sprint(scanIDs(t, e, users)); got != "[1]" {
			t.Errorf("stored %s, want [1]", got)
		}
	})
	t.Run("unordered goes on", func(t *testing.T) {
		e := openEngine(t, "")
		res, err := e.Insert(users, batch(t), false)
		if err != nil {
			t.Fatal(err)
		}
		if res.Inserted != 2 || len(res.WriteErrors) != 2 || res.WriteErrors[0].Index != 1 || res.WriteErrors[1].Index != 2 {
			t.Fatalf("result %+v", res)
		}
		if got := fmt.Sprint(scanIDs(t, e, users)); got != "[1 2]" {
			t.Errorf("stored %s, want [1 2]", got)
		}
	})
}

func TestDuplicateKeyErrorShape(t *testing.T) {
	e := openEngine(t, "")
	_, _ = e.Insert(users, []bsoncore.Document{doc(t, bson.D{{"_id", "a"}})}, true)
	res, _ := e.Insert(users, []bsoncore.Document{doc(t, bson.D{{"_id", "a"}})}, true)
	if len(res.WriteErrors) != 1 {
		t.Fatalf("no duplicate error: %+v", res)
	}
	me, ok := mongoerr.As(res.WriteErrors[0].Err)
	if !ok || me.Code != mongoerr.DuplicateKey || len(me.Extra) != 2 || me.Extra[0].Name != "keyPattern" || me.Extra[1].Name != "keyValue" {
		t.Fatalf("duplicate error = %#v", res.WriteErrors[0].Err)
	}
}

func TestReplaceAndDelete(t *testing.T) {
	e := openEngine(t, "")
	_, _ = e.Insert(users, []bsoncore.Document{doc(t, bson.D{{"_id", 1}, {"v", 1}})}, true)
	matched, err := e.Replace(users, val(t, 1), doc(t, bson.D{{"v", 2}}))
	if err != nil || !matched {
		t.Fatalf("replace: %v %v", matched, err)
	}
	got, _, _ := e.Get(nil, users, val(t, 1))
	if v := bsoncore.Document(got).Lookup("v").Int32(); v != 2 {
		t.Errorf("v = %d after replace, want 2", v)
	}
	if _, err := e.Replace(users, val(t, 1), doc(t, bson.D{{"_id", 9}})); mongoerr.CodeOf(err) != mongoerr.ImmutableField {
		t.Errorf("changing _id: err = %v, want ImmutableField", err)
	}
	if matched, _ := e.Replace(users, val(t, 42), doc(t, bson.D{{"v", 1}})); matched {
		t.Error("replace of a missing _id matched")
	}
	if deleted, err := e.Delete(users, val(t, 1)); err != nil || !deleted {
		t.Fatalf("delete: %v %v", deleted, err)
	}
	if deleted, _ := e.Delete(users, val(t, 1)); deleted {
		t.Error("second delete reported a deletion")
	}
	if _, found, _ := e.Get(nil, users, val(t, 1)); found {
		t.Error("document still there after delete")
	}
}

func TestDocumentTooLarge(t *testing.T) {
	e := openEngine(t, "")
	big := doc(t, bson.D{{"_id", 1}, {"blob", make([]byte, MaxDocumentSize)}})
	res, err := e.Insert(users, []bsoncore.Document{big}, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.WriteErrors) != 1 || mongoerr.CodeOf(res.WriteErrors[0].Err) != mongoerr.BSONObjectTooLarge {
		t.Fatalf("result %+v, want BSONObjectTooLarge", res)
	}
}

func TestCatalogOperations(t *testing.T) {
	dir := t.TempDir()
	e := openEngine(t, dir)
	if err := e.CreateCollection(Namespace{"app", "a"}, nil); err != nil {
		t.Fatal(err)
	}
	// Idempotent with the same options, NamespaceExists with others (MongoDB 7.0).
	if err := e.CreateCollection(Namespace{"app", "a"}, nil); err != nil {
		t.Errorf("re-create with same options: %v", err)
	}
	if err := e.CreateCollection(Namespace{"app", "a"}, bson.Raw(doc(t, bson.D{{"capped", true}}))); mongoerr.CodeOf(err) != mongoerr.NamespaceExists {
		t.Errorf("re-create with other options: %v, want NamespaceExists", err)
	}
	_, _ = e.Insert(Namespace{"app", "b"}, []bsoncore.Document{doc(t, bson.D{{"_id", 1}})}, true)
	if err := e.RenameCollection(Namespace{"app", "b"}, Namespace{"other", "c"}, false); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(scanIDs(t, e, Namespace{"other", "c"})); got != "[1]" {
		t.Errorf("renamed collection holds %s", got)
	}
	if got := fmt.Sprint(e.Catalog().Databases()); got != "[app local other]" { // local: the oplog
		t.Errorf("databases = %s", got)
	}
	if err := e.RenameCollection(Namespace{"app", "a"}, Namespace{"other", "c"}, false); mongoerr.CodeOf(err) != mongoerr.NamespaceExists {
		t.Errorf("rename onto existing: %v", err)
	}
	if err := e.RenameCollection(Namespace{"app", "zzz"}, Namespace{"app", "y"}, false); mongoerr.CodeOf(err) != mongoerr.NamespaceNotFound {
		t.Errorf("rename missing: %v", err)
	}
	if err := e.CreateCollection(Namespace{"APP", "x"}, nil); mongoerr.CodeOf(err) != mongoerr.DatabaseDifferCase {
		t.Errorf("db differing in case: %v", err)
	}
	// The catalog survives a reopen.
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e = openEngine(t, dir)
	if got := fmt.Sprint(scanIDs(t, e, Namespace{"other", "c"})); got != "[1]" {
		t.Errorf("after reopen, renamed collection holds %s", got)
	}
	if n, err := e.DropDatabase("other"); err != nil || n != 1 {
		t.Fatalf("drop database: %d %v", n, err)
	}
	if got := fmt.Sprint(e.Catalog().Databases()); got != "[app local]" {
		t.Errorf("databases after drop = %s", got)
	}
	// A re-created collection of the same name starts empty: ids are not reused.
	_, _ = e.Insert(Namespace{"other", "c"}, []bsoncore.Document{doc(t, bson.D{{"_id", 2}})}, true)
	if got := fmt.Sprint(scanIDs(t, e, Namespace{"other", "c"})); got != "[2]" {
		t.Errorf("re-created collection holds %s, want [2]", got)
	}
}

func TestNamespaceValidation(t *testing.T) {
	e := openEngine(t, "")
	long := make([]byte, 260)
	for i := range long {
		long[i] = 'x'
	}
	bad := []Namespace{
		{"", "c"}, {"a.b", "c"}, {"a b", "c"}, {"a$", "c"}, {"a/b", "c"}, {"d\x00", "c"},
		{"db", ""}, {"db", "a$b"}, {"db", "system.foo"}, {"db", string(long)},
		{string(long[:64]), "c"},
	}
	for _, ns := range bad {
		res, err := e.Insert(ns, []bsoncore.Document{doc(t, bson.D{{"_id", 1}})}, true)
		if mongoerr.CodeOf(err) != mongoerr.InvalidNamespace {
			t.Errorf("insert into %q: res %+v err %v, want InvalidNamespace", ns.String(), res, err)
		}
	}
	if dbs := e.Catalog().Databases(); len(dbs) != 1 || dbs[0] != OplogNS.DB { // local: the oplog
		t.Errorf("invalid namespaces created databases %v", dbs)
	}
}
