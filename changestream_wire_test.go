package cairn_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"

	"github.com/cairndb/cairn/internal/testnet"
)

// Change streams over the wire: a one-member replica set of a real `cairn
// serve --replSet` and the Go driver's Watch on a collection, a database
// and the deployment, for every event type and option; then the refusals
// with MongoDB's codes.
func TestChangeStreamsOverTheWire(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts a server")
	}
	tmp := t.TempDir()
	client := startOneMemberSet(t, tmp)
	ctx := context.Background()
	db := client.Database("cs")

	t.Run("collection events", func(t *testing.T) {
		coll := db.Collection("events")
		cs := watch(t, coll, nil, options.ChangeStream())
		long := "a string long enough that a diff is smaller than the array"
		ok(t)(coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 1}, {Key: "b", Value: 1}, {Key: "arr", Value: bson.A{long, long, long}}}))
		ok(t)(coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: 2}}}, {Key: "$unset", Value: bson.D{{Key: "b", Value: ""}}}}))
		ok(t)(coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$pop", Value: bson.D{{Key: "arr", Value: 1}}}}))
		ok(t)(coll.ReplaceOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "z", Value: 9}}))
		ok(t)(coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: 1}}))
		ins := next(t, cs)
		expect(t, ins, "operationType", "insert")
		expect(t, ins, "documentKey", bson.D{{Key: "_id", Value: int32(1)}})
		expect(t, ins, "fullDocument.a", int32(1))
		expect(t, ins, "ns", bson.D{{Key: "db", Value: "cs"}, {Key: "coll", Value: "events"}})
		if _, ok := lookup(ins, "clusterTime").(bson.Timestamp); !ok {
			t.Errorf("insert's clusterTime: %v", lookup(ins, "clusterTime"))
		}
		if _, ok := lookup(ins, "wallTime").(bson.DateTime); !ok {
			t.Errorf("insert's wallTime: %v", lookup(ins, "wallTime"))
		}
		upd := next(t, cs)
		expect(t, upd, "operationType", "update")
		expect(t, upd, "updateDescription.updatedFields", bson.D{{Key: "a", Value: int32(2)}})
		expect(t, upd, "updateDescription.removedFields", bson.A{"b"})
		expect(t, upd, "updateDescription.truncatedArrays", bson.A{})
		if lookup(upd, "fullDocument") != nil {
			t.Errorf("update with fullDocument default has fullDocument: %v", upd)
		}
		if lookup(upd, "updateDescription.disambiguatedPaths") != nil {
			t.Errorf("disambiguatedPaths without showExpandedEvents: %v", upd)
		}
		pop := next(t, cs)
		expect(t, pop, "updateDescription.truncatedArrays", bson.A{bson.D{{Key: "field", Value: "arr"}, {Key: "newSize", Value: int32(2)}}})
		rep := next(t, cs)
		expect(t, rep, "operationType", "replace")
		expect(t, rep, "fullDocument", bson.D{{Key: "_id", Value: int32(1)}, {Key: "z", Value: int32(9)}})
		del := next(t, cs)
		expect(t, del, "operationType", "delete")
		expect(t, del, "documentKey", bson.D{{Key: "_id", Value: int32(1)}})
		if !reflect.DeepEqual(cs.ResumeToken(), bson.Raw(mustRaw(t, lookup(del, "_id")))) {
			t.Errorf("ResumeToken %v after the last event, want its _id %v", cs.ResumeToken(), lookup(del, "_id"))
		}
		// The events' tokens rise, as resume tokens sort.
		toks := []string{tokenData(t, ins), tokenData(t, upd), tokenData(t, pop), tokenData(t, rep), tokenData(t, del)}
		for i := 1; i < len(toks); i++ {
			if toks[i] <= toks[i-1] {
				t.Errorf("token %d %s not above %s", i, toks[i], toks[i-1])
			}
		}
		// An empty getMore moves postBatchResumeToken on past the last
		// event (a high water mark, which still sorts after it).
		ok(t)(db.Collection("elsewhere").InsertOne(ctx, bson.D{{Key: "x", Value: 1}}))
		if cs.TryNext(ctx) {
			t.Fatalf("an event for another collection: %v", cs.Current)
		}
		if pbrt := tokenOf(t, cs.ResumeToken()); pbrt <= toks[len(toks)-1] {
			t.Errorf("postBatchResumeToken %s did not move past the last event's %s", pbrt, toks[len(toks)-1])
		}

		// resumeAfter the update: the next event is the $pop's.
		re := watch(t, coll, nil, options.ChangeStream().SetResumeAfter(lookup(upd, "_id")))
		expect(t, next(t, re), "_id", lookup(pop, "_id"))
		// startAtOperationTime of the insert: the insert again.
		ts := lookup(ins, "clusterTime").(bson.Timestamp)
		at := watch(t, coll, nil, options.ChangeStream().SetStartAtOperationTime(&ts))
		expect(t, next(t, at), "_id", lookup(ins, "_id"))
	})

	t.Run("fullDocument", func(t *testing.T) {
		coll := db.Collection("full")
		ok(t)(coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 1}}))
		lookupCS := watch(t, coll, nil, options.ChangeStream().SetFullDocument(options.UpdateLookup))
		avail := watch(t, coll, nil, options.ChangeStream().SetFullDocument(options.WhenAvailable).SetFullDocumentBeforeChange(options.WhenAvailable))
		required := watch(t, coll, nil, options.ChangeStream().SetFullDocumentBeforeChange(options.Required))
		ok(t)(coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "a", Value: 1}}}}))
		ok(t)(coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "a", Value: 1}}}}))
		// updateLookup reads the document when the event is read: both
		// events see a: 3 (MongoDB's documented behaviour).
		expect(t, next(t, lookupCS), "fullDocument", bson.D{{Key: "_id", Value: int32(1)}, {Key: "a", Value: int32(3)}})
		// Cairn keeps no pre-images yet: whenAvailable gives null...
		ev := next(t, avail)
		if v, ok := field(ev, "fullDocument"); !ok || v != nil {
			t.Errorf("whenAvailable without images: fullDocument %v, want null", v)
		}
		if v, ok := field(ev, "fullDocumentBeforeChange"); !ok || v != nil {
			t.Errorf("whenAvailable without images: fullDocumentBeforeChange %v, want null", v)
		}
		// ...and required fails the stream with NoMatchingDocument.
		nextErr(t, required, 47)

		// With changeStreamPreAndPostImages (create, or collMod later) the
		// images are kept with each change.
		if err := db.RunCommand(ctx, bson.D{{Key: "create", Value: "images"}, {Key: "changeStreamPreAndPostImages", Value: bson.D{{Key: "enabled", Value: true}}}}).Err(); err != nil {
			t.Fatal(err)
		}
		imgs := db.Collection("images")
		ok(t)(imgs.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 1}}))
		withImages := watch(t, imgs, nil, options.ChangeStream().SetFullDocument(options.Required).SetFullDocumentBeforeChange(options.Required))
		ok(t)(imgs.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "a", Value: 1}}}}))
		ok(t)(imgs.ReplaceOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "b", Value: 1}}))
		ok(t)(imgs.DeleteOne(ctx, bson.D{{Key: "_id", Value: 1}}))
		upd := next(t, withImages)
		expect(t, upd, "fullDocument", bson.D{{Key: "_id", Value: int32(1)}, {Key: "a", Value: int32(2)}})
		expect(t, upd, "fullDocumentBeforeChange", bson.D{{Key: "_id", Value: int32(1)}, {Key: "a", Value: int32(1)}})
		rep := next(t, withImages)
		expect(t, rep, "fullDocumentBeforeChange", bson.D{{Key: "_id", Value: int32(1)}, {Key: "a", Value: int32(2)}})
		del := next(t, withImages)
		expect(t, del, "fullDocumentBeforeChange", bson.D{{Key: "_id", Value: int32(1)}, {Key: "b", Value: int32(1)}})
		if err := db.RunCommand(ctx, bson.D{{Key: "collMod", Value: "full"}, {Key: "changeStreamPreAndPostImages", Value: bson.D{{Key: "enabled", Value: true}}}}).Err(); err != nil {
			t.Fatal(err)
		}
		ok(t)(coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: 10}}}}))
		// The second $inc predates collMod: no image for it (required fails);
		// the update after collMod has one.
		second := next(t, lookupCS)
		if cs, err := coll.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetFullDocumentBeforeChange(options.Required).SetResumeAfter(lookup(ev, "_id"))); err == nil {
			nextErr(t, closeOnCleanup(t, cs, nil), 47) // the first batch may be empty
		} else if codeOf(err) != 47 {
			t.Errorf("a required pre-image that was not kept: %v, want 47", err)
		}
		afterMod := watch(t, coll, nil, options.ChangeStream().SetFullDocumentBeforeChange(options.Required).SetResumeAfter(lookup(second, "_id")))
		expect(t, next(t, afterMod), "fullDocumentBeforeChange", bson.D{{Key: "_id", Value: int32(1)}, {Key: "a", Value: int32(3)}})
		for _, tc := range []struct {
			opt  bson.D
			code int
		}{
			{bson.D{{Key: "enabled", Value: "yes"}}, 14},
			{bson.D{}, 40414},
			{bson.D{{Key: "enabled", Value: true}, {Key: "x", Value: 1}}, 40415},
		} {
			if err := db.RunCommand(ctx, bson.D{{Key: "collMod", Value: "full"}, {Key: "changeStreamPreAndPostImages", Value: tc.opt}}).Err(); codeOf(err) != tc.code {
				t.Errorf("collMod changeStreamPreAndPostImages %v: %v, want %d", tc.opt, err, tc.code)
			}
		}
	})

	t.Run("drop, rename and invalidate; startAfter", func(t *testing.T) {
		coll := db.Collection("dropped")
		ok(t)(coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}))
		cs := watch(t, coll, nil, options.ChangeStream())
		if err := coll.Drop(ctx); err != nil {
			t.Fatal(err)
		}
		expect(t, next(t, cs), "operationType", "drop")
		inv := next(t, cs)
		expect(t, inv, "operationType", "invalidate")
		if cs.Next(ctx) || cs.ID() != 0 {
			t.Fatalf("the stream went on after its invalidate (id %d, err %v)", cs.ID(), cs.Err())
		}
		// resumeAfter an invalidate is refused; startAfter goes on.
		if _, err := coll.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetResumeAfter(lookup(inv, "_id"))); codeOf(err) != 260 {
			t.Errorf("resumeAfter an invalidate: %v, want 260", err)
		}
		after := watch(t, coll, nil, options.ChangeStream().SetStartAfter(lookup(inv, "_id")))
		ok(t)(coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 2}}))
		expect(t, next(t, after), "documentKey", bson.D{{Key: "_id", Value: int32(2)}})

		renamed := db.Collection("torename")
		ok(t)(renamed.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}))
		rs := watch(t, renamed, nil, options.ChangeStream())
		if err := client.Database("admin").RunCommand(ctx, bson.D{{Key: "renameCollection", Value: "cs.torename"}, {Key: "to", Value: "cs.renamedTo"}}).Err(); err != nil {
			t.Fatal(err)
		}
		ren := next(t, rs)
		expect(t, ren, "operationType", "rename")
		expect(t, ren, "to", bson.D{{Key: "db", Value: "cs"}, {Key: "coll", Value: "renamedTo"}})
		expect(t, next(t, rs), "operationType", "invalidate")
	})

	t.Run("database and deployment streams", func(t *testing.T) {
		other := client.Database("cs_db")
		ok(t)(other.Collection("x").InsertOne(ctx, bson.D{{Key: "_id", Value: 0}}))
		dbs := watchDB(t, other, options.ChangeStream())
		all := watchAll(t, client, options.ChangeStream())
		ok(t)(other.Collection("a").InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}))
		ok(t)(other.Collection("b").InsertOne(ctx, bson.D{{Key: "_id", Value: 2}}))
		ok(t)(client.Database("cs_db2").Collection("c").InsertOne(ctx, bson.D{{Key: "_id", Value: 3}}))
		expect(t, next(t, dbs), "ns.coll", "a")
		expect(t, next(t, dbs), "ns.coll", "b")
		var seen []any
		for range 3 {
			ev := next(t, all)
			if lookup(ev, "operationType") == "insert" {
				seen = append(seen, lookup(ev, "documentKey._id"))
			}
		}
		if !reflect.DeepEqual(seen, []any{int32(1), int32(2), int32(3)}) {
			t.Errorf("the deployment stream saw inserts %v, want 1 2 3", seen)
		}
		if err := other.Drop(ctx); err != nil {
			t.Fatal(err)
		}
		for {
			ev := next(t, dbs)
			if op := lookup(ev, "operationType"); op == "dropDatabase" {
				break
			} else if op != "drop" {
				t.Fatalf("before dropDatabase: %v", ev)
			}
		}
		expect(t, next(t, dbs), "operationType", "invalidate")
	})

	t.Run("showExpandedEvents", func(t *testing.T) {
		coll := db.Collection("expanded")
		cs := watchDB(t, db, options.ChangeStream().SetShowExpandedEvents(true))
		if err := db.CreateCollection(ctx, "expanded"); err != nil {
			t.Fatal(err)
		}
		if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{Key: "a", Value: 1}}}); err != nil {
			t.Fatal(err)
		}
		if err := coll.Indexes().DropOne(ctx, "a_1"); err != nil {
			t.Fatal(err)
		}
		if err := db.RunCommand(ctx, bson.D{{Key: "collMod", Value: "expanded"}, {Key: "validator", Value: bson.D{{Key: "a", Value: bson.D{{Key: "$exists", Value: true}}}}}}).Err(); err != nil {
			t.Fatal(err)
		}
		ok(t)(coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 1}, {Key: "o", Value: bson.D{{Key: "0", Value: "x"}, {Key: "pad", Value: "long enough that a nested diff is smaller"}}}}))
		ok(t)(coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "o.0", Value: "y"}}}}))
		create := next(t, cs)
		expect(t, create, "operationType", "create")
		if _, ok := lookup(create, "collectionUUID").(bson.Binary); !ok {
			t.Errorf("create without collectionUUID: %v", create)
		}
		ci := next(t, cs)
		expect(t, ci, "operationType", "createIndexes")
		expect(t, ci, "operationDescription.indexes.0.name", "a_1")
		di := next(t, cs)
		expect(t, di, "operationType", "dropIndexes")
		expect(t, di, "operationDescription.indexes.0.name", "a_1")
		expect(t, next(t, cs), "operationType", "modify")
		expect(t, next(t, cs), "operationType", "insert")
		upd := next(t, cs)
		expect(t, upd, "updateDescription.disambiguatedPaths", bson.D{{Key: "o.0", Value: bson.A{"o", "0"}}})
	})

	t.Run("later stages", func(t *testing.T) {
		coll := db.Collection("staged")
		cs := watch(t, coll, mongo.Pipeline{{{Key: "$match", Value: bson.D{{Key: "fullDocument.keep", Value: true}}}}, {{Key: "$project", Value: bson.D{{Key: "fullDocument.keep", Value: 0}}}}}, options.ChangeStream())
		ok(t)(coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "keep", Value: false}}))
		ok(t)(coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 2}, {Key: "keep", Value: true}, {Key: "v", Value: 5}}))
		ev := next(t, cs)
		expect(t, ev, "fullDocument", bson.D{{Key: "_id", Value: int32(2)}, {Key: "v", Value: int32(5)}})
		// A stage that changes _id ends the stream: 280.
		bad := watch(t, coll, mongo.Pipeline{{{Key: "$project", Value: bson.D{{Key: "_id", Value: 0}}}}}, options.ChangeStream())
		ok(t)(coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 3}}))
		nextErr(t, bad, 280)
		var ce mongo.CommandError
		if !errors.As(bad.Err(), &ce) || !ce.HasErrorLabel("NonResumableChangeStreamError") {
			t.Errorf("280 without the NonResumableChangeStreamError label: %v", bad.Err())
		}
	})

	// A $match on operationType, ns or documentKey is prefiltered
	// (changestream.Stream.Prefilter): its stream returns the same events,
	// tokens included, as one whose $match is an $expr the prefilter does
	// not read.
	t.Run("prefiltered match", func(t *testing.T) {
		coll := db.Collection("prefiltered")
		kinds := bson.A{"delete", "replace"}
		pre := watch(t, coll, mongo.Pipeline{{{Key: "$match", Value: bson.D{{Key: "operationType", Value: bson.D{{Key: "$in", Value: kinds}}}}}}}, options.ChangeStream())
		ref := watch(t, coll, mongo.Pipeline{{{Key: "$match", Value: bson.D{{Key: "$expr", Value: bson.D{{Key: "$in", Value: bson.A{"$operationType", kinds}}}}}}}}, options.ChangeStream())
		watchDBWith := func(p mongo.Pipeline) *mongo.ChangeStream {
			cs, err := db.Watch(ctx, p, options.ChangeStream().SetMaxAwaitTime(200*time.Millisecond))
			return closeOnCleanup(t, cs, err)
		}
		byKey := watchDBWith(mongo.Pipeline{{{Key: "$match", Value: bson.D{{Key: "documentKey._id", Value: 1}, {Key: "ns.coll", Value: "prefiltered"}}}}})
		byKeyRef := watchDBWith(mongo.Pipeline{{{Key: "$match", Value: bson.D{{Key: "$expr", Value: bson.D{{Key: "$and", Value: bson.A{
			bson.D{{Key: "$eq", Value: bson.A{"$documentKey._id", 1}}}, bson.D{{Key: "$eq", Value: bson.A{"$ns.coll", "prefiltered"}}}}}}}}}}})
		ok(t)(coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "v", Value: 1}}))
		ok(t)(coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "v", Value: 2}}}}))
		ok(t)(coll.ReplaceOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "v", Value: 3}}))
		ok(t)(coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 2}}))
		ok(t)(coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: 1}}))
		ok(t)(coll.DeleteOne(ctx, bson.D{{Key: "_id", Value: 2}}))
		for i, want := range []string{"replace", "delete", "delete"} {
			a, b := next(t, pre), next(t, ref)
			expect(t, a, "operationType", want)
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("event %d: prefiltered %v, matched after building %v", i, a, b)
			}
		}
		for i, want := range []string{"insert", "update", "replace", "delete"} {
			a, b := next(t, byKey), next(t, byKeyRef)
			expect(t, a, "operationType", want)
			if !reflect.DeepEqual(a, b) {
				t.Fatalf("event %d: prefiltered by its head %v, matched after building %v", i, a, b)
			}
		}
	})

	// A transaction's writes reach the stream as one event per statement,
	// each carrying the transaction's lsid and txnNumber, only once it
	// commits; an aborted transaction's writes never do (the commit's one
	// applyOps entry, unwound).
	t.Run("transactions", func(t *testing.T) {
		coll := db.Collection("txn")
		ok(t)(coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 0}, {Key: "n", Value: 0}}))
		cs := watch(t, coll, nil, options.ChangeStream())
		sess, err := client.StartSession()
		if err != nil {
			t.Fatal(err)
		}
		defer sess.EndSession(ctx)
		sc := mongo.NewSessionContext(ctx, sess)
		run := func(commit bool, base int) {
			t.Helper()
			if err := sess.StartTransaction(); err != nil {
				t.Fatal(err)
			}
			ok(t)(coll.InsertOne(sc, bson.D{{Key: "_id", Value: base + 1}}))
			ok(t)(coll.InsertOne(sc, bson.D{{Key: "_id", Value: base + 2}}))
			ok(t)(coll.UpdateOne(sc, bson.D{{Key: "_id", Value: 0}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}))
			if commit {
				err = sess.CommitTransaction(ctx)
			} else {
				err = sess.AbortTransaction(ctx)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		run(false, 100) // aborted: no event
		run(true, 200)
		ok(t)(coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 300}})) // after the commit, outside any transaction
		want := []struct {
			op string
			id int32
		}{{"insert", 201}, {"insert", 202}, {"update", 0}}
		var txnNumber any
		for i, w := range want {
			ev := next(t, cs)
			expect(t, ev, "operationType", w.op)
			expect(t, ev, "documentKey", bson.D{{Key: "_id", Value: w.id}})
			if lookup(ev, "lsid") == nil || lookup(ev, "txnNumber") == nil {
				t.Errorf("event %d of the transaction lacks lsid or txnNumber: %v", i, ev)
			}
			if i == 0 {
				txnNumber = lookup(ev, "txnNumber")
			} else if !reflect.DeepEqual(lookup(ev, "txnNumber"), txnNumber) {
				t.Errorf("event %d: txnNumber %v, want the transaction's %v", i, lookup(ev, "txnNumber"), txnNumber)
			}
		}
		after := next(t, cs)
		expect(t, after, "documentKey", bson.D{{Key: "_id", Value: int32(300)}})
		if lookup(after, "txnNumber") != nil {
			t.Errorf("a write outside a transaction carries a txnNumber: %v", after)
		}
	})

	t.Run("transaction pre-images", func(t *testing.T) {
		// A committed transaction that updates one document twice, replaces
		// one and deletes one, on a collection keeping images: each event
		// carries the document as it was just before that statement, the
		// second update's the first update's result.
		if err := db.RunCommand(ctx, bson.D{{Key: "create", Value: "txnImages"}, {Key: "changeStreamPreAndPostImages", Value: bson.D{{Key: "enabled", Value: true}}}}).Err(); err != nil {
			t.Fatal(err)
		}
		coll := db.Collection("txnImages")
		for i := range 3 {
			ok(t)(coll.InsertOne(ctx, bson.D{{Key: "_id", Value: i}, {Key: "v", Value: i * 10}}))
		}
		cs := watch(t, coll, nil, options.ChangeStream().SetFullDocumentBeforeChange(options.Required).SetFullDocument(options.Required))
		sess, err := client.StartSession()
		if err != nil {
			t.Fatal(err)
		}
		defer sess.EndSession(ctx)
		sc := mongo.NewSessionContext(ctx, sess)
		if err := sess.StartTransaction(); err != nil {
			t.Fatal(err)
		}
		ok(t)(coll.UpdateOne(sc, bson.D{{Key: "_id", Value: 0}}, bson.D{{Key: "$set", Value: bson.D{{Key: "v", Value: 1}}}}))
		ok(t)(coll.UpdateOne(sc, bson.D{{Key: "_id", Value: 0}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "v", Value: 1}}}}))
		ok(t)(coll.ReplaceOne(sc, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "w", Value: "new"}}))
		ok(t)(coll.DeleteOne(sc, bson.D{{Key: "_id", Value: 2}}))
		if err := sess.CommitTransaction(ctx); err != nil {
			t.Fatal(err)
		}
		doc := func(id int32, k string, v any) bson.D { return bson.D{{Key: "_id", Value: id}, {Key: k, Value: v}} }
		for i, w := range []struct {
			op        string
			pre, post bson.D // post nil: no fullDocument (a delete)
		}{
			{"update", doc(0, "v", int32(0)), doc(0, "v", int32(1))},
			{"update", doc(0, "v", int32(1)), doc(0, "v", int32(2))},
			{"replace", doc(1, "v", int32(10)), doc(1, "w", "new")},
			{"delete", doc(2, "v", int32(20)), nil},
		} {
			ev := next(t, cs)
			expect(t, ev, "operationType", w.op)
			expect(t, ev, "fullDocumentBeforeChange", w.pre)
			if w.post != nil {
				expect(t, ev, "fullDocument", w.post)
			}
			if lookup(ev, "txnNumber") == nil {
				t.Errorf("event %d is not the transaction's: %v", i, ev)
			}
		}
	})

	t.Run("pre-image expiry", func(t *testing.T) {
		// setClusterParameter's changeStreamOptions.preAndPostImages.
		// expireAfterSeconds makes the remover (here every second) delete
		// pre-images that old; a stream then shows null where the image
		// was. getClusterParameter reads the setting back.
		admin := client.Database("admin")
		run := func(cmd bson.D) bson.Raw {
			t.Helper()
			res, err := admin.RunCommand(ctx, cmd).Raw()
			if err != nil {
				t.Fatalf("%v: %v", cmd, err)
			}
			return res
		}
		run(bson.D{{Key: "setParameter", Value: 1}, {Key: "expiredChangeStreamPreImageRemovalJobSleepSecs", Value: 1}})
		if err := db.RunCommand(ctx, bson.D{{Key: "create", Value: "expiring"}, {Key: "changeStreamPreAndPostImages", Value: bson.D{{Key: "enabled", Value: true}}}}).Err(); err != nil {
			t.Fatal(err)
		}
		coll := db.Collection("expiring")
		ok(t)(coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "v", Value: 1}}))
		cs := watch(t, coll, nil, options.ChangeStream().SetFullDocumentBeforeChange(options.WhenAvailable))
		ok(t)(coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "v", Value: 2}}}}))
		images := client.Database("config").Collection("system.preimages")
		count := func() int64 {
			n, err := images.CountDocuments(ctx, bson.D{})
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
		if count() == 0 {
			t.Fatal("no pre-image kept")
		}
		run(bson.D{{Key: "setClusterParameter", Value: bson.D{{Key: "changeStreamOptions", Value: bson.D{{Key: "preAndPostImages", Value: bson.D{{Key: "expireAfterSeconds", Value: 1}}}}}}}})
		defer run(bson.D{{Key: "setClusterParameter", Value: bson.D{{Key: "changeStreamOptions", Value: bson.D{{Key: "preAndPostImages", Value: bson.D{{Key: "expireAfterSeconds", Value: "off"}}}}}}}})
		got := run(bson.D{{Key: "getClusterParameter", Value: "changeStreamOptions"}})
		p := got.Lookup("clusterParameters", "0")
		if n, _ := p.Document().Lookup("preAndPostImages", "expireAfterSeconds").AsInt64OK(); n != 1 {
			t.Errorf("getClusterParameter: %v, want expireAfterSeconds 1", p)
		}
		if _, _, ok := p.Document().Lookup("clusterParameterTime").TimestampOK(); !ok {
			t.Errorf("getClusterParameter on a member: no clusterParameterTime in %v", p)
		}
		deadline := time.Now().Add(20 * time.Second)
		for count() > 0 && time.Now().Before(deadline) {
			time.Sleep(100 * time.Millisecond)
		}
		if n := count(); n != 0 {
			t.Fatalf("%d pre-images left 20 s after expireAfterSeconds: 1", n)
		}
		ev := next(t, cs)
		if v, ok := field(ev, "fullDocumentBeforeChange"); !ok || v != nil {
			t.Errorf("after the pre-image expired: fullDocumentBeforeChange %v, want null", v)
		}
	})

	t.Run("split large events", func(t *testing.T) {
		// An update whose event holds a 10 MB value twice (updatedFields and
		// the post-image) comes as two fragments with
		// $changeStreamSplitLargeEvent; resuming from the first fragment's
		// token gives the second; refusals have MongoDB's codes.
		if err := db.RunCommand(ctx, bson.D{{Key: "create", Value: "split"}, {Key: "changeStreamPreAndPostImages", Value: bson.D{{Key: "enabled", Value: true}}}}).Err(); err != nil {
			t.Fatal(err)
		}
		coll := db.Collection("split")
		big := strings.Repeat("q", 10<<20)
		ok(t)(coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "value", Value: big}}))
		splitStage := mongo.Pipeline{{{Key: "$changeStreamSplitLargeEvent", Value: bson.D{}}}}
		cs := watch(t, coll, splitStage, options.ChangeStream().SetFullDocument(options.Required))
		whole := watch(t, coll, nil, options.ChangeStream().SetFullDocument(options.Required))
		ok(t)(coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$set", Value: bson.D{{Key: "value", Value: "z" + big}}}}))
		ok(t)(coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 2}}))
		// serverStatus' metrics.changeStreams count as MongoDB's: each
		// event split (again when a resume splits it again), each event
		// that failed a stream without the stage.
		csMetric := func(name string) int64 {
			var st bson.Raw
			if err := client.Database("admin").RunCommand(ctx, bson.D{{Key: "serverStatus", Value: 1}}).Decode(&st); err != nil {
				t.Fatal(err)
			}
			return st.Lookup("metrics", "changeStreams", name).AsInt64()
		}
		split0, failed0 := csMetric("largeEventsSplit"), csMetric("largeEventsFailed")
		var frags []bson.D
		for i := range 2 {
			f := next(t, cs)
			expect(t, f, "splitEvent", bson.D{{Key: "fragment", Value: int32(i + 1)}, {Key: "of", Value: int32(2)}})
			frags = append(frags, f)
		}
		expect(t, frags[0], "operationType", "update")
		if lookup(frags[0], "fullDocument.value") == nil && lookup(frags[1], "fullDocument.value") == nil {
			t.Errorf("no fragment holds fullDocument")
		}
		expect(t, next(t, cs), "documentKey", bson.D{{Key: "_id", Value: int32(2)}})
		nextErr(t, whole, 10334) // without the stage, as MongoDB: BSONObjectTooLarge
		if d := csMetric("largeEventsSplit") - split0; d != 1 {
			t.Errorf("metrics.changeStreams.largeEventsSplit rose by %d, want 1", d)
		}
		if d := csMetric("largeEventsFailed") - failed0; d != 1 {
			t.Errorf("metrics.changeStreams.largeEventsFailed rose by %d, want 1", d)
		}
		first := lookup(frags[0], "_id")
		resumed := watch(t, coll, splitStage, options.ChangeStream().SetFullDocument(options.Required).SetResumeAfter(first))
		again := next(t, resumed)
		expect(t, again, "splitEvent", bson.D{{Key: "fragment", Value: int32(2)}, {Key: "of", Value: int32(2)}})
		if !reflect.DeepEqual(again, frags[1]) {
			t.Errorf("resumed after fragment 1: a different second fragment")
		}
		expect(t, next(t, resumed), "documentKey", bson.D{{Key: "_id", Value: int32(2)}})
		if d := csMetric("largeEventsSplit") - split0; d != 2 {
			t.Errorf("metrics.changeStreams.largeEventsSplit rose by %d after the resumed split, want 2", d)
		}

		agg := func(pipeline bson.A) error {
			return db.RunCommand(ctx, bson.D{{Key: "aggregate", Value: "split"}, {Key: "pipeline", Value: pipeline}, {Key: "cursor", Value: bson.D{}}}).Err()
		}
		stage := func(d bson.D) bson.D { return bson.D{{Key: "$changeStreamSplitLargeEvent", Value: d}} }
		cstage := func(opts bson.D) bson.D { return bson.D{{Key: "$changeStream", Value: opts}} }
		for _, tc := range []struct {
			name     string
			pipeline bson.A
			code     int
		}{
			{"not the last stage", bson.A{cstage(bson.D{}), stage(bson.D{}), bson.D{{Key: "$match", Value: bson.D{}}}}, 7182802},
			{"not {}", bson.A{cstage(bson.D{}), stage(bson.D{{Key: "a", Value: 1}})}, 7182800},
			{"twice", bson.A{cstage(bson.D{}), stage(bson.D{}), stage(bson.D{})}, 7182802},
			{"a fragment's token without it", bson.A{cstage(bson.D{{Key: "resumeAfter", Value: first}})}, 280},
			{"outside a change stream", bson.A{bson.D{{Key: "$match", Value: bson.D{}}}, stage(bson.D{})}, 20},
		} {
			if err := agg(tc.pipeline); codeOf(err) != tc.code {
				t.Errorf("%s: %v, want code %d", tc.name, err, tc.code)
			}
		}
	})

	t.Run("explain", func(t *testing.T) {
		// explain of a change stream aggregate, as MongoDB 7.0 gives it at
		// queryPlanner verbosity: a $cursor over local.oplog.rs, then the
		// stages $changeStream unfolds into, then the pipeline's own.
		coll := db.Collection("explained")
		ok(t)(coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}))
		cs := watch(t, coll, nil, options.ChangeStream())
		ok(t)(coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 2}}))
		tok := mustRaw(t, lookup(next(t, cs), "_id"))
		stageNames := func(reply bson.Raw) []string {
			var names []string
			stages, err := reply.LookupErr("stages")
			if err != nil {
				t.Fatalf("explain without stages: %v", reply)
			}
			vals, _ := stages.Array().Values()
			for _, v := range vals {
				el := v.Document().Index(0)
				name := el.Key()
				if name == "$changeStream" {
					name = el.Value().Document().Lookup("stage").StringValue()
				}
				names = append(names, name)
			}
			return names
		}
		stage := func(reply bson.Raw, i int) bson.Raw {
			vals, _ := reply.Lookup("stages").Array().Values()
			return vals[i].Document()
		}
		pipeline := bson.A{
			bson.D{{Key: "$changeStream", Value: bson.D{{Key: "fullDocument", Value: "updateLookup"}}}},
			bson.D{{Key: "$match", Value: bson.D{{Key: "operationType", Value: "insert"}}}},
			bson.D{{Key: "$changeStreamSplitLargeEvent", Value: bson.D{}}},
		}
		var reply bson.Raw
		if err := db.RunCommand(ctx, bson.D{{Key: "aggregate", Value: "explained"}, {Key: "pipeline", Value: pipeline}, {Key: "explain", Value: true}}).Decode(&reply); err != nil {
			t.Fatal(err)
		}
		want := []string{"$cursor", "internalUnwindTransaction", "internalTransform", "internalCheckInvalidate", "internalCheckResumability", "internalAddPostImage", "$match", "$changeStreamSplitLargeEvent"}
		if got := stageNames(reply); !reflect.DeepEqual(got, want) {
			t.Errorf("explain's stages: %v, want %v", got, want)
		}
		if _, err := reply.LookupErr("cursor"); err == nil {
			t.Errorf("explain opened a cursor: %v", reply)
		}
		cur := stage(reply, 0)
		if ns := cur.Lookup("$cursor", "queryPlanner", "namespace").StringValue(); ns != "local.oplog.rs" {
			t.Errorf("$cursor's namespace: %q", ns)
		}
		if st := cur.Lookup("$cursor", "queryPlanner", "winningPlan", "stage").StringValue(); st != "COLLSCAN" {
			t.Errorf("$cursor's plan: %q", st)
		}
		from, err := cur.LookupErr("$cursor", "queryPlanner", "winningPlan", "filter", "ts", "$gte")
		if err != nil || from.Type != bson.TypeTimestamp {
			t.Errorf("$cursor's filter: %v", cur)
		}
		opts := stage(reply, 2).Lookup("$changeStream", "options")
		if fd := opts.Document().Lookup("fullDocument").StringValue(); fd != "updateLookup" {
			t.Errorf("internalTransform's fullDocument: %q", fd)
		}
		if start, err := opts.Document().LookupErr("startAtOperationTime"); err != nil || !start.Equal(from) {
			t.Errorf("internalTransform's startAtOperationTime %v, the oplog read's start %v", start, from)
		}

		// The explain command, resuming from an event: its token is checked
		// for (internalEnsureResumeTokenPresent); at executionStats the
		// stream runs to the log's end and each stage counts what it saw.
		explain := func(verbosity string, pipeline bson.A) (bson.Raw, error) {
			var r bson.Raw
			err := db.RunCommand(ctx, bson.D{{Key: "explain", Value: bson.D{{Key: "aggregate", Value: "explained"}, {Key: "pipeline", Value: pipeline}, {Key: "cursor", Value: bson.D{}}}}, {Key: "verbosity", Value: verbosity}}).Decode(&r)
			return r, err
		}
		resumed := bson.A{bson.D{{Key: "$changeStream", Value: bson.D{{Key: "resumeAfter", Value: tok}, {Key: "fullDocumentBeforeChange", Value: "whenAvailable"}}}}}
		reply, err = explain("queryPlanner", resumed)
		if err != nil {
			t.Fatal(err)
		}
		want = []string{"$cursor", "internalUnwindTransaction", "internalTransform", "internalCheckInvalidate", "internalCheckResumability", "internalAddPreImage", "internalEnsureResumeTokenPresent"}
		if got := stageNames(reply); !reflect.DeepEqual(got, want) {
			t.Errorf("explain's stages resuming: %v, want %v", got, want)
		}
		if got := stage(reply, 6).Lookup("$changeStream", "resumeToken"); !bytes.Equal(got.Document(), tok) {
			t.Errorf("internalEnsureResumeTokenPresent's token %v, want %v", got, tok)
		}
		if got := stage(reply, 2).Lookup("$changeStream", "options", "resumeAfter"); !bytes.Equal(got.Document(), tok) {
			t.Errorf("internalTransform's resumeAfter %v, want %v", got, tok)
		}
		ok(t)(coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 3}}))
		ok(t)(coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 4}}))
		ok(t)(coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 3}}, bson.D{{Key: "$set", Value: bson.D{{Key: "a", Value: 1}}}}))
		inserts := bson.A{bson.D{{Key: "$changeStream", Value: bson.D{{Key: "resumeAfter", Value: tok}}}}, bson.D{{Key: "$match", Value: bson.D{{Key: "operationType", Value: "insert"}}}}}
		for _, verbosity := range []string{"executionStats", "allPlansExecution"} {
			reply, err := explain(verbosity, inserts)
			if err != nil {
				t.Fatalf("%s: %v", verbosity, err)
			}
			want := []string{"$cursor", "internalUnwindTransaction", "internalTransform", "internalCheckInvalidate", "internalCheckResumability", "internalEnsureResumeTokenPresent", "$match"}
			if got := stageNames(reply); !reflect.DeepEqual(got, want) {
				t.Fatalf("%s: stages %v, want %v", verbosity, got, want)
			}
			es := stage(reply, 0).Lookup("$cursor", "executionStats").Document()
			entries := es.Lookup("nReturned").Int64()
			if entries < 4 || es.Lookup("totalDocsExamined").Int64() != entries || es.Lookup("executionStages", "stage").StringValue() != "COLLSCAN" {
				t.Errorf("%s: $cursor's executionStats %v: want the 4 entries from the token's on, or more", verbosity, es)
			}
			if _, err := es.LookupErr("allPlansExecution"); (err == nil) != (verbosity == "allPlansExecution") {
				t.Errorf("%s: allPlansExecution in %v", verbosity, es)
			}
			// The token's insert and three changes since: four events
			// built, three past the resume point.
			for i, n := range []int64{entries, 4, 4, 3, 3} {
				if got := stage(reply, i+1).Lookup("nReturned").Int64(); got != n {
					t.Errorf("%s: %s returned %d, want %d", verbosity, want[i+1], got, n)
				}
			}
		}
		if r, err := explain("queryPlanner", inserts); err != nil {
			t.Fatal(err)
		} else if _, err := stage(r, 2).LookupErr("nReturned"); err == nil {
			t.Errorf("queryPlanner with counts: %v", r) // it does not run the stream
		}
		for _, tc := range []struct {
			name, verbosity string
			pipeline        bson.A
			code            int
		}{
			{"a stage not allowed after it", "queryPlanner", bson.A{resumed[0], bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: nil}}}}}, 20},
			{"not the first stage", "queryPlanner", bson.A{bson.D{{Key: "$match", Value: bson.D{}}}, resumed[0]}, 40602},
			{"an unknown option", "queryPlanner", bson.A{bson.D{{Key: "$changeStream", Value: bson.D{{Key: "bogus", Value: 1}}}}}, 40415},
		} {
			if _, err := explain(tc.verbosity, tc.pipeline); codeOf(err) != tc.code {
				t.Errorf("explain, %s: %v, want code %d", tc.name, err, tc.code)
			}
		}
	})

	t.Run("paced getMores", func(t *testing.T) {
		// Twenty-five streams on a collection while four writers insert:
		// each stream sees every insert once, and the getMores of a stream
		// that return events are at least the pace apart (25 open streams
		// or more: 5 ms), so a batch holds several commit groups' events.
		const streams, n, writers = 25, 400, 4
		ids := make([]int64, streams)
		sctxs := make([]context.Context, streams) // a cursor is its session's
		for i := range ids {
			sess, err := client.StartSession()
			if err != nil {
				t.Fatal(err)
			}
			defer sess.EndSession(ctx)
			sctxs[i] = mongo.NewSessionContext(ctx, sess)
			var res struct {
				Cursor struct {
					ID int64 `bson:"id"`
				} `bson:"cursor"`
			}
			if err := db.RunCommand(sctxs[i], bson.D{{Key: "aggregate", Value: "paced"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$changeStream", Value: bson.D{}}}}},
				{Key: "cursor", Value: bson.D{}}}).Decode(&res); err != nil {
				t.Fatal(err)
			}
			ids[i] = res.Cursor.ID
			defer db.RunCommand(sctxs[i], bson.D{{Key: "killCursors", Value: "paced"}, {Key: "cursors", Value: bson.A{res.Cursor.ID}}})
		}
		type batch struct {
			at   time.Time
			keys []int32
		}
		got := make([][]batch, streams)
		done := make(chan int, streams)
		for i, id := range ids {
			go func() {
				defer func() { done <- i }()
				seen := 0
				for seen < n {
					var res struct {
						Cursor struct {
							NextBatch []struct {
								DocumentKey struct {
									ID int32 `bson:"_id"`
								} `bson:"documentKey"`
							} `bson:"nextBatch"`
						} `bson:"cursor"`
					}
					if err := db.RunCommand(sctxs[i], bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "paced"}, {Key: "maxTimeMS", Value: 2000}}).Decode(&res); err != nil {
						t.Error(err)
						return
					}
					if len(res.Cursor.NextBatch) == 0 {
						t.Errorf("stream %d: an empty batch after %d events", i, seen)
						return
					}
					b := batch{at: time.Now()}
					for _, ev := range res.Cursor.NextBatch {
						b.keys = append(b.keys, ev.DocumentKey.ID)
					}
					got[i] = append(got[i], b)
					seen += len(b.keys)
				}
			}()
		}
		coll := db.Collection("paced")
		for w := range writers {
			go func() {
				for j := w; j < n; j += writers {
					if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: int32(j)}}); err != nil {
						t.Error(err)
					}
				}
			}()
		}
		for range streams {
			<-done
		}
		const pace = 5 * time.Millisecond
		for i, bs := range got {
			seen := map[int32]bool{}
			for _, b := range bs {
				for _, key := range b.keys {
					if seen[key] {
						t.Fatalf("stream %d: the insert of _id %d twice", i, key)
					}
					seen[key] = true
				}
			}
			if len(seen) != n {
				t.Errorf("stream %d saw %d events, want %d", i, len(seen), n)
				continue
			}
			// The server spaced the batches at least the pace apart; their
			// arrival here may bunch up, so the check is on the whole run
			// (with a margin for the first batch's delay in arriving).
			if span := bs[len(bs)-1].at.Sub(bs[0].at); time.Duration(len(bs)-1)*pace > span+5*time.Millisecond {
				t.Errorf("stream %d: %d batches in %v, want at most one per %v", i, len(bs), span, pace)
			}
		}
	})

	t.Run("refusals", func(t *testing.T) {
		coll := db.Collection("refuse")
		ok(t)(coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}))
		if err := db.CreateView(ctx, "refuseView", "refuse", mongo.Pipeline{}); err != nil {
			t.Fatal(err)
		}
		other := watch(t, db.Collection("refuseOther"), nil, options.ChangeStream())
		ok(t)(db.Collection("refuseOther").InsertOne(ctx, bson.D{{Key: "_id", Value: 1}}))
		otherTok := lookup(next(t, other), "_id")
		agg := func(db string, target any, pipeline bson.A) error {
			return client.Database(db).RunCommand(ctx, bson.D{{Key: "aggregate", Value: target}, {Key: "pipeline", Value: pipeline}, {Key: "cursor", Value: bson.D{}}}).Err()
		}
		stage := func(opts bson.D) bson.D { return bson.D{{Key: "$changeStream", Value: opts}} }
		for _, tc := range []struct {
			name     string
			db       string
			target   any
			pipeline bson.A
			code     int
		}{
			{"not the first stage", "cs", "refuse", bson.A{bson.D{{Key: "$match", Value: bson.D{}}}, stage(bson.D{})}, 40602},
			{"in $facet", "cs", "refuse", bson.A{bson.D{{Key: "$facet", Value: bson.D{{Key: "f", Value: bson.A{stage(bson.D{})}}}}}}, 40600},
			{"on a view", "cs", "refuseView", bson.A{stage(bson.D{})}, 166},
			{"an unknown option", "cs", "refuse", bson.A{stage(bson.D{{Key: "bogus", Value: 1}})}, 40415},
			{"a bad fullDocument", "cs", "refuse", bson.A{stage(bson.D{{Key: "fullDocument", Value: "sometimes"}})}, 2},
			{"not an object", "cs", "refuse", bson.A{bson.D{{Key: "$changeStream", Value: 1}}}, 50808},
			{"a token of another collection", "cs", "refuse", bson.A{stage(bson.D{{Key: "resumeAfter", Value: otherTok}})}, 280},
			{"a token that is not hex", "cs", "refuse", bson.A{stage(bson.D{{Key: "resumeAfter", Value: bson.D{{Key: "_data", Value: "xyz"}}}})}, 9},
			{"a token that does not decode", "cs", "refuse", bson.A{stage(bson.D{{Key: "resumeAfter", Value: bson.D{{Key: "_data", Value: "0102"}}}})}, 260},
			{"resumeAfter and startAfter", "cs", "refuse", bson.A{stage(bson.D{{Key: "resumeAfter", Value: otherTok}, {Key: "startAfter", Value: otherTok}})}, 50865},
			{"a token and startAtOperationTime", "cs", "refuse", bson.A{stage(bson.D{{Key: "resumeAfter", Value: otherTok}, {Key: "startAtOperationTime", Value: bson.Timestamp{T: 1, I: 1}}})}, 40674},
			{"history lost", "cs", "refuse", bson.A{stage(bson.D{{Key: "startAtOperationTime", Value: bson.Timestamp{T: 1, I: 1}}})}, 286},
			{"allChangesForCluster off admin", "cs", 1, bson.A{stage(bson.D{{Key: "allChangesForCluster", Value: true}})}, 72},
			{"admin without allChangesForCluster", "admin", 1, bson.A{stage(bson.D{})}, 73},
			{"a system collection", "cs", "system.views", bson.A{stage(bson.D{})}, 73},
			{"a stage not allowed after it", "cs", "refuse", bson.A{stage(bson.D{}), bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: nil}}}}}, 20},
		} {
			if err := agg(tc.db, tc.target, tc.pipeline); codeOf(err) != tc.code {
				t.Errorf("%s: %v, want code %d", tc.name, err, tc.code)
			}
		}
	})
}

