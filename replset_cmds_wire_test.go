package cairn_test

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readconcern"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"

	"github.com/cairndb/cairn/internal/testnet"
)

// TestReplicaSetCommands drives the replica set commands against three
// real members, then a fourth: replSetStepDown hands the primary over and
// freezes the old one; replSetFreeze and the commands a secondary must
// refuse answer MongoDB's codes; replSetReconfig's refusals; rs.add() of
// a new member (learner, then voter) that then holds the set's writes,
// and rs.remove() of it; w above the members is UnsatisfiableWriteConcern.
func TestReplicaSetCommands(t *testing.T) {
	if testing.Short() {
		t.Skip("starts four servers")
	}
	tmp := t.TempDir()
	bin := buildCairnBinary(t, tmp)
	ports := freePorts(t, 4)
	hosts := make([]string, 4)
	for i, p := range ports {
		hosts[i] = net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
	}
	for i := range 3 {
		startMember(t, bin, filepath.Join(tmp, fmt.Sprintf("m%d", i)), ports[i])
	}
	ctx := context.Background()
	admin := func(i int) *mongo.Database {
		c := directClient(t, hosts[i])
		t.Cleanup(func() { c.Disconnect(ctx) })
		return c.Database("admin")
	}
	members := func(n int) bson.A {
		out := bson.A{}
		for i := range n {
			out = append(out, bson.D{{Key: "_id", Value: i}, {Key: "host", Value: hosts[i]}})
		}
		return out
	}
	if err := admin(0).RunCommand(ctx, bson.D{{Key: "replSetInitiate", Value: bson.D{{Key: "_id", Value: "rs0"}, {Key: "members", Value: members(3)}}}}).Err(); err != nil {
		t.Fatal(err)
	}
	waitHealthy(t, hosts[:3], 3)
	p := primaryOf(t, hosts[:3])
	s := (p + 1) % 3
	run := func(i int, cmd bson.D) (bson.M, error) {
		var out bson.M
		err := admin(i).RunCommand(ctx, cmd).Decode(&out)
		return out, err
	}
	for _, tc := range []struct {
		name string
		on   int
		cmd  bson.D
		code int
	}{
		{"replSetStepDown on a secondary", s, bson.D{{Key: "replSetStepDown", Value: 30}}, 10107},
		{"replSetFreeze on the primary", p, bson.D{{Key: "replSetFreeze", Value: 30}}, 95},
		{"replSetReconfig on a secondary", s, bson.D{{Key: "replSetReconfig", Value: bson.D{{Key: "_id", Value: "rs0"}, {Key: "version", Value: 2}, {Key: "members", Value: members(3)}}}}, 10107},
		{"replSetReconfig at the same version", p, bson.D{{Key: "replSetReconfig", Value: bson.D{{Key: "_id", Value: "rs0"}, {Key: "version", Value: 1}, {Key: "members", Value: members(3)}}}}, 103},
		{"replSetReconfig removing two voters", p, bson.D{{Key: "replSetReconfig", Value: bson.D{{Key: "_id", Value: "rs0"}, {Key: "version", Value: 2}, {Key: "members", Value: bson.A{members(3)[p]}}}}}, 103},
		{"replSetReconfig renaming the set", p, bson.D{{Key: "replSetReconfig", Value: bson.D{{Key: "_id", Value: "other"}, {Key: "version", Value: 2}, {Key: "members", Value: members(3)}}}}, 103},
		{"replSetInitiate again", s, bson.D{{Key: "replSetInitiate", Value: bson.D{{Key: "_id", Value: "rs0"}, {Key: "members", Value: members(3)}}}}, 23},
		{"replSetFreeze on a secondary", s, bson.D{{Key: "replSetFreeze", Value: 0}}, 0},
	} {
		_, err := run(tc.on, tc.cmd)
		if code := cmdCode(err); tc.code == 0 && err != nil || tc.code != 0 && code != tc.code {
			t.Errorf("%s: %v, want code %d", tc.name, err, tc.code)
		}
	}

	// hello's lastWrite.opTime is the applied groups' cluster time: a
	// write raises it on the primary, and a secondary reaches it.
	lastTS := func(i int) bson.Timestamp {
		raw, err := admin(i).RunCommand(ctx, bson.D{{Key: "hello", Value: 1}}).Raw()
		if err != nil {
			t.Fatal(err)
		}
		t0, i0, ok := raw.Lookup("lastWrite", "opTime", "ts").TimestampOK()
		if !ok {
			t.Fatalf("hello without lastWrite.opTime.ts: %s", raw)
		}
		return bson.Timestamp{T: t0, I: i0}
	}
	before := lastTS(p)
	if err := admin(p).Client().Database("app").Collection("c").FindOneAndUpdate(ctx, bson.D{{Key: "_id", Value: 1}},
		bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}, options.FindOneAndUpdate().SetUpsert(true)).Err(); err != nil && err != mongo.ErrNoDocuments {
		t.Fatal(err)
	}
	after := lastTS(p)
	if !before.Before(after) {
		t.Fatalf("lastWrite.opTime.ts %v did not rise past %v with a write", after, before)
	}
	for deadline := time.Now().Add(10 * time.Second); lastTS(s).Before(after); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("secondary's lastWrite.opTime.ts %v never reached the primary's %v", lastTS(s), after)
		}
	}

	// replSetStepDown: another member takes over; the old primary is a
	// secondary, frozen.
	if _, err := run(p, bson.D{{Key: "replSetStepDown", Value: 60}, {Key: "secondaryCatchUpPeriodSecs", Value: 10}}); err != nil {
		t.Fatalf("replSetStepDown: %v", err)
	}
	np := primaryOf(t, hosts[:3])
	if np == p {
		t.Fatalf("member %d still primary after replSetStepDown", p)
	}
	var hello bson.M
	for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		// The old primary learns the new one at its first heartbeat.
		hello, _ = run(p, bson.D{{Key: "hello", Value: 1}})
		if hello["secondary"] == true && hello["primary"] == hosts[np] {
			break
		}
		if time.Since(start) > 10*time.Second {
			t.Fatalf("old primary's hello after stepdown: %v", hello)
		}
	}
	// With force and no secondaryCatchUpPeriodSecs (the drivers' tests
	// send {replSetStepDown: 5, force: true}) the catch-up period is 0, as
	// in mongod, so a period under 10 seconds is valid; it hands over too.
	// The old primary is unfrozen first: the hand-over may pick it.
	if _, err := run(p, bson.D{{Key: "replSetFreeze", Value: 0}}); err != nil {
		t.Fatalf("replSetFreeze 0 on the old primary: %v", err)
	}
	if _, err := run(np, bson.D{{Key: "replSetStepDown", Value: 5}, {Key: "force", Value: true}}); err != nil {
		t.Fatalf("replSetStepDown 5 with force: %v", err)
	}
	if again := primaryOf(t, hosts[:3]); again == np {
		t.Fatalf("member %d still primary after a forced replSetStepDown", np)
	} else {
		np = again
	}

	// rs.add(): version 2 with a fourth member, which joins empty.
	startMember(t, bin, filepath.Join(tmp, "m3"), ports[3])
	// Bad initiates on the new, empty member change nothing.
	self := bson.D{{Key: "_id", Value: 0}, {Key: "host", Value: hosts[3]}}
	for _, tc := range []struct {
		name string
		cfg  bson.D
		code int
	}{
		{"an unreachable member", bson.D{{Key: "_id", Value: "rs0"}, {Key: "members", Value: bson.A{self, bson.D{{Key: "_id", Value: 1}, {Key: "host", Value: "127.0.0.1:1"}}}}}, 74},
		{"no member is this server", bson.D{{Key: "_id", Value: "rs0"}, {Key: "members", Value: bson.A{bson.D{{Key: "_id", Value: 0}, {Key: "host", Value: hosts[0]}}}}}, 74},
		{"another set's name", bson.D{{Key: "_id", Value: "other"}, {Key: "members", Value: bson.A{self}}}, 93},
		{"duplicate hosts", bson.D{{Key: "_id", Value: "rs0"}, {Key: "members", Value: bson.A{self, bson.D{{Key: "_id", Value: 1}, {Key: "host", Value: hosts[3]}}}}}, 93},
	} {
		if _, err := run(3, bson.D{{Key: "replSetInitiate", Value: tc.cfg}}); cmdCode(err) != tc.code {
			t.Errorf("replSetInitiate with %s: %v, want code %d", tc.name, err, tc.code)
		}
	}
	if _, err := run(3, bson.D{{Key: "replSetGetStatus", Value: 1}}); cmdCode(err) != 94 {
		t.Errorf("replSetGetStatus after refused initiates: %v, want 94 NotYetInitialized", err)
	}

	// As rs.add() does: the config replSetGetConfig shows, one member
	// more, the version one higher, given back.
	var got struct {
		Config bson.D `bson:"config"`
	}
	if err := admin(np).RunCommand(ctx, bson.D{{Key: "replSetGetConfig", Value: 1}}).Decode(&got); err != nil {
		t.Fatal(err)
	}
	conf := got.Config
	var mem bson.A
	var version int32
	for i, e := range conf {
		switch e.Key {
		case "members":
			mem = append(e.Value.(bson.A), bson.D{{Key: "_id", Value: 3}, {Key: "host", Value: hosts[3]}})
			conf[i].Value = mem
		case "version":
			version = e.Value.(int32) + 1
			conf[i].Value = version
		}
	}
	if _, err := run(np, bson.D{{Key: "replSetReconfig", Value: conf}}); err != nil {
		t.Fatalf("replSetReconfig adding a member: %v", err)
	}
	waitHealthy(t, hosts, 4)
	client, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + hosts[np] + "/?replicaSet=rs0").SetRetryWrites(false).
		SetServerSelectionTimeout(testnet.ConnectWait))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Disconnect(ctx)
	coll := client.Database("app").Collection("c")
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: "after-add"}}); err != nil {
		t.Fatal(err)
	}
	w4 := client.Database("app").Collection("c", options.Collection().SetWriteConcern(&writeconcern.WriteConcern{W: 4}))
	if _, err := w4.InsertOne(ctx, bson.D{{Key: "_id", Value: "w4"}}); err != nil {
		t.Errorf("w: 4 with four members: %v", err)
	}
	w5 := client.Database("app").Collection("c", options.Collection().SetWriteConcern(&writeconcern.WriteConcern{W: 5}))
	if _, err := w5.InsertOne(ctx, bson.D{{Key: "_id", Value: "w5"}}); cmdCode(err) != 100 {
		t.Errorf("w: 5 with four members: %v, want 100 UnsatisfiableWriteConcern", err)
	}
	lin := client.Database("app").Collection("c", options.Collection().SetReadConcern(readconcern.Linearizable()))
	if n, err := lin.CountDocuments(ctx, bson.D{{Key: "_id", Value: "w4"}}); err != nil || n != 1 {
		t.Errorf("linearizable read of the last write: %d, %v", n, err)
	}
	fourth := directClient(t, hosts[3])
	defer fourth.Disconnect(ctx)
	if n, err := fourth.Database("app").Collection("c").CountDocuments(ctx, bson.D{{Key: "_id", Value: "w4"}}); err != nil || n != 1 {
		t.Errorf("the added member after a w: 4 write: %d documents, %v", n, err)
	}

	// rs.remove(): version 3 without it.
	for i, e := range conf {
		switch e.Key {
		case "members":
			conf[i].Value = mem[:3]
		case "version":
			conf[i].Value = version + 1
		}
	}
	if _, err := run(np, bson.D{{Key: "replSetReconfig", Value: conf}}); err != nil {
		t.Fatalf("replSetReconfig removing a member: %v", err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		st, err := run(np, bson.D{{Key: "replSetGetStatus", Value: 1}})
		if err == nil && len(st["members"].(bson.A)) == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("replSetGetStatus after removing a member: %v %v", st, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		hello, _ = run(3, bson.D{{Key: "hello", Value: 1}})
		if hello["isWritablePrimary"] == false && hello["secondary"] == false {
			break
		}
		if time.Since(start) > 10*time.Second {
			t.Fatalf("removed member's hello: %v", hello)
		}
	}
}
