package commands

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/storage"
)

// fakeMember is a ReplicaSet in a fixed state, to check how Run applies
// a member's answers (package replset computes them).
// Its state is swapped whole between cases: the server's background
// goroutines may ask it at any moment.
type fakeMember struct {
	st atomic.Pointer[fakeState]
}

type fakeState struct {
	primary bool
	wce     bsoncore.Document
}

func (f *fakeMember) set(primary bool, wce bsoncore.Document) {
	f.st.Store(&fakeState{primary: primary, wce: wce})
}
func (f *fakeMember) isPrimary() bool {
	st := f.st.Load()
	return st != nil && st.primary
}

func (f *fakeMember) Hello() bsoncore.Document {
	return bsoncore.NewDocumentBuilder().AppendBoolean("isWritablePrimary", f.isPrimary()).
		AppendBoolean("secondary", !f.isPrimary()).AppendString("setName", "rs0").Build()
}
func (f *fakeMember) Topology() (int64, <-chan struct{}) { return 7, nil }
func (f *fakeMember) CanWrite() error {
	if f.isPrimary() {
		return nil
	}
	return mongoerr.New(mongoerr.NotWritablePrimary, "not primary")
}
func (f *fakeMember) CanRead(secondaryOk bool) error {
	if f.isPrimary() || secondaryOk {
		return nil
	}
	return mongoerr.New(mongoerr.NotPrimaryNoSecondaryOk, "not primary and secondaryOk=false")
}
func (f *fakeMember) Initiate(context.Context, bsoncore.Document) error       { return nil }
func (f *fakeMember) Reconfig(context.Context, bsoncore.Document, bool) error { return nil }
func (f *fakeMember) StepDown(context.Context, int64, int64) error            { return nil }
func (f *fakeMember) Freeze(int64) (string, error)                            { return "", nil }
func (f *fakeMember) Status() (bsoncore.Document, error) {
	return bsoncore.NewDocumentBuilder().AppendString("set", "rs0").Build(), nil
}
func (f *fakeMember) ConfigDocument() (bsoncore.Document, error) {
	// Two voters and a non-voting member (commitQuorum counts voters).
	member := func(id int32, host string, votes int32) bsoncore.Document {
		return bsoncore.NewDocumentBuilder().AppendInt32("_id", id).AppendString("host", host).AppendInt32("votes", votes).Build()
	}
	members := bsoncore.NewArrayBuilder().AppendDocument(member(0, "a:1", 1)).AppendDocument(member(1, "b:1", 1)).AppendDocument(member(2, "c:1", 0)).Build()
	return bsoncore.NewDocumentBuilder().AppendString("_id", "rs0").AppendArray("members", members).Build(), nil
}
func (f *fakeMember) CheckWriteConcern(w bsoncore.Value) error {
	if n, ok := w.AsInt64OK(); ok && n > 3 {
		return mongoerr.New(mongoerr.UnsatisfiableWriteConcern, "Not enough data-bearing nodes")
	}
	return nil
}
func (f *fakeMember) Linearize(context.Context) error {
	if f.isPrimary() {
		return nil
	}
	return mongoerr.New(mongoerr.NotWritablePrimary, "cannot satisfy linearizable read concern on non-primary node")
}
func (f *fakeMember) WaitWriteConcern(context.Context, bsoncore.Value, time.Duration) bsoncore.Document {
	if st := f.st.Load(); st != nil {
		return st.wce
	}
	return nil
}