// startOneMemberSet starts `cairn serve --replSet rs0`, initiates a set of
// it alone and returns a client of the set.
func startOneMemberSet(t *testing.T, tmp string) *mongo.Client {
	t.Helper()
	client, _ := startOneMemberSetProc(t, tmp)
	return client
}

// startOneMemberSetProc is startOneMemberSet, and the member's process.
func startOneMemberSetProc(t *testing.T, tmp string) (*mongo.Client, *memberProc) {
	t.Helper()
	bin := buildCairnBinary(t, tmp)
	port := freePorts(t, 1)[0]
	host := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	member := startMember(t, bin, filepath.Join(tmp, "m0"), port)
	ctx := context.Background()
	direct := directClient(t, host)
	defer direct.Disconnect(ctx)
	cfg := bson.D{{Key: "_id", Value: "rs0"}, {Key: "members", Value: bson.A{bson.D{{Key: "_id", Value: 0}, {Key: "host", Value: host}}}}}
	if err := direct.Database("admin").RunCommand(ctx, bson.D{{Key: "replSetInitiate", Value: cfg}}).Err(); err != nil {
		t.Fatalf("replSetInitiate: %v", err)
	}
	waitHealthy(t, []string{host}, 1)
	client, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + host + "/?replicaSet=rs0").SetServerSelectionTimeout(testnet.ConnectWait))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Disconnect(ctx) })
	return client, member
}

