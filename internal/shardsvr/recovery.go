package shardsvr

import (
	"context"
	"errors"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/shard"
)

// The range deleter and the recovery of interrupted migrations. Durable
// state on a shard, in its config database (replicated like any write):
//
//   - config.migrationCoordinators {_id: sessionId, nss, min, max,
//     donorShardId, recipientShardId, recipientHost}: the donor writes it
//     before the recipient starts and removes it once the outcome is
//     known and acted on.
//   - config.rangeDeletions {_id, nss, range: {min, max}, pending,
//     whenToClean}: a range whose documents this shard must delete. The
//     donor records its range (pending: false) once the commit is known;
//     the recipient records the received range (pending: true) before
//     copying, so a crash leaves a trace.
//
// The config servers' config.chunks is the one truth of ownership; every
// resolution asks it (invariant "One owner": a shard deletes documents
// only of a range it does not own there, and only once the migration
// that could give it the range is decided).

// background resolves interrupted migrations after a start, then runs the
// range deleter whenever woken (and every few seconds).
func (n *Node) background() {
	defer n.wg.Done()
	tick := time.NewTicker(3 * time.Second)
	defer tick.Stop()
	for {
		if n.opts.IsPrimary() {
			if id, _ := n.shardIdentity(n.ctx); id != nil {
				n.recoverCoordinators(n.ctx)
				n.recoverTxnCoordinators(n.ctx) // coordinator.go
				if err := n.runRangeDeletions(n.ctx); err != nil && n.ctx.Err() == nil {
					n.opts.Log.Warn("range deletion failed; it will be retried", "err", err)
				}
			}
		}
		select {
		case <-n.ctx.Done():
			return
		case <-tick.C:
		case <-n.kick:
		}
	}
}

func (n *Node) wake() {
	select {
	case n.kick <- struct{}{}:
	default:
	}
}

// recoverCoordinators resolves the donor's migrations that a crash
// interrupted (none is in progress in this process): committed ones get
// their range deletion, others are aborted on the recipient.
func (n *Node) recoverCoordinators(ctx context.Context) {
	docs, err := n.localFind(ctx, "config", "migrationCoordinators", bson.D{})
	if err != nil {
		return
	}
	for _, d := range docs {
		id, _ := d.Lookup("_id").StringValueOK()
		n.mu.Lock()
		active := n.donating != nil && n.donating.id == id
		n.mu.Unlock()
		if active {
			continue
		}
		ns, _ := d.Lookup("nss").StringValueOK()
		to, _ := d.Lookup("recipientShardId").StringValueOK()
		host, _ := d.Lookup("recipientHost").StringValueOK()
		min, _ := d.Lookup("min").DocumentOK()
		max, _ := d.Lookup("max").DocumentOK()
		m, _, err := n.loadMap(ctx, ns)
		if err != nil || m == nil {
			continue
		}
		r, err := newRange(m.Pattern, min, max)
		if err != nil {
			continue
		}
		if ownsAny(m, to, r) {
			n.opts.Log.Info("recovered a committed migration", "ns", ns, "to", to)
			_ = n.refresh(ctx, n.meta(ns))
			n.afterCommit(ctx, id, ns, r, host)
		} else {
			n.opts.Log.Info("recovered an uncommitted migration: aborting it", "ns", ns, "to", to)
			n.tellRecipient(ctx, host, "_recvChunkAbort", id)
			n.forgetCoordinator(ctx, id)
		}
	}
}

// resolveLater waits for the outcome of a commit that went unanswered,
// then ends the critical section. recoverCoordinators decides it — here or
// in the background loop, whichever comes first — so the coordinator
// document's removal is the signal; the map is reloaded (or dropped)
// before the writes waiting on the critical section go on.
func (n *Node) resolveLater(id string, cm *collMeta, exit func()) {
	defer exit()
	for n.ctx.Err() == nil {
		docs, err := n.localFind(n.ctx, "config", "migrationCoordinators", bson.D{{Key: "_id", Value: id}})
		if err == nil && len(docs) == 0 {
			n.refreshAfterCommit(n.ctx, cm)
			return
		}
		if err == nil {
			n.recoverCoordinators(n.ctx) // skips it while moveRange is still returning
		}
		select {
		case <-n.ctx.Done():
		case <-time.After(time.Second):
		}
	}
}

// resolveReceipt settles a received range: committed, its pending task
// is dropped (the copy is this shard's own); aborted, the copy is deleted
// unless the config servers say this shard owns the range.
func (n *Node) resolveReceipt(ctx context.Context, id string, committed bool) error {
	n.rangeMu.Lock()
	defer n.rangeMu.Unlock()
	tasks, err := n.localFind(ctx, "config", "rangeDeletions", bson.D{{Key: "_id", Value: id}})
	if err != nil || len(tasks) == 0 {
		return err
	}
	t := tasks[0]
	if !committed {
		if err := n.deleteTaskRange(ctx, t); err != nil {
			return err
		}
	}
	return n.dropTask(ctx, t.Lookup("_id"))
}

