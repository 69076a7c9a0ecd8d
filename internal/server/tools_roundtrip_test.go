package server_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// MongoDB's Database Tools (mongodump, mongorestore, mongoexport,
// mongoimport) cannot be obtained here: github.com/mongodb/mongo-tools is
// not served by the Go module proxy this workplace reaches (403), and
// neither Debian nor npm carries them. These tests drive the commands the
// tools send instead, through the Go driver the tools themselves are built
// on:
//
//   - mongodump: listCollections (full, for options and type), listIndexes
//     per collection, find of every document; the metadata it writes is
//     {options, indexes, collectionName, type}.
//   - mongorestore into a fresh server: create with the dumped options and
//     the _id index's spec as idIndex (views: viewOn and pipeline), then
//     createIndexes with the other specs, then the documents in insert
//     batches.
//   - mongoexport / mongoimport: find, each document as canonical
//     extended JSON on a line; then each line parsed and inserted.

// dumped is one collection as mongodump keeps it.
type dumped struct {
	name, typ string
	options   bson.Raw
	indexes   []bson.Raw
	docs      []bson.Raw
}

func dumpDatabase(t *testing.T, db *mongo.Database) []dumped {
	t.Helper()
	ctx := context.Background()
	cur, err := db.ListCollections(ctx, bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	var out []dumped
	for cur.Next(ctx) {
		d := dumped{name: cur.Current.Lookup("name").StringValue(), typ: cur.Current.Lookup("type").StringValue(),
			options: append(bson.Raw(nil), cur.Current.Lookup("options").Document()...)}
		if d.typ == "collection" {
			ic, err := db.Collection(d.name).Indexes().List(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for ic.Next(ctx) {
				d.indexes = append(d.indexes, append(bson.Raw(nil), ic.Current...))
			}
			fc, err := db.Collection(d.name).Find(ctx, bson.D{})
			if err != nil {
				t.Fatal(err)
			}
			for fc.Next(ctx) {
				d.docs = append(d.docs, append(bson.Raw(nil), fc.Current...))
			}
		}
		out = append(out, d)
	}
	if err := cur.Err(); err != nil {
		t.Fatal(err)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

func restoreDatabase(t *testing.T, db *mongo.Database, dump []dumped) {
	t.Helper()
	ctx := context.Background()
	// Collections before views, as mongorestore orders them.
	for pass := range 2 {
		for _, d := range dump {
			if (d.typ == "view") != (pass == 1) {
				continue
			}
			create := bson.D{{Key: "create", Value: d.name}}
			elems, _ := d.options.Elements()
			for _, e := range elems {
				create = append(create, bson.E{Key: e.Key(), Value: e.Value()})
			}
			for _, ix := range d.indexes {
				if ix.Lookup("name").StringValue() == "_id_" {
					create = append(create, bson.E{Key: "idIndex", Value: ix})
				}
			}
			if err := db.RunCommand(ctx, create).Err(); err != nil {
				t.Fatalf("restore create %s: %v", d.name, err)
			}
			var specs bson.A
			for _, ix := range d.indexes {
				if ix.Lookup("name").StringValue() != "_id_" {
					specs = append(specs, ix)
				}
			}
			if len(specs) > 0 {
				if err := db.RunCommand(ctx, bson.D{{Key: "createIndexes", Value: d.name}, {Key: "indexes", Value: specs}}).Err(); err != nil {
					t.Fatalf("restore createIndexes %s: %v", d.name, err)
				}
			}
			for i := 0; i < len(d.docs); i += 1000 {
				batch := bson.A{}
				for _, doc := range d.docs[i:min(i+1000, len(d.docs))] {
					batch = append(batch, doc)
				}
				if err := db.RunCommand(ctx, bson.D{{Key: "insert", Value: d.name}, {Key: "documents", Value: batch}, {Key: "ordered", Value: false}}).Err(); err != nil {
					t.Fatalf("restore insert %s: %v", d.name, err)
				}
			}
		}
	}
}

// TestToolsDumpRestoreRoundTrip: a database with a capped collection, a
// validated one, a TTL index, partial, unique, sparse and compound
// indexes, a view and documents of many BSON types is dumped from one
// server and restored into another as the tools do; the restored database
// has the same collections, options, index specs and documents, and
// behaves the same (validation, uniqueness, the cap).
func TestToolsDumpRestoreRoundTrip(t *testing.T) {
	src, dst := startServer(t), startServer(t)
	ctx := context.Background()
	sdb := src.client(t).Database("shop")
	run := func(db *mongo.Database, cmd bson.D) {
		t.Helper()
		if err := db.RunCommand(ctx, cmd).Err(); err != nil {
			t.Fatalf("%v: %v", cmd, err)
		}
	}
	run(sdb, bson.D{{Key: "create", Value: "log"}, {Key: "capped", Value: true}, {Key: "size", Value: int64(1 << 20)}, {Key: "max", Value: int64(50)}})
	run(sdb, bson.D{{Key: "create", Value: "orders"}, {Key: "validator", Value: bson.D{{Key: "$jsonSchema", Value: bson.D{{Key: "required", Value: bson.A{"qty"}}, {Key: "properties", Value: bson.D{{Key: "qty", Value: bson.D{{Key: "bsonType", Value: "int"}, {Key: "minimum", Value: 0}}}}}}}}},
		{Key: "validationLevel", Value: "moderate"}, {Key: "validationAction", Value: "error"}})
	run(sdb, bson.D{{Key: "createIndexes", Value: "sessions"}, {Key: "indexes", Value: bson.A{bson.D{{Key: "key", Value: bson.D{{Key: "lastSeen", Value: 1}}}, {Key: "name", Value: "ttl"}, {Key: "expireAfterSeconds", Value: int32(3600)}}}}})
	run(sdb, bson.D{{Key: "createIndexes", Value: "users"}, {Key: "indexes", Value: bson.A{
		bson.D{{Key: "key", Value: bson.D{{Key: "email", Value: 1}}}, {Key: "name", Value: "email_1"}, {Key: "unique", Value: true}},
		bson.D{{Key: "key", Value: bson.D{{Key: "age", Value: 1}}}, {Key: "name", Value: "adults"}, {Key: "partialFilterExpression", Value: bson.D{{Key: "age", Value: bson.D{{Key: "$gt", Value: 18}}}}}},
		bson.D{{Key: "key", Value: bson.D{{Key: "last", Value: 1}, {Key: "first", Value: -1}}}, {Key: "name", Value: "name_idx"}},
		bson.D{{Key: "key", Value: bson.D{{Key: "nick", Value: 1}}}, {Key: "name", Value: "nick_1"}, {Key: "sparse", Value: true}},
	}}})
	run(sdb, bson.D{{Key: "create", Value: "bigOrders"}, {Key: "viewOn", Value: "orders"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$match", Value: bson.D{{Key: "qty", Value: bson.D{{Key: "$gt", Value: 5}}}}}}}}})
	now := time.Now().Truncate(time.Millisecond)
	dec, _ := bson.ParseDecimal128("12.50")
	for i := range 120 {
		if _, err := sdb.Collection("log").InsertOne(ctx, bson.D{{Key: "_id", Value: i}, {Key: "msg", Value: fmt.Sprintf("line %d", i)}}); err != nil {
			t.Fatal(err)
		}
	}
	var orders, users, sessions []any
	for i := range 300 {
		orders = append(orders, bson.D{{Key: "_id", Value: bson.NewObjectID()}, {Key: "qty", Value: int32(i % 10)}, {Key: "price", Value: dec},
			{Key: "at", Value: bson.NewDateTimeFromTime(now.Add(time.Duration(i) * time.Second))}, {Key: "tags", Value: bson.A{"a", int64(i), 1.5, nil}},
			{Key: "blob", Value: bson.Binary{Subtype: 0, Data: []byte{byte(i), 0, 255}}}, {Key: "nested", Value: bson.D{{Key: "ts", Value: bson.Timestamp{T: uint32(i + 1), I: 2}}}}})
		user := bson.D{{Key: "_id", Value: i}, {Key: "email", Value: fmt.Sprintf("u%d@x", i)}, {Key: "age", Value: i % 40}, {Key: "last", Value: "L"}, {Key: "first", Value: fmt.Sprint(i)}}
		if i%3 == 0 {
			user = append(user, bson.E{Key: "nick", Value: fmt.Sprint("n", i)})
		}
		users = append(users, user)
		sessions = append(sessions, bson.D{{Key: "_id", Value: fmt.Sprint("s", i)}, {Key: "lastSeen", Value: bson.NewDateTimeFromTime(now)}})
	}
	for name, docs := range map[string][]any{"orders": orders, "users": users, "sessions": sessions} {
		if _, err := sdb.Collection(name).InsertMany(ctx, docs); err != nil {
			t.Fatal(err)
		}
	}

	dump := dumpDatabase(t, sdb)
	ddb := dst.client(t).Database("shop")
	restoreDatabase(t, ddb, dump)
	again := dumpDatabase(t, ddb)

	if len(again) != len(dump) {
		t.Fatalf("restored %d collections, dumped %d", len(again), len(dump))
	}
	for i, d := range dump {
		t.Logf("%s (%s): options %s, %d indexes, %d documents", d.name, d.typ, d.options, len(d.indexes), len(d.docs))
		r := again[i]
		if r.name != d.name || r.typ != d.typ || !bytes.Equal(r.options, d.options) {
			t.Errorf("%s: restored as %s %s %s, dumped %s %s", d.name, r.name, r.typ, r.options, d.typ, d.options)
		}
		if !reflect.DeepEqual(r.indexes, d.indexes) {
			t.Errorf("%s: restored indexes %v, dumped %v", d.name, r.indexes, d.indexes)
		}
		if len(r.docs) != len(d.docs) {
			t.Errorf("%s: restored %d documents, dumped %d", d.name, len(r.docs), len(d.docs))
			continue
		}
		for j := range d.docs {
			if !bytes.Equal(r.docs[j], d.docs[j]) {
				t.Errorf("%s: document %d restored as %s, dumped %s", d.name, j, r.docs[j], d.docs[j])
				break
			}
		}
	}
	if n := len(dump[indexOf(dump, "log")].docs); n != 50 {
		t.Errorf("the capped collection kept %d documents, max is 50", n)
	}
	// The restored collections behave as the originals.
	if _, err := ddb.Collection("orders").InsertOne(ctx, bson.D{{Key: "noQty", Value: true}}); writeErrCode(err) != 121 {
		t.Errorf("restored validator: %v, want DocumentValidationFailure 121", err)
	}
	if _, err := ddb.Collection("users").InsertOne(ctx, bson.D{{Key: "email", Value: "u1@x"}}); writeErrCode(err) != 11000 {
		t.Errorf("restored unique index: %v, want DuplicateKey 11000", err)
	}
	for i := range 10 {
		if _, err := ddb.Collection("log").InsertOne(ctx, bson.D{{Key: "_id", Value: 1000 + i}}); err != nil {
			t.Fatal(err)
		}
	}
	if n, _ := ddb.Collection("log").CountDocuments(ctx, bson.D{}); n != 50 {
		t.Errorf("restored capped collection holds %d documents after more inserts, max is 50", n)
	}
	if n, err := ddb.Collection("bigOrders").CountDocuments(ctx, bson.D{}); err != nil || n != 120 {
		t.Errorf("restored view: %d documents, %v; want 120", n, err)
	}
}

// writeErrCode is a write's error code, from a write error or a command
// error.
func writeErrCode(err error) int {
	var we mongo.WriteException
	if errors.As(err, &we) && len(we.WriteErrors) > 0 {
		return we.WriteErrors[0].Code
	}
	return int(codeOf(err))
}

func indexOf(dump []dumped, name string) int {
	for i, d := range dump {
		if d.name == name {
			return i
		}
	}
	return -1
}

// TestToolsExportImportRoundTrip: mongoexport's canonical extended JSON
// lines, imported by mongoimport's path into another collection, give
// back the same documents, every BSON type kept.
func TestToolsExportImportRoundTrip(t *testing.T) {
	s := startServer(t)
	ctx := context.Background()
	db := s.client(t).Database("exp")
	dec, _ := bson.ParseDecimal128("-0.000001")
	docs := []any{
		bson.D{{Key: "_id", Value: bson.NewObjectID()}, {Key: "i32", Value: int32(1)}, {Key: "i64", Value: int64(1 << 40)}, {Key: "f", Value: 0.1},
			{Key: "d", Value: dec}, {Key: "s", Value: "ü\x00x"}, {Key: "b", Value: true}, {Key: "n", Value: nil},
			{Key: "dt", Value: bson.DateTime(-1)}, {Key: "ts", Value: bson.Timestamp{T: 5, I: 6}}, {Key: "re", Value: bson.Regex{Pattern: "^a", Options: "i"}},
			{Key: "bin", Value: bson.Binary{Subtype: 4, Data: make([]byte, 16)}}, {Key: "min", Value: bson.MinKey{}}, {Key: "max", Value: bson.MaxKey{}},
			{Key: "arr", Value: bson.A{bson.D{{Key: "x", Value: bson.A{}}}, int32(2)}}},
		bson.D{{Key: "_id", Value: bson.D{{Key: "a", Value: 1}, {Key: "b", Value: "c"}}}, {Key: "nan", Value: bson.NewDecimal128(0x7c00000000000000, 0)}},
	}
	if _, err := db.Collection("src").InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	// mongoexport: find, one canonical extended JSON document per line.
	var out bytes.Buffer
	cur, err := db.Collection("src").Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	var exported []bson.Raw
	for cur.Next(ctx) {
		exported = append(exported, append(bson.Raw(nil), cur.Current...))
		line, err := bson.MarshalExtJSON(cur.Current, true, false)
		if err != nil {
			t.Fatal(err)
		}
		out.Write(append(line, '\n'))
	}
	// mongoimport: each line parsed and inserted.
	sc := bufio.NewScanner(&out)
	var batch bson.A
	for sc.Scan() {
		var doc bson.Raw
		if err := bson.UnmarshalExtJSON(sc.Bytes(), true, &doc); err != nil {
			t.Fatalf("%s: %v", sc.Text(), err)
		}
		batch = append(batch, doc)
	}
	if err := db.RunCommand(ctx, bson.D{{Key: "insert", Value: "dst"}, {Key: "documents", Value: batch}}).Err(); err != nil {
		t.Fatal(err)
	}
	cur, err = db.Collection("dst").Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
	if err != nil {
		t.Fatal(err)
	}
	i := 0
	for cur.Next(ctx) {
		if i >= len(exported) || !bytes.Equal(cur.Current, exported[i]) {
			t.Fatalf("imported document %d: %s, exported %v", i, cur.Current, exported)
		}
		i++
	}
	if i != len(docs) {
		t.Fatalf("imported %d documents of %d", i, len(docs))
	}
}
