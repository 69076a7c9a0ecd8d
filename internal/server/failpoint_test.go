package server_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// startTestCommandsServer is a server started with
// --setParameter enableTestCommands=1.
func startTestCommandsServer(t *testing.T) *testServer {
	t.Helper()
	s := startServer(t)
	if err := s.env.ApplyStartupParameters([]string{"enableTestCommands=1"}); err != nil {
		t.Fatal(err)
	}
	return s
}

func configureFailPoint(t *testing.T, c *mongo.Client, cmd bson.D) bson.Raw {
	t.Helper()
	raw, err := c.Database("admin").RunCommand(context.Background(), cmd).Raw()
	if err != nil {
		t.Fatalf("%v: %v", cmd, err)
	}
	return raw
}

func failCommandOff(t *testing.T, c *mongo.Client) {
	t.Helper()
	configureFailPoint(t, c, bson.D{{"configureFailPoint", "failCommand"}, {"mode", "off"}})
}

func TestConfigureFailPointNeedsTestCommands(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	ctx := context.Background()
	err := c.Database("admin").RunCommand(ctx, bson.D{{"configureFailPoint", "failCommand"}, {"mode", "alwaysOn"}}).Err()
	if commandCode(err) != 59 {
		t.Fatalf("configureFailPoint without test commands: %v, want CommandNotFound", err)
	}
	var got bson.M
	if err := c.Database("admin").RunCommand(ctx, bson.D{{"getParameter", 1}, {"enableTestCommands", 1}}).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if got["enableTestCommands"] != false {
		t.Fatalf("enableTestCommands = %v, want false", got["enableTestCommands"])
	}
}