// deleteTaskRange deletes a task's range, unless this shard owns part of
// it on the config servers (then the task is stale and nothing goes).
func (n *Node) deleteTaskRange(ctx context.Context, t bsoncore.Document) error {
	ns, _ := t.Lookup("nss").StringValueOK()
	min, _ := t.Lookup("range", "min").DocumentOK()
	max, _ := t.Lookup("range", "max").DocumentOK()
	me, err := n.shardIdentity(ctx)
	if err != nil {
		return err
	}
	m, _, err := n.loadMap(ctx, ns)
	if err != nil {
		return err
	}
	var p *shard.Pattern
	if m != nil {
		p = m.Pattern
	} else if key, ok := t.Lookup("shardKeyPattern").DocumentOK(); ok {
		if p, err = shard.ParsePattern(key); err != nil {
			return err
		}
	} else {
		return nil // the collection is gone from the config servers
	}
	r, err := newRange(p, min, max)
	if err != nil {
		return err
	}
	if ownsAny(m, me.ShardName, r) {
		n.opts.Log.Warn("a range deletion names a range this shard owns: dropping the task, keeping the documents", "ns", ns, "min", min.String(), "max", max.String())
		return nil
	}
	removed, err := n.deleteInRange(ctx, ns, r)
	if err == nil {
		n.opts.Log.Info("deleted a range", "ns", ns, "min", min.String(), "max", max.String(), "documents", removed)
	}
	return err
}

func (n *Node) dropTask(ctx context.Context, id bsoncore.Value) error {
	_, err := n.local(ctx, "config", bson.D{{Key: "delete", Value: "rangeDeletions"}, {Key: "deletes", Value: bson.A{
		bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: bson.RawValue{Type: bson.Type(id.Type), Value: id.Data}}}}, {Key: "limit", Value: 1}}}},
		{Key: "writeConcern", Value: majority}})
	return err
}

// runRangeDeletions runs every range deletion that is due: the donor's
// (pending: false), and a recipient's pending one whose migration is no
// longer receiving here and whose donor has forgotten it (its coordinator
// is gone, so the outcome is in config.chunks).
func (n *Node) runRangeDeletions(ctx context.Context) error {
	tasks, err := n.localFind(ctx, "config", "rangeDeletions", bson.D{})
	if err != nil {
		return err
	}
	var errs []error
	for _, t := range tasks {
		id, _ := t.Lookup("_id").StringValueOK()
		if pending, _ := t.Lookup("pending").BooleanOK(); pending {
			n.mu.Lock()
			rc := n.receipts[id]
			n.mu.Unlock()
			if rc != nil && !rc.ended() || !n.donorForgot(ctx, t, id) {
				continue
			}
			// A receipt whose receiving ended (failed, or done and
			// waiting for word) and whose donor forgot the migration
			// missed the donor's word — an abort or release that failed
			// or was cut off, which the donor does not send again.
			if rc != nil {
				rc.endCritical(ctx)
			}
			if err := n.settleOrphanedReceipt(ctx, t); err != nil {
				errs = append(errs, err)
				continue
			}
			if rc != nil {
				n.forgetReceipt(id)
			}
			continue
		}
		err := func() error {
			n.rangeMu.Lock()
			defer n.rangeMu.Unlock()
			if err := n.deleteTaskRange(ctx, t); err != nil {
				return err
			}
			return n.dropTask(ctx, t.Lookup("_id"))
		}()
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// donorForgot asks the donor whether it still holds the migration's
// coordinator; an unreachable donor has not.
func (n *Node) donorForgot(ctx context.Context, t bsoncore.Document, id string) bool {
	host, _ := t.Lookup("donorHost").StringValueOK()
	c, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	reply, err := n.peers.RunPrimary(c, host, command("config", bson.D{{Key: "find", Value: "migrationCoordinators"}, {Key: "filter", Value: bson.D{{Key: "_id", Value: id}}}}))
	if err != nil {
		return false
	}
	batch, _ := reply.Lookup("cursor", "firstBatch").ArrayOK()
	vals, _ := batch.Values()
	return len(vals) == 0
}

// settleOrphanedReceipt resolves a received range whose donor decided
// without telling this shard: owned here, the copy stays; otherwise it
// goes.
func (n *Node) settleOrphanedReceipt(ctx context.Context, t bsoncore.Document) error {
	n.rangeMu.Lock()
	defer n.rangeMu.Unlock()
	if err := n.deleteTaskRange(ctx, t); err != nil {
		return err
	}
	return n.dropTask(ctx, t.Lookup("_id"))
}
