package session

import (
	"context"
	"encoding/binary"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/storage"
)

// Retryable-write history that moves with a chunk (issue #21): mongod's
// donor sends the recipient the history of the sessions that wrote the
// migrating collection, so that a retry reaching the recipient after the
// move finds its statements done instead of running them again. Cairn
// moves each such session's newest retryable-write number with the
// replies of its statements that ran (package shardsvr picks the
// sessions from the donor's oplog); a node where the session has begun a
// newer number keeps its own (invariant "Newest transaction wins").
// TestRetryHistoryMoves.

// RetryHistory is a session's newest retryable write: its number and the
// replies of its statements that ran, by statement id.
type RetryHistory struct {
	LSID  bsoncore.Document
	Txn   int64
	Stmts map[int32]bsoncore.Document
}

// RetryHistories reads the newest retryable-write record of each session
// lsids names. Sessions with none here, and those whose newest number is
// a multi-document transaction's (its record has a state), are left out.
func (t *Table) RetryHistories(lsids []bsoncore.Document) ([]RetryHistory, error) {
	var out []RetryHistory
	for _, l := range lsids {
		id, err := Parse(l, [32]byte{}, true)
		if err != nil {
			return nil, err
		}
		doc, found, err := t.eng.Get(nil, TransactionsNS, id.Value())
		if err != nil {
			return nil, err
		}
		if !found {
			continue
		}
		rec := bsoncore.Document(doc)
		if _, err := rec.LookupErr("state"); err == nil {
			continue // a transaction's
		}
		n, ok := rec.Lookup("txnNum").AsInt64OK()
		if !ok {
			continue
		}
		stmts := map[int32]bsoncore.Document{}
		if err := t.loadDone(id, n, stmts); err != nil {
			return nil, err
		}
		if len(stmts) > 0 {
			out = append(out, RetryHistory{LSID: id.Doc(), Txn: n, Stmts: stmts})
		}
	}
	return out, nil
}

// InstallRetryHistories records hs on this node (a migration's
// recipient), in one request, so that a retry of their statements answers
// their replies. A session that has begun a newer number here keeps it,
// and one whose number is a multi-document transaction here, or that
// holds a prepared transaction, is left alone; the same retryable number
// gains the statements it lacks. It waits (until ctx ends) for the
// commands using the sessions, if any, and holds them meanwhile.
func (t *Table) InstallRetryHistories(ctx context.Context, hs []RetryHistory) error {
	type install struct {
		h    RetryHistory
		id   ID
		u    *Use
		have map[int32]bsoncore.Document
	}
	var todo []install
	defer func() {
		for _, in := range todo {
			in.u.Release()
		}
	}()
	taken := map[ID]bool{}
	for _, h := range hs {
		id, err := Parse(h.LSID, [32]byte{}, true)
		if err != nil {
			return err
		}
		if taken[id] {
			continue // once per session: its turn is held already
		}
		taken[id] = true
		t.mu.Lock()
		user := ""
		if e := t.m[id]; e != nil {
			user = e.user
		}
		t.mu.Unlock()
		u, err := t.Checkout(ctx, id, user, nil)
		if err != nil {
			return err
		}
		stored, err := t.storedTxn(id)
		if err != nil {
			u.Release()
			return err
		}
		e := u.e
		t.mu.Lock()
		cur := stored
		if e.loaded && e.txn > cur {
			cur = e.txn
		}
		skip := h.Txn < cur || e.txn == h.Txn && e.tx.status != txnNone || e.tx.status == txnPrepared
		t.mu.Unlock()
		if skip {
			u.Release()
			continue
		}
		have := map[int32]bsoncore.Document{}
		if h.Txn == stored {
			if err := t.loadDone(id, h.Txn, have); err != nil {
				u.Release()
				return err
			}
		}
		// Its records change here, not through a Record: the keys kept
		// in memory are not trusted ("Stale keys from memory").
		e.keysKnown = false
		todo = append(todo, install{h: h, id: id, u: u, have: have})
	}
	if len(todo) == 0 {
		return nil
	}
	if err := t.eng.WriteRider(func(tx *storage.Txn) error {
		for _, in := range todo {
			key := txnPrefix(in.id, in.h.Txn)
			n := len(key)
			for stmt, reply := range in.h.Stmts {
				if _, ok := in.have[stmt]; ok {
					continue
				}
				key = binary.BigEndian.AppendUint32(key[:n], uint32(stmt))
				tx.Set(key, reply)
			}
			if err := t.eng.PutInTxn(tx, TransactionsNS, t.retryRecord(tx, in.id, in.h.Txn)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return err
	}
	t.mu.Lock()
	for _, in := range todo {
		e := in.u.e
		if e.txn < in.h.Txn {
			e.txn = in.h.Txn
			e.abortTxLocked() // a newer number ends an open transaction, as BeginRetry's
			e.tx = txnState{}
		}
		e.loaded = true
	}
	t.mu.Unlock()
	return nil
}
