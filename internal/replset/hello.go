package replset

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
)

// Hello is the member's part of hello, as the server discovery and
// monitoring specification reads it: hosts lists the voting members,
// passives the non-voting ones that are not hidden; primary is the
// leader's host as this member knows it; electionId only on the primary.
func (m *Member) Hello() bsoncore.Document {
	b := bsoncore.NewDocumentBuilder()
	node, self := m.nodeState()
	cfg := m.config()
	state := m.myState()
	b.AppendBoolean("isWritablePrimary", state == statePrimary)
	b.AppendBoolean("secondary", state == stateSecondary)
	if m.opts.ConfigSvr {
		b.AppendInt32("configsvr", 2) // mongod's config server marker
	}
	if cfg == nil || node == nil || state == stateRemoved {
		b.AppendBoolean("isreplicaset", true)
		b.AppendString("info", "Does not have a valid replica set config")
		return b.Build()
	}
	st := node.Status()
	hosts, passives := bsoncore.NewArrayBuilder(), bsoncore.NewArrayBuilder()
	npass := 0
	me, primary := "", ""
	var meCfg MemberConfig
	for _, mc := range cfg.Members {
		switch {
		case mc.Hidden:
		case mc.Votes == 0:
			passives.AppendString(mc.Host)
			npass++
		default:
			hosts.AppendString(mc.Host)
		}
		if mc.raftID() == self {
			me, meCfg = mc.Host, mc
		}
		if mc.raftID() == st.Lead {
			primary = mc.Host
		}
	}
	b.AppendString("setName", cfg.Name)
	b.AppendInt32("setVersion", int32(cfg.Version))
	b.AppendArray("hosts", hosts.Build())
	if npass > 0 {
		b.AppendArray("passives", passives.Build())
		b.AppendBoolean("passive", meCfg.Votes == 0)
	}
	if meCfg.Hidden {
		b.AppendBoolean("hidden", true)
	}
	if primary != "" {
		b.AppendString("primary", primary)
	}
	b.AppendString("me", me)
	if state == statePrimary {
		b.AppendObjectID("electionId", electionID(st.Term))
	}
	// A member applies only committed groups, so its last write is
	// majority-committed too; its opTime is the applied groups' cluster
	// time (the oplog's ts), which only rises.
	wall := m.lastWall.Load()
	ts := m.eng.Storage().LastCommitted()
	applied := bsoncore.NewDocumentBuilder().AppendTimestamp("ts", ts.T(), ts.I()).AppendInt64("t", int64(st.Term)).Build()
	b.AppendDocument("lastWrite", bsoncore.NewDocumentBuilder().
		AppendDocument("opTime", applied).
		AppendDateTime("lastWriteDate", wall).
		AppendDocument("majorityOpTime", applied).
		AppendDateTime("majorityWriteDate", wall).
		Build())
	return b.Build()
}

// CheckWriteConcern refuses, before a write runs, a w no configuration
// of this set can satisfy: a number above its members
// (UnsatisfiableWriteConcern) or a mode other than "majority" (Cairn has
// no tag sets: UnknownReplWriteConcern).
func (m *Member) CheckWriteConcern(w bsoncore.Value) error {
	if w.Type == 0 {
		return nil
	}
	if s, ok := w.StringValueOK(); ok {
		if s == "majority" {
			return nil
		}
		return mongoerr.New(mongoerr.UnknownReplWriteConcern, "Unrecognized write concern mode: %s", s)
	}
	n, ok := w.AsInt64OK()
	if !ok || n < 0 {
		return mongoerr.New(mongoerr.FailedToParse, "w has to be a non-negative number or a string, not %s", w)
	}
	if cfg := m.config(); cfg != nil && n > int64(len(cfg.Members)) {
		return mongoerr.New(mongoerr.UnsatisfiableWriteConcern, "Not enough data-bearing nodes")
	}
	return nil
}

// WaitWriteConcern waits after a write as w asks. Every acknowledged
// write is committed by a majority of the voters already (a commit group
// is acknowledged only once Raft committed and this member applied it),
// so w: 1 and w: "majority" need no wait; w: N above the majority waits
// until N members' logs hold this member's applied index, up to wtimeout
// (0: until the operation's deadline), then answers WriteConcernFailed
// with errInfo.wtimeout.
func (m *Member) WaitWriteConcern(ctx context.Context, w bsoncore.Value, wtimeout time.Duration) bsoncore.Document {
	n, ok := w.AsInt64OK()
	node, _ := m.nodeState()
	cfg := m.config()
	if !ok || node == nil || cfg == nil || n <= int64(cfg.voters()/2+1) {
		return nil
	}
	target := node.Status().Applied
	var deadline <-chan time.Time
	if wtimeout > 0 {
		t := time.NewTimer(wtimeout)
		defer t.Stop()
		deadline = t.C
	}
	for {
		count := int64(0)
		for _, pr := range node.Progress() {
			if pr.Match >= target {
				count++
			}
		}
		if count >= n {
			return nil
		}
		select {
		case <-deadline:
			return wceDoc(w, wtimeout, "waiting for replication timed out")
		case <-ctx.Done():
			return wceDoc(w, wtimeout, "operation ended while waiting for replication: "+ctx.Err().Error())
		case <-time.After(2 * time.Millisecond):
		}
	}
}

func wceDoc(w bsoncore.Value, wtimeout time.Duration, msg string) bsoncore.Document {
	return bsoncore.NewDocumentBuilder().
		AppendInt32("code", int32(mongoerr.WriteConcernFailed)).
		AppendString("codeName", mongoerr.WriteConcernFailed.Name()).
		AppendString("errmsg", msg).
		AppendDocument("errInfo", bsoncore.NewDocumentBuilder().
			AppendBoolean("wtimeout", true).
			AppendDocument("writeConcern", bsoncore.NewDocumentBuilder().
				AppendValue("w", w).
				AppendInt64("wtimeout", wtimeout.Milliseconds()).
				AppendString("provenance", "clientSupplied").Build()).
			Build()).
		Build()
}

// Linearize serves read concern linearizable with Raft's ReadIndex (not a
// leader lease: ReadIndex asks a quorum, so it is safe under clock skew):
// it returns once this member, the primary, has applied everything
// committed before the call.
func (m *Member) Linearize(ctx context.Context) error {
	node, _ := m.nodeState()
	if node == nil || !m.primary.Load() {
		return mongoerr.New(mongoerr.NotWritablePrimary, "cannot satisfy linearizable read concern on non-primary node")
	}
	_, err := node.ReadIndex(ctx)
	return replError(err)
}