func TestFailCommand(t *testing.T) {
	s := startTestCommandsServer(t)
	// A state-change code (91 in writeConcernError) marks the server
	// Unknown until the next heartbeat, as against mongod.
	c := s.client(t, options.Client().SetHeartbeatInterval(500*time.Millisecond))
	ctx := context.Background()
	db := c.Database("fc")
	if _, err := db.Collection("c").InsertOne(ctx, bson.D{{"_id", 1}}); err != nil {
		t.Fatal(err)
	}
	find := bson.D{{"find", "c"}}

	t.Run("times with errorCode", func(t *testing.T) {
		configureFailPoint(t, c, bson.D{{"configureFailPoint", "failCommand"}, {"mode", bson.D{{"times", 2}}},
			{"data", bson.D{{"failCommands", bson.A{"find"}}, {"errorCode", 2}}}})
		for i := range 2 {
			if err := db.RunCommand(ctx, find).Err(); commandCode(err) != 2 {
				t.Fatalf("find %d: %v, want BadValue", i, err)
			}
		}
		if err := db.RunCommand(ctx, find).Err(); err != nil {
			t.Fatalf("find after the two times: %v", err)
		}
		// The count is the times the point fired so far.
		raw := configureFailPoint(t, c, bson.D{{"configureFailPoint", "failCommand"}, {"mode", "off"}})
		n, _ := raw.Lookup("count").AsInt64OK()
		if n < 2 {
			t.Fatalf("count %d after two failures", n)
		}
		admin := c.Database("admin")
		if err := admin.RunCommand(ctx, bson.D{{"waitForFailPoint", "failCommand"}, {"timesEntered", n}, {"maxTimeMS", 1000}}).Err(); err != nil {
			t.Fatalf("waitForFailPoint for times already entered: %v", err)
		}
		if err := admin.RunCommand(ctx, bson.D{{"waitForFailPoint", "failCommand"}, {"timesEntered", n + 1}, {"maxTimeMS", 50}}).Err(); commandCode(err) != 50 {
			t.Fatalf("waitForFailPoint past what will come: %v, want MaxTimeMSExpired", err)
		}
		if err := admin.RunCommand(ctx, bson.D{{"waitForFailPoint", "failCommand"}, {"timesEntered", n}}).Err(); commandCode(err) != 9 {
			t.Fatalf("waitForFailPoint without maxTimeMS: %v, want FailedToParse", err)
		}
	})

	t.Run("only the named commands", func(t *testing.T) {
		configureFailPoint(t, c, bson.D{{"configureFailPoint", "failCommand"}, {"mode", "alwaysOn"},
			{"data", bson.D{{"failCommands", bson.A{"insert"}}, {"errorCode", 2}}}})
		defer failCommandOff(t, c)
		if err := db.RunCommand(ctx, find).Err(); err != nil {
			t.Fatalf("find failed under an insert fail point: %v", err)
		}
		if err := c.Ping(ctx, nil); err != nil {
			t.Fatalf("ping (and the handshake) failed under an insert fail point: %v", err)
		}
		_, err := db.Collection("c").InsertOne(ctx, bson.D{{"x", 1}})
		var se mongo.ServerError
		if !errors.As(err, &se) || !se.HasErrorCode(2) {
			t.Fatalf("insert: %v, want BadValue", err)
		}
	})

	t.Run("skip", func(t *testing.T) {
		configureFailPoint(t, c, bson.D{{"configureFailPoint", "failCommand"}, {"mode", bson.D{{"skip", 1}}},
			{"data", bson.D{{"failCommands", bson.A{"find"}}, {"errorCode", 2}}}})
		defer failCommandOff(t, c)
		if err := db.RunCommand(ctx, find).Err(); err != nil {
			t.Fatalf("first find was not skipped: %v", err)
		}
		if err := db.RunCommand(ctx, find).Err(); commandCode(err) != 2 {
			t.Fatalf("second find: %v, want BadValue", err)
		}
	})

	t.Run("errorLabels replace the server's", func(t *testing.T) {
		configureFailPoint(t, c, bson.D{{"configureFailPoint", "failCommand"}, {"mode", bson.D{{"times", 1}}},
			{"data", bson.D{{"failCommands", bson.A{"find"}}, {"errorCode", 6}, {"errorLabels", bson.A{"Custom"}}}}})
		raw, _ := rawReply(ctx, db, find)
		labels, _ := raw.Lookup("errorLabels").Array().Values()
		if len(labels) != 1 || labels[0].StringValue() != "Custom" || raw.Lookup("codeName").StringValue() != "HostUnreachable" {
			t.Fatalf("reply %s: want errorLabels [Custom], codeName HostUnreachable", raw)
		}
	})

	t.Run("empty errorLabels leave none", func(t *testing.T) {
		configureFailPoint(t, c, bson.D{{"configureFailPoint", "failCommand"}, {"mode", bson.D{{"times", 1}}},
			{"data", bson.D{{"failCommands", bson.A{"find"}}, {"errorCode", 2}, {"errorLabels", bson.A{}}}}})
		raw, _ := rawReply(ctx, db, find)
		if _, err := raw.LookupErr("errorLabels"); err == nil || raw.Lookup("code").Int32() != 2 {
			t.Fatalf("reply %s: want code 2 and no errorLabels", raw)
		}
	})

	t.Run("appName", func(t *testing.T) {
		other := s.client(t, options.Client().SetAppName("other"))
		configureFailPoint(t, c, bson.D{{"configureFailPoint", "failCommand"}, {"mode", "alwaysOn"},
			{"data", bson.D{{"failCommands", bson.A{"find"}}, {"errorCode", 2}, {"appName", "other"}}}})
		defer failCommandOff(t, c)
		if err := db.RunCommand(ctx, find).Err(); err != nil {
			t.Fatalf("find from a client without the appName: %v", err)
		}
		if err := other.Database("fc").RunCommand(ctx, find).Err(); commandCode(err) != 2 {
			t.Fatalf("find from appName other: %v, want BadValue", err)
		}
	})

	t.Run("closeConnection", func(t *testing.T) {
		configureFailPoint(t, c, bson.D{{"configureFailPoint", "failCommand"}, {"mode", bson.D{{"times", 1}}},
			{"data", bson.D{{"failCommands", bson.A{"find"}}, {"closeConnection", true}}}})
		err := db.RunCommand(ctx, find).Err()
		if !mongo.IsNetworkError(err) {
			t.Fatalf("find: %v, want a network error", err)
		}
		if err := db.RunCommand(ctx, find).Err(); err != nil {
			t.Fatalf("find after the closed connection: %v", err)
		}
	})

	t.Run("blockConnection", func(t *testing.T) {
		configureFailPoint(t, c, bson.D{{"configureFailPoint", "failCommand"}, {"mode", bson.D{{"times", 1}}},
			{"data", bson.D{{"failCommands", bson.A{"find"}}, {"blockConnection", true}, {"blockTimeMS", 150}}}})
		began := time.Now()
		if err := db.RunCommand(ctx, find).Err(); err != nil {
			t.Fatalf("blocked find: %v", err)
		}
		if d := time.Since(began); d < 150*time.Millisecond {
			t.Fatalf("find took %v, want at least 150ms", d)
		}
	})

	t.Run("writeConcernError", func(t *testing.T) {
		configureFailPoint(t, c, bson.D{{"configureFailPoint", "failCommand"}, {"mode", bson.D{{"times", 1}}},
			{"data", bson.D{{"failCommands", bson.A{"insert"}}, {"writeConcernError", bson.D{{"code", 91}, {"errmsg", "Replication is being shut down"}}}, {"errorLabels", bson.A{"RetryableWriteError"}}}}})
		raw, err := rawReply(ctx, db, bson.D{{"insert", "c"}, {"documents", bson.A{bson.D{{"_id", 42}}}}})
		if raw == nil {
			t.Fatal(err)
		}
		if code, _ := raw.Lookup("writeConcernError", "code").AsInt64OK(); code != 91 || raw.Lookup("n").AsInt64() != 1 {
			t.Fatalf("reply %s: want n 1 and writeConcernError code 91", raw)
		}
		keys := replyKeys(raw)
		if !slices.Equal(keys, []string{"n", "writeConcernError", "errorLabels", "ok"}) {
			t.Fatalf("reply fields %v", keys)
		}
		if n, _ := db.Collection("c").CountDocuments(ctx, bson.D{{"_id", 42}}); n != 1 {
			t.Fatal("the write under a writeConcernError was not applied")
		}
	})

	t.Run("hello only when named", func(t *testing.T) {
		configureFailPoint(t, c, bson.D{{"configureFailPoint", "failCommand"}, {"mode", bson.D{{"times", 1}}},
			{"data", bson.D{{"failCommands", bson.A{"isMaster"}}, {"errorCode", 2}}}})
		// isMaster and hello are one command, as in mongod.
		if err := db.RunCommand(ctx, bson.D{{"hello", 1}}).Err(); commandCode(err) != 2 {
			t.Fatalf("hello under an isMaster fail point: %v, want BadValue", err)
		}
	})
}