func closeOnCleanup(t *testing.T, cs *mongo.ChangeStream, err error) *mongo.ChangeStream {
	t.Helper()
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	t.Cleanup(func() { cs.Close(context.Background()) })
	return cs
}

func watch(t *testing.T, coll *mongo.Collection, pipeline mongo.Pipeline, opts *options.ChangeStreamOptionsBuilder) *mongo.ChangeStream {
	t.Helper()
	if pipeline == nil {
		pipeline = mongo.Pipeline{}
	}
	cs, err := coll.Watch(context.Background(), pipeline, opts.SetMaxAwaitTime(200*time.Millisecond))
	return closeOnCleanup(t, cs, err)
}

func watchDB(t *testing.T, db *mongo.Database, opts *options.ChangeStreamOptionsBuilder) *mongo.ChangeStream {
	t.Helper()
	cs, err := db.Watch(context.Background(), mongo.Pipeline{}, opts.SetMaxAwaitTime(200*time.Millisecond))
	return closeOnCleanup(t, cs, err)
}

func watchAll(t *testing.T, c *mongo.Client, opts *options.ChangeStreamOptionsBuilder) *mongo.ChangeStream {
	t.Helper()
	cs, err := c.Watch(context.Background(), mongo.Pipeline{}, opts.SetMaxAwaitTime(200*time.Millisecond))
	return closeOnCleanup(t, cs, err)
}

