package engine

import (
	"encoding/binary"

	"github.com/cairndb/cairn/internal/storage"
)

// ApplyReplicated applies a commit group a replica set's log committed
// (storage.DB.ApplyReplicated). A group that changed the catalog
// (catalogChanged, the primary's Committing answer) publishes the catalog
// the store then holds: a secondary's readers see the collections and
// indexes its primary made. own groups — this member's, applied while its
// pipeline waits in Hooks.Replicate — publish through the pipeline's own
// hooks instead.
func (e *Engine) ApplyReplicated(index uint64, repr []byte, catalogChanged, own bool) error {
	var err error
	if own || !catalogChanged {
		err = e.db.ApplyReplicated(index, repr)
	} else {
		err = e.cat.Reload(e.db, func() error { return e.db.ApplyReplicated(index, repr) })
	}
	if err == nil && !own {
		e.wake.fireNow(e.oplog.collID) // change streams and oplog tailers on a secondary
		e.historyAfterCommit()         // a secondary's snapshot history (snapshot_history.go)
	}
	return err
}

// Promote readies the engine to write as a replica set's primary after
// it applied other members' groups: it forgets what its pipeline cached
// from the store (collections' tail bounds, invariant "Tail bound"), and
// restarts the sequential id generator on a
// start timestamp above the one the set last persisted, so ids keep
// rising across a failover. Call it once the member applied every entry
// of earlier terms, before it accepts writes.
func (e *Engine) Promote() error {
	if err := e.db.Write(func(*storage.Txn) error {
		e.tails.last = nil
		return nil
	}); err != nil {
		return err
	}
	ts, err := e.nextStartTS()
	if err != nil {
		return err
	}
	e.seq.Restart(ts)
	return nil
}

// RestoreReplicated replaces the store's contents with a replica set
// snapshot (storage's RestoreCheckpoint of the checkpoint in dir, taken
// at log index index) and publishes the catalog it holds. progress is
// storage's.
func (e *Engine) RestoreReplicated(index uint64, dir string, progress func(copied int64)) error {
	e.asOfIters.drop(false) // views of the store being replaced
	e.snaps.closeAll()
	return e.cat.Reload(e.db, func() error { return e.db.RestoreCheckpoint(index, dir, progress) })
}

// barrierKey is the system record Barrier writes.
var barrierKey = storage.SystemKey("barrier")

// Barrier returns once a write requested now has committed: on a replica
// set member, once it went through the replicated log, so every group this
// member's pipeline proposed before it is decided and, if committed,
// applied here (a group lost with its leadership is in no later leader's
// log ahead of the barrier; "Replicated in order"). A member that is not
// the primary fails it (NotWritablePrimary). A retried commitTransaction
// whose first commit's outcome is unknown uses it to learn the outcome.
func (e *Engine) Barrier() error {
	return e.db.Write(func(tx *storage.Txn) error {
		var b [8]byte
		binary.BigEndian.PutUint64(b[:], uint64(e.now().UnixNano()))
		tx.Set(barrierKey, b[:])
		return nil
	})
}