func TestConfigureFailPointErrors(t *testing.T) {
	s := startTestCommandsServer(t)
	c := s.client(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		cmd  bson.D
		code int32
	}{
		{"unknown point", bson.D{{"configureFailPoint", "noSuchPoint"}, {"mode", "alwaysOn"}}, 266},
		{"no mode", bson.D{{"configureFailPoint", "failCommand"}}, 20},
		{"unknown mode", bson.D{{"configureFailPoint", "failCommand"}, {"mode", "sometimes"}}, 2},
		{"negative times", bson.D{{"configureFailPoint", "failCommand"}, {"mode", bson.D{{"times", -1}}}}, 2},
		{"probability above 1", bson.D{{"configureFailPoint", "failCommand"}, {"mode", bson.D{{"activationProbability", 1.5}}}}, 2},
		{"data not a document", bson.D{{"configureFailPoint", "failCommand"}, {"mode", "alwaysOn"}, {"data", 1}}, 14},
		{"unsupported data field", bson.D{{"configureFailPoint", "failCommand"}, {"mode", "alwaysOn"}, {"data", bson.D{{"threadName", "conn1"}}}}, 2},
	} {
		err := c.Database("admin").RunCommand(ctx, tc.cmd).Err()
		if got := commandCode(err); got != tc.code {
			t.Errorf("%s: %v, want code %d", tc.name, err, tc.code)
		}
	}
	err := c.Database("fc").RunCommand(ctx, bson.D{{"configureFailPoint", "failCommand"}, {"mode", "off"}}).Err()
	if commandCode(err) != 13 {
		t.Errorf("configureFailPoint outside admin: %v, want Unauthorized", err)
	}
}

// TestStorageFailPointOverTheWire sets the commit path's named point with
// configureFailPoint: the insert fails, nothing of it is applied, and the
// next insert commits.
func TestStorageFailPointOverTheWire(t *testing.T) {
	s := startTestCommandsServer(t)
	c := s.client(t)
	ctx := context.Background()
	coll := c.Database("fp").Collection("c")
	configureFailPoint(t, c, bson.D{{"configureFailPoint", "storageFailBeforeCommit"}, {"mode", bson.D{{"times", 1}}}})
	if _, err := coll.InsertOne(ctx, bson.D{{"_id", 1}}); err == nil {
		t.Fatal("insert at the storage fail point succeeded")
	}
	if n, _ := coll.CountDocuments(ctx, bson.D{}); n != 0 {
		t.Fatalf("%d documents after a failed commit", n)
	}
	if _, err := coll.InsertOne(ctx, bson.D{{"_id", 1}}); err != nil {
		t.Fatalf("insert after the point: %v", err)
	}
}

// rawReply runs cmd and returns the server's reply document even when it
// is an error.
func rawReply(ctx context.Context, db *mongo.Database, cmd bson.D) (bson.Raw, error) {
	res := db.RunCommand(ctx, cmd)
	raw, err := res.Raw()
	if raw == nil {
		var se mongo.CommandError
		if errors.As(err, &se) {
			return se.Raw, err
		}
		var we mongo.WriteException
		if errors.As(err, &we) {
			return we.Raw, err
		}
	}
	return raw, err
}

func replyKeys(raw bson.Raw) []string {
	elems, _ := raw.Elements()
	keys := make([]string, 0, len(elems))
	for _, e := range elems {
		keys = append(keys, e.Key())
	}
	return keys
}

// TestFailCommandTimesUnderConcurrency: {times: n} fails exactly n of many
// concurrent commands, whichever connections they come from.
func TestFailCommandTimesUnderConcurrency(t *testing.T) {
	s := startTestCommandsServer(t)
	c := s.client(t, options.Client().SetMaxPoolSize(8))
	ctx := context.Background()
	db := c.Database("fcc")
	configureFailPoint(t, c, bson.D{{"configureFailPoint", "failCommand"}, {"mode", bson.D{{"times", 5}}},
		{"data", bson.D{{"failCommands", bson.A{"count"}}, {"errorCode", 2}}}})
	const n = 40
	errs := make(chan error, n)
	for range n {
		go func() { errs <- db.RunCommand(ctx, bson.D{{"count", "c"}}).Err() }()
	}
	failed := 0
	for range n {
		if err := <-errs; err != nil {
			if commandCode(err) != 2 {
				t.Fatalf("count: %v", err)
			}
			failed++
		}
	}
	if failed != 5 {
		t.Fatalf("%d of %d counts failed under {times: 5}", failed, n)
	}
}