// next is the stream's next event, within ten seconds.
func next(t *testing.T, cs *mongo.ChangeStream) bson.D {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if !cs.Next(ctx) {
		t.Fatalf("no event: %v", cs.Err())
	}
	var d bson.D
	if err := bson.Unmarshal(cs.Current, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// nextErr waits for the stream to fail with code.
func nextErr(t *testing.T, cs *mongo.ChangeStream, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if cs.Next(ctx) {
		t.Fatalf("an event, want error %d: %v", code, cs.Current)
	}
	if got := codeOf(cs.Err()); got != code {
		t.Fatalf("stream error %v, want code %d", cs.Err(), code)
	}
}

func codeOf(err error) int {
	var ce mongo.CommandError
	if errors.As(err, &ce) {
		return int(ce.Code)
	}
	return -1
}

// field is ev's top-level field k, and whether it is there.
func field(ev bson.D, k string) (any, bool) {
	for _, e := range ev {
		if e.Key == k {
			return e.Value, true
		}
	}
	return nil, false
}

// lookup follows a dotted path through documents and arrays.
func lookup(d bson.D, path string) any {
	var cur any = d
	for _, part := range splitDots(path) {
		switch v := cur.(type) {
		case bson.D:
			var found bool
			for _, e := range v {
				if e.Key == part {
					cur, found = e.Value, true
					break
				}
			}
			if !found {
				return nil
			}
		case bson.A:
			i, err := strconv.Atoi(part)
			if err != nil || i >= len(v) {
				return nil
			}
			cur = v[i]
		default:
			return nil
		}
	}
	return cur
}

func splitDots(p string) []string {
	var out []string
	start := 0
	for i := 0; i < len(p); i++ {
		if p[i] == '.' {
			out = append(out, p[start:i])
			start = i + 1
		}
	}
	return append(out, p[start:])
}

func expect(t *testing.T, ev bson.D, path string, want any) {
	t.Helper()
	if got := lookup(ev, path); !reflect.DeepEqual(got, want) {
		t.Errorf("%s = %#v, want %#v\nevent: %v", path, got, want, ev)
	}
}

// ok(t)(f()) fails the test when f returns an error.
func ok(t *testing.T) func(any, error) {
	return func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
}

func mustRaw(t *testing.T, v any) bson.Raw {
	t.Helper()
	b, err := bson.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// tokenData is an event's resume token's _data.
func tokenData(t *testing.T, ev bson.D) string {
	t.Helper()
	s, _ := lookup(ev, "_id._data").(string)
	if s == "" {
		t.Fatalf("event without a resume token: %v", ev)
	}
	return s
}

func tokenOf(t *testing.T, tok bson.Raw) string {
	t.Helper()
	s, ok := tok.Lookup("_data").StringValueOK()
	if !ok {
		t.Fatalf("resume token without _data: %v", tok)
	}
	return s
}

// TestChangeStreamResumesAcrossFailover: three real members; a consumer
// watches a collection while one writer inserts ids 1, 2, 3, … (retryable
// writes, majority); the primary is killed with SIGKILL twice mid-stream.
// The driver resumes the stream on the new primary by itself, and the
// consumer sees every acknowledged insert exactly once, in commit order
// (ids rising); an insert whose acknowledgement was lost at a kill may be
// seen too, once, in its place.
func TestChangeStreamResumesAcrossFailover(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts three servers")
	}
	tmp := t.TempDir()
	bin := buildCairnBinary(t, tmp)
	ports := freePorts(t, 3)
	members := make([]*memberProc, 3)
	hosts := make([]string, 3)
	for i := range members {
		members[i] = startMember(t, bin, filepath.Join(tmp, "m"+strconv.Itoa(i)), ports[i])
		hosts[i] = net.JoinHostPort("127.0.0.1", strconv.Itoa(ports[i]))
	}
	ctx := context.Background()
	cfgMembers := bson.A{}
	for i, h := range hosts {
		cfgMembers = append(cfgMembers, bson.D{{Key: "_id", Value: i}, {Key: "host", Value: h}})
	}
	first := directClient(t, hosts[0])
	if err := first.Database("admin").RunCommand(ctx, bson.D{{Key: "replSetInitiate", Value: bson.D{{Key: "_id", Value: "rs0"}, {Key: "members", Value: cfgMembers}}}}).Err(); err != nil {
		t.Fatalf("replSetInitiate: %v", err)
	}
	first.Disconnect(ctx)
	waitHealthy(t, hosts, 3)
	uri := "mongodb://" + hosts[0] + "," + hosts[1] + "," + hosts[2] + "/?replicaSet=rs0"
	client, err := mongo.Connect(options.Client().ApplyURI(uri).SetRetryWrites(true).SetRetryReads(true).
		SetServerSelectionTimeout(30 * time.Second).SetWriteConcern(writeconcern.Majority()))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Disconnect(ctx)
	coll := client.Database("app").Collection("feed")
	ok(t)(coll.InsertOne(ctx, bson.D{{Key: "_id", Value: int64(0)}}))
	cs, err := coll.Watch(ctx, mongo.Pipeline{}, options.ChangeStream().SetMaxAwaitTime(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close(ctx)

	acked := map[int64]bool{}
	var next int64
	insert := func(deadline time.Duration) {
		t.Helper()
		next++
		start := time.Now()
		for {
			wctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			_, err := coll.InsertOne(wctx, bson.D{{Key: "_id", Value: next}})
			cancel()
			if err == nil {
				acked[next] = true
				return
			}
			if time.Since(start) > deadline {
				t.Fatalf("insert %d: %v", next, err)
			}
			// Retrying the same _id after an error: the write may have
			// committed (then DuplicateKey says so, and it counts once).
			if cmdCode(err) == 11000 {
				acked[next] = true
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// The consumer reads concurrently, through the kills, with one long
	// context (the driver's stream error is sticky: a Next whose context
	// expires ends the stream), until it sees the last insert.
	var last atomic.Int64
	last.Store(-1)
	type result struct {
		ids []int64
		err error
	}
	done := make(chan result, 1)
	rctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	go func() {
		var ids []int64
		for {
			if n := last.Load(); n >= 0 && len(ids) > 0 && ids[len(ids)-1] >= n {
				done <- result{ids: ids}
				return
			}
			if !cs.Next(rctx) {
				done <- result{ids: ids, err: cs.Err()}
				return
			}
			var ev struct {
				Op  string `bson:"operationType"`
				Key struct {
					ID int64 `bson:"_id"`
				} `bson:"documentKey"`
			}
			if err := cs.Decode(&ev); err != nil {
				done <- result{ids: ids, err: err}
				return
			}
			if ev.Op == "insert" {
				ids = append(ids, ev.Key.ID)
			}
		}
	}()
	for range 30 {
		insert(10 * time.Second)
	}
	for round := range 2 {
		p := primaryOf(t, hosts)
		members[p].kill()
		t.Logf("round %d: killed primary %s after insert %d", round, hosts[p], next)
		for range 30 {
			insert(60 * time.Second)
		}
		members[p] = startMember(t, bin, members[p].dir, members[p].port)
		waitHealthy(t, hosts, 3)
	}
	last.Store(next + 1) // the consumer stops at the next insert's event
	insert(10 * time.Second)
	res := <-done
	if res.err != nil {
		t.Fatalf("the stream failed after %d events: %v (events %v)", len(res.ids), res.err, res.ids)
	}
	seen := map[int64]bool{}
	for i, id := range res.ids {
		if seen[id] {
			t.Fatalf("insert %d seen twice (events %v)", id, res.ids)
		}
		seen[id] = true
		if i > 0 && id <= res.ids[i-1] {
			t.Fatalf("insert %d after %d: not commit order (events %v)", id, res.ids[i-1], res.ids)
		}
	}
	for id := int64(1); id <= next; id++ {
		if acked[id] && !seen[id] {
			t.Fatalf("acknowledged insert %d never seen (events %v)", id, res.ids)
		}
	}
	t.Logf("%d inserts acknowledged, %d events seen across two failovers", len(acked), len(res.ids))
}
