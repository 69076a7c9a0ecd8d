package commands

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/hlc"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// TestClusterTimes: a standalone's replies carry no cluster times and it
// refuses afterClusterTime, as mongod; in replica-set mode replies carry
// operationTime and $clusterTime, gossip advances the clock, and
// afterClusterTime waits until the node has committed that time.
func TestClusterTimes(t *testing.T) {
	s := testSession(t, engine.Options{})
	ins := bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 1}}}}}
	r := runDoc(t, s, "test", ins)
	if _, err := r.LookupErr("operationTime"); err == nil {
		t.Errorf("a standalone's reply carries operationTime: %s", r)
	}
	ahead := hlc.New(uint32(hlc.NewClock(nil, 0).Now().T())+5, 1)
	after := bson.D{{Key: "find", Value: "c"}, {Key: "readConcern", Value: bson.D{{Key: "afterClusterTime", Value: bson.Timestamp{T: ahead.T(), I: ahead.I()}}}}}
	if c := replyCode(runDoc(t, s, "test", after)); c != int32(mongoerr.IllegalOperation) {
		t.Errorf("afterClusterTime on a standalone: code %d, want 20", c)
	}

	s.Env.SetClusterTimes(true)
	r = runDoc(t, s, "test", ins)
	ot, oi, ok := r.Lookup("operationTime").TimestampOK()
	ct, ci, ok2 := r.Lookup("$clusterTime", "clusterTime").TimestampOK()
	if !ok || !ok2 || hlc.New(ct, ci) < hlc.New(ot, oi) || hlc.New(ot, oi) != s.Env.Engine.Storage().LastCommitted() {
		t.Fatalf("replica-set reply times: %s", r)
	}
	r = runDoc(t, s, "test", after)
	if replyCode(r) != 0 {
		t.Fatalf("afterClusterTime ahead of the node: %s", r)
	}
	if got := s.Env.Engine.Storage().LastCommitted(); got < ahead {
		t.Errorf("after waiting, the last committed time %v is below %v", got, ahead)
	}
	gossip := bson.D{{Key: "ping", Value: 1}, {Key: "$clusterTime", Value: bson.D{{Key: "clusterTime", Value: bson.Timestamp{T: ahead.T() + 10, I: 1}}}}}
	runDoc(t, s, "admin", gossip)
	if cur := s.Env.Engine.Storage().Clock().Current(); cur < hlc.New(ahead.T()+10, 1) {
		t.Errorf("gossiped $clusterTime did not advance the clock: %v", cur)
	}
}
