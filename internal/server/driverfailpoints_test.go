package server_test

import (
	"context"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// TestFailGetMoreAfterCursorCheckout: the point fails the getMore of a
// cursor that passed its checks with errorCode (InternalError without
// one), filtered by namespace, and deletes the cursor, as mongod does.
func TestFailGetMoreAfterCursorCheckout(t *testing.T) {
	s := startTestCommandsServer(t)
	c := s.client(t)
	ctx := context.Background()
	db := c.Database("fgm")
	docs := []any{bson.D{{"_id", 1}}, bson.D{{"_id", 2}}, bson.D{{"_id", 3}}, bson.D{{"_id", 4}}}
	if _, err := db.Collection("c").InsertMany(ctx, docs); err != nil {
		t.Fatal(err)
	}
	open := func(t *testing.T) int64 {
		t.Helper()
		var r struct {
			Cursor struct {
				ID int64 `bson:"id"`
			} `bson:"cursor"`
		}
		if err := db.RunCommand(ctx, bson.D{{"find", "c"}, {"batchSize", 1}}).Decode(&r); err != nil || r.Cursor.ID == 0 {
			t.Fatalf("find: %v (cursor %d)", err, r.Cursor.ID)
		}
		return r.Cursor.ID
	}
	getMore := func(id int64) error {
		return db.RunCommand(ctx, bson.D{{"getMore", id}, {"collection", "c"}, {"batchSize", 1}}).Err()
	}
	for _, tc := range []struct {
		name string
		data bson.D
		code int32 // 0: the point does not fire
	}{
		{"errorCode", bson.D{{"errorCode", 280}}, 280},
		{"InternalError without errorCode", bson.D{}, 1},
		{"namespace matches", bson.D{{"errorCode", 2}, {"namespace", "fgm.c"}}, 2},
		{"namespace differs", bson.D{{"errorCode", 2}, {"namespace", "fgm.other"}}, 0},
		{"appName differs", bson.D{{"errorCode", 2}, {"appName", "someone else"}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := open(t)
			configureFailPoint(t, c, bson.D{{"configureFailPoint", "failGetMoreAfterCursorCheckout"},
				{"mode", bson.D{{"times", 1}}}, {"data", tc.data}})
			defer configureFailPoint(t, c, bson.D{{"configureFailPoint", "failGetMoreAfterCursorCheckout"}, {"mode", "off"}})
			err := getMore(id)
			if tc.code == 0 {
				if err != nil {
					t.Fatalf("getMore the point does not match: %v", err)
				}
				return
			}
			if got := commandCode(err); got != tc.code {
				t.Fatalf("getMore: %v, want code %d", err, tc.code)
			}
			if got := commandCode(getMore(id)); got != 43 {
				t.Fatalf("getMore after the failed one: code %d, want CursorNotFound (the cursor is deleted)", got)
			}
		})
	}
	err := c.Database("admin").RunCommand(ctx, bson.D{{"configureFailPoint", "failGetMoreAfterCursorCheckout"},
		{"mode", "alwaysOn"}, {"data", bson.D{{"closeConnection", true}}}}).Err()
	if commandCode(err) != 2 {
		t.Fatalf("a data field the point does not honour: %v, want BadValue", err)
	}
}

// TestOnPrimaryTransactionalWrite: the point closes the connection of a
// retryable write whose statement committed (the driver's retry answers
// from the statement's record, so the write happens once), and with
// failBeforeCommitExceptionCode fails the statement before it commits.
func TestOnPrimaryTransactionalWrite(t *testing.T) {
	s := startTestCommandsServer(t)
	c := s.client(t)
	ctx := context.Background()
	db := c.Database("optw")
	coll := db.Collection("c")
	// The driver sends no txnNumber to a standalone, so the retryable
	// writes are commands with an explicit session and txnNumber.
	sess, err := c.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(ctx)
	sctx := mongo.NewSessionContext(ctx, sess)
	point := func(mode any, data bson.D) bson.Raw {
		cmd := bson.D{{"configureFailPoint", "onPrimaryTransactionalWrite"}, {"mode", mode}}
		if data != nil {
			cmd = append(cmd, bson.E{"data", data})
		}
		return configureFailPoint(t, c, cmd)
	}
	inc := func(txn int64) bson.D {
		return bson.D{{"update", "c"}, {"updates", bson.A{bson.D{{"q", bson.D{{"_id", 1}}}, {"u", bson.D{{"$inc", bson.D{{"n", 1}}}}}}}}, {"txnNumber", txn}}
	}
	if _, err := coll.InsertOne(ctx, bson.D{{"_id", 1}, {"n", 0}}); err != nil {
		t.Fatal(err)
	}

	for i, data := range []bson.D{nil, {{"closeConnection", true}}} {
		txn := int64(10 + i)
		point(bson.D{{"times", 1}}, data)
		if err := db.RunCommand(sctx, inc(txn)).Err(); !mongo.IsNetworkError(err) {
			t.Fatalf("update under the point (data %v): %v, want a network error", data, err)
		}
		var r struct{ N, NModified int }
		if err := db.RunCommand(sctx, inc(txn)).Decode(&r); err != nil || r.N != 1 || r.NModified != 1 {
			t.Fatalf("the retry: %v %+v, want n 1 nModified 1 from the statement's record", err, r)
		}
	}
	var got struct{ N int }
	if err := coll.FindOne(ctx, bson.D{{"_id", 1}}).Decode(&got); err != nil || got.N != 2 {
		t.Fatalf("n = %d (%v), want 2: each statement ran once however often it was sent", got.N, err)
	}
	if n, _ := point("off", nil).Lookup("count").AsInt64OK(); n != 2 {
		t.Fatalf("the point fired %d times, want 2", n)
	}

	// A write without txnNumber is not a transactional write.
	point("alwaysOn", nil)
	if _, err := coll.InsertOne(ctx, bson.D{{"_id", 2}}); err != nil {
		t.Fatalf("insert without txnNumber under the point: %v", err)
	}
	point("off", nil)

	point("alwaysOn", bson.D{{"closeConnection", false}, {"failBeforeCommitExceptionCode", 2}})
	raw, _ := rawReply(sctx, db, bson.D{{"insert", "c"}, {"documents", bson.A{bson.D{{"_id", 3}}}}, {"txnNumber", int64(20)}})
	point("off", nil)
	code, _ := raw.Lookup("code").AsInt64OK()
	if werr, ok := raw.Lookup("writeErrors", "0", "code").AsInt64OK(); ok {
		code = werr
	}
	if code != 2 {
		t.Fatalf("insert failed before commit: reply %s, want code 2", raw)
	}
	if n, _ := coll.CountDocuments(ctx, bson.D{{"_id", 3}}); n != 0 {
		t.Fatal("a statement failed before its commit was stored")
	}
}

// TestRetryableWriteErrorLabel: the server labels a retryable write's
// retriable error and writeConcernError RetryableWriteError, as mongod's
// ErrorLabelBuilder does, and labels nothing else.
func TestRetryableWriteErrorLabel(t *testing.T) {
	s := startTestCommandsServer(t)
	c := s.client(t)
	ctx := context.Background()
	db := c.Database("rwl")
	sess, err := c.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(ctx)
	sctx := mongo.NewSessionContext(ctx, sess)
	txn := int64(0)
	insert := func(retryable bool) bson.D {
		cmd := bson.D{{"insert", "c"}, {"documents", bson.A{bson.D{}}}}
		if retryable {
			txn++
			cmd = append(cmd, bson.E{"txnNumber", txn})
		}
		return cmd
	}
	for _, tc := range []struct {
		name      string
		data      bson.D
		retryable bool
		label     bool
	}{
		// Codes that do not change the driver's view of the server (91,
		// 10107 and the like would mark it Unknown until a heartbeat).
		{"retriable code", bson.D{{"errorCode", 6}}, true, true},
		{"retriable code, not a retryable write", bson.D{{"errorCode", 6}}, false, false},
		{"code not retriable", bson.D{{"errorCode", 2}}, true, false},
		{"retriable writeConcernError", bson.D{{"writeConcernError", bson.D{{"code", 262}, {"errmsg", "time limit"}}}}, true, true},
		{"writeConcernError not retriable", bson.D{{"writeConcernError", bson.D{{"code", 64}, {"errmsg", "timed out"}}}}, true, false},
		{"fail point's own labels win", bson.D{{"errorCode", 6}, {"errorLabels", bson.A{}}}, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := append(bson.D{{"failCommands", bson.A{"insert"}}}, tc.data...)
			configureFailPoint(t, c, bson.D{{"configureFailPoint", "failCommand"}, {"mode", bson.D{{"times", 1}}}, {"data", data}})
			defer failCommandOff(t, c)
			raw, _ := rawReply(sctx, db, insert(tc.retryable))
			if raw == nil {
				t.Fatal("no reply")
			}
			labels, hasLabels := raw.Lookup("errorLabels").ArrayOK()
			vals, _ := labels.Values()
			labelled := hasLabels && len(vals) == 1 && vals[0].StringValue() == "RetryableWriteError"
			if labelled != tc.label || (!tc.label && hasLabels) {
				t.Fatalf("reply %s: RetryableWriteError label %v, want %v", raw, labelled, tc.label)
			}
		})
	}
}
