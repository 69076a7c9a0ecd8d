package repl

import (
	"encoding/binary"

	pb "go.etcd.io/raft/v3/raftpb"

	"github.com/cairndb/cairn/internal/hoptrace"
)

// The node's part of package hoptrace's trace (built with the cairntrace
// tag only; every call below sits behind hoptrace.Enabled, so a normal
// build carries none of it): a proposal's timestamps on the leader, and
// on a follower when its loop stepped the append an acknowledgement
// answers.

// propTrace is a proposal's way through the leader, in hoptrace.Now's
// nanoseconds (0: not yet).
type propTrace struct {
	index                                       uint64 // its entry's, once a Ready carried it
	start, taken, handed, ack1, ack2, own, done int64
	commit                                      int64
	ack1From                                    uint64
}

// traceHanded marks the proposals whose entries m appends (a leader's own
// MsgStorageAppend) handed to the appender.
func (n *Node) traceHanded(m *pb.Message, now int64) {
	for _, e := range m.GetEntries() {
		d := e.GetData()
		if e.GetType() != pb.EntryNormal || len(d) < headerLen || binary.BigEndian.Uint64(d) != n.incarnation {
			continue
		}
		if p, ok := n.pending[binary.BigEndian.Uint64(d[8:])]; ok && p.tr != nil && p.tr.handed == 0 {
			p.tr.index, p.tr.handed = e.GetIndex(), now
			hoptrace.Since(hoptrace.EntryHand, p.tr.taken)
		}
	}
}

// traceStepped follows a message just stepped: a follower's (or this
// leader's own) acknowledgement of an append, and the commit index it may
// have moved; on a follower, the time an append was stepped, which its
// acknowledgement is measured from.
func (n *Node) traceStepped(m *pb.Message) {
	switch m.GetType() {
	case pb.MsgApp:
		if k := len(m.GetEntries()); k > 0 {
			if len(n.trApps) > 4096 {
				clear(n.trApps)
			}
			n.trApps[m.GetIndex()+uint64(k)] = hoptrace.Now()
		}
		return
	case pb.MsgAppResp:
		if m.GetReject() {
			return
		}
	default:
		return
	}
	now := hoptrace.Now()
	commit := n.rn.BasicStatus().GetCommit()
	for _, p := range n.pending {
		tr := p.tr
		if tr == nil || tr.index == 0 || tr.index > m.GetIndex() && tr.index > commit {
			continue
		}
		if tr.index <= m.GetIndex() {
			switch {
			case m.GetFrom() == n.cfg.ID:
				if tr.own == 0 {
					tr.own = now
					hoptrace.Since(hoptrace.EntryOwn, tr.handed)
				}
			case tr.ack1 == 0:
				tr.ack1, tr.ack1From = now, m.GetFrom()
				hoptrace.Since(hoptrace.EntryAck1, tr.handed)
			case tr.ack2 == 0 && tr.ack1From != m.GetFrom():
				tr.ack2 = now
				hoptrace.Since(hoptrace.EntryAck2, tr.handed)
			}
		}
		if tr.commit == 0 && tr.index <= commit {
			tr.commit = now
			hoptrace.Since(hoptrace.EntryCommit, tr.handed)
		}
	}
}

// traceAppendStepped is when the loop stepped the MsgApp whose entries m
// (a follower's MsgStorageAppend) writes, 0 if none or not traced.
func (n *Node) traceAppendStepped(m *pb.Message) int64 {
	ents := m.GetEntries()
	if len(ents) == 0 {
		return 0
	}
	last := ents[len(ents)-1].GetIndex()
	t := n.trApps[last]
	delete(n.trApps, last)
	return t
}