// TestReplicaSetChecks: on a member, Run sends writes to the primary only
// (NotWritablePrimary), reads to a secondary only with a readPreference
// other than primary (NotPrimaryNoSecondaryOk), checks w with the member
// before the write and appends its writeConcernError after; hello carries
// the member's fields under the spelling the command asks for.
func TestReplicaSetChecks(t *testing.T) {
	s := testSession(t, engine.Options{})
	m := &fakeMember{}
	s.Env.SetReplicaSet(m)
	wce := bsoncore.NewDocumentBuilder().AppendInt32("code", 64).AppendString("codeName", "WriteConcernFailed").Build()
	secondary := bson.D{{Key: "mode", Value: "secondaryPreferred"}}
	lost := mongoerr.New(mongoerr.InterruptedDueToReplStateChange, "leadership lost")
	lost.Extra = []mongoerr.Field{{Name: "errorLabels", Value: bson.A{"RetryableWriteError"}}}
	for _, tc := range []struct {
		name    string
		primary bool
		wce     bsoncore.Document
		cmd     bson.D
		code    int32  // 0: ok
		field   string // a field the reply must hold
		value   any
	}{
		{"write on a secondary", false, nil, bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{}}}}, 10107, "", nil},
		{"read on a secondary without secondaryOk", false, nil, bson.D{{Key: "find", Value: "c"}}, 13435, "", nil},
		{"read on a secondary with secondaryPreferred", false, nil, bson.D{{Key: "find", Value: "c"}, {Key: "$readPreference", Value: secondary}}, 0, "", nil},
		{"write on the primary", true, nil, bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{}}}}, 0, "n", int32(1)},
		{"unsatisfiable w", true, nil, bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{}}}, {Key: "writeConcern", Value: bson.D{{Key: "w", Value: 5}}}}, 0, "writeConcernError.code", int32(100)},
		{"aggregate with $out on a secondary is a write", false, nil, bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$out", Value: "o"}}}}, {Key: "cursor", Value: bson.D{}}, {Key: "$readPreference", Value: secondary}}, 10107, "", nil},
		{"aggregate with $out waits for its write concern", true, wce, bson.D{{Key: "aggregate", Value: "c"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$out", Value: "o"}}}}, {Key: "cursor", Value: bson.D{}}, {Key: "writeConcern", Value: bson.D{{Key: "w", Value: 3}, {Key: "wtimeout", Value: 10}}}}, 0, "writeConcernError.code", int32(64)},
		{"commitQuorum votingMembers waits for every voter", true, wce, bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{bson.D{{Key: "key", Value: bson.D{{Key: "q", Value: 1}}}, {Key: "name", Value: "q_1"}}}}, {Key: "commitQuorum", Value: "votingMembers"}}, 276, "", nil},
		{"commitQuorum majority is met by the commit", true, wce, bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{bson.D{{Key: "key", Value: bson.D{{Key: "r", Value: 1}}}, {Key: "name", Value: "r_1"}}}}, {Key: "commitQuorum", Value: "majority"}}, 0, "commitQuorum", "majority"},
		{"commitQuorum above the voters", true, nil, bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{bson.D{{Key: "key", Value: bson.D{{Key: "s", Value: 1}}}, {Key: "name", Value: "s_1"}}}}, {Key: "commitQuorum", Value: 3}}, 278, "", nil},
		{"commitQuorum naming a tag", true, nil, bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{bson.D{{Key: "key", Value: bson.D{{Key: "s", Value: 1}}}, {Key: "name", Value: "s_1"}}}}, {Key: "commitQuorum", Value: "dc-east"}}, 278, "", nil},
		{"commitQuorum 2 with a member lagging", true, wce, bson.D{{Key: "createIndexes", Value: "c"}, {Key: "indexes", Value: bson.A{bson.D{{Key: "key", Value: bson.D{{Key: "t", Value: 1}}}, {Key: "name", Value: "t_1"}}}}, {Key: "commitQuorum", Value: 2}}, 276, "", nil},
		{"w: 3 timed out", true, wce, bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{}}}, {Key: "writeConcern", Value: bson.D{{Key: "w", Value: 3}, {Key: "wtimeout", Value: 10}}}}, 0, "writeConcernError.code", int32(64)},
		{"lost leadership mid-write fails the command, retryable", true, nil, bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: "stepdown"}}}}}, 11602, "errorLabels.0", "RetryableWriteError"},
		{"linearizable read on a secondary", false, nil, bson.D{{Key: "find", Value: "c"}, {Key: "readConcern", Value: bson.D{{Key: "level", Value: "linearizable"}}}, {Key: "$readPreference", Value: secondary}}, 10107, "", nil},
		{"linearizable read on the primary", true, nil, bson.D{{Key: "find", Value: "c"}, {Key: "readConcern", Value: bson.D{{Key: "level", Value: "linearizable"}}}}, 0, "ok", 1.0},
		{"snapshot find on a member", true, nil, bson.D{{Key: "find", Value: "c"}, {Key: "readConcern", Value: bson.D{{Key: "level", Value: "snapshot"}}}}, 0, "", nil},
		{"snapshot count on a member: count takes no snapshot", true, nil, bson.D{{Key: "count", Value: "c"}, {Key: "readConcern", Value: bson.D{{Key: "level", Value: "snapshot"}}}}, 72, "", nil},
		{"hello on a secondary", false, nil, bson.D{{Key: "hello", Value: 1}}, 0, "secondary", true},
		{"isMaster spells it ismaster", true, nil, bson.D{{Key: "isMaster", Value: 1}}, 0, "ismaster", true},
		{"topologyVersion is the member's", true, nil, bson.D{{Key: "hello", Value: 1}}, 0, "topologyVersion.counter", int64(7)},
		{"replSetGetStatus is the member's", true, nil, bson.D{{Key: "replSetGetStatus", Value: 1}}, 0, "set", "rs0"},
		{"replSetGetConfig is the member's", true, nil, bson.D{{Key: "replSetGetConfig", Value: 1}, {Key: "commitmentStatus", Value: true}}, 0, "commitmentStatus", true},
	} {
		m.set(tc.primary, tc.wce)
		var replicate func([]byte, bool) error
		if tc.code == 11602 {
			// The store's group fails as a primary's does when its
			// leadership is lost (package replset's Replicate).
			replicate = func([]byte, bool) error { return lost }
		}
		if err := s.Env.Engine.Storage().Write(func(*storage.Txn) error {
			s.Env.Engine.Storage().SetReplicate(replicate)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		db := "test"
		if strings.HasPrefix(tc.cmd[0].Key, "replSet") {
			db = "admin"
		}
		reply := bson.Raw(Run(context.Background(), s, testRequest(t, db, tc.cmd), nil))
		code, _ := reply.Lookup("code").Int32OK()
		if code != tc.code {
			t.Errorf("%s: code %d, want %d: %s", tc.name, code, tc.code, reply)
			continue
		}
		if tc.field != "" {
			got := reply.Lookup(strings.Split(tc.field, ".")...)
			var want bson.RawValue
			typ, data, _ := bson.MarshalValue(tc.value)
			want = bson.RawValue{Type: typ, Value: data}
			if !got.Equal(want) {
				t.Errorf("%s: %s = %v, want %v: %s", tc.name, tc.field, got, tc.value, reply)
			}
		}
	}
}
