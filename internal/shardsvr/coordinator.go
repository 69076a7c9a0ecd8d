package shardsvr

import (
	"context"
	"encoding/hex"
	"errors"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/failpoint"
	"github.com/cairndb/cairn/internal/memberclient"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// Two-phase commit's coordinator (coordinateCommitTransaction, MongoDB's
// TransactionCoordinator): the router sends a transaction that wrote on
// several shards to the first of them, which coordinates:
//
//  1. it records the participants durably (config.transaction_coordinators
//     {_id: {lsid, txnNumber}, participants}, a majority write);
//  2. it sends prepareTransaction to every participant (itself included),
//     each of which makes its writes durable and holds them (package
//     session's "Only commit or abort ends a prepared transaction");
//  3. every participant prepared: the decision is commit at
//     commitTimestamp = the highest prepareTimestamp; any refused (a vote
//     to abort: a write conflict, a transaction it no longer has) or did
//     not answer in time: abort. The decision is written into the same
//     document ({decision: {decision, commitTimestamp}}, majority) before
//     any participant hears it;
//  4. it sends commitTransaction {commitTimestamp} (or abortTransaction) to
//     every participant until each acknowledges, then deletes the document
//     and answers the router: ok, or NoSuchTransaction for an abort.
//
// Invariant "Decision before delivery": no participant is told to commit
// before the commit decision is durable on the coordinator's replica set
// (majority), so a coordinator that dies after telling one participant
// resumes with the same decision; one that dies before deciding resumes
// from step 2 (prepare is idempotent), and its decision is the one every
// participant then hears. Recovery (recoverTxnCoordinators, from the
// background loop on a primary) resumes every document not being
// coordinated in this process.
//
// A coordinateCommitTransaction for a transaction this shard coordinates
// now waits for that coordination's outcome; for one it no longer has a
// document of (a retried commit, another router's, participants: []) the
// outcome is this shard's own participant's: its config.transactions
// record says committed (ok) or not (NoSuchTransaction) — the coordinator
// is always a participant, and deletes its document only after every
// participant acknowledged the decision.

// The coordinator's fail points (MongoDB's names): a coordinator that
// hangs after every participant prepared, before it writes its decision;
// and after it wrote a commit decision, before any participant hears it.
// The fault tests kill processes there.
const (
	HangBeforeWritingDecisionFailPoint       = "hangBeforeWritingDecision"
	HangBeforeSendingCommitDecisionFailPoint = "hangBeforeSendingCommitDecision"
)

// hang waits while p is on (once it fired), or until ctx ends.
func hang(ctx context.Context, p *failpoint.Point) {
	if _, on := p.Eval(nil); !on {
		return
	}
	for p.Active() && ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
	}
}

// coordinatorsColl is where coordinations are recorded (MongoDB's name).
const coordinatorsColl = "transaction_coordinators"

// prepareTimeout bounds the prepare phase: a participant that has not
// answered by then is taken as a vote to abort.
const prepareTimeout = 30 * time.Second

// coordination is one transaction being coordinated in this process.
type coordination struct {
	done chan struct{}
	err  error // the outcome: nil committed, else the abort's or the failure's error
}

// coordinators are the coordinations in progress, by coordKey.
type coordinators struct {
	mu sync.Mutex
	m  map[string]*coordination
}

func coordKey(lsid bsoncore.Document, txn int64) string {
	return hex.EncodeToString(lsid) + "/" + string(bsoncore.AppendInt64(nil, txn))
}

// coordinateCommit is coordinateCommitTransaction.
func (n *Node) coordinateCommit(ctx context.Context, body bsoncore.Document) (bsoncore.Document, error) {
	lsid, ok := body.Lookup("lsid").DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "coordinateCommitTransaction needs the transaction's lsid and txnNumber")
	}
	txn, ok := body.Lookup("txnNumber").AsInt64OK()
	if !ok {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "coordinateCommitTransaction needs the transaction's lsid and txnNumber")
	}
	lsid = append(bsoncore.Document(nil), lsid...)
	var participants []string
	if arr, ok := body.Lookup("participants").ArrayOK(); ok {
		vals, _ := arr.Values()
		for _, v := range vals {
			d, ok := v.DocumentOK()
			s, ok2 := d.Lookup("shardId").StringValueOK()
			if !ok || !ok2 || s == "" {
				return nil, mongoerr.New(mongoerr.BadValue, "coordinateCommitTransaction: each participant is {shardId: <string>}")
			}
			participants = append(participants, s)
		}
	}
	c, err := n.startCoordination(ctx, lsid, txn, participants)
	if err != nil {
		return nil, err
	}
	if c == nil {
		return bsoncore.NewDocumentBuilder().Build(), nil // the local participant committed
	}
	select {
	case <-c.done:
	case <-ctx.Done():
		return nil, mongoerr.New(mongoerr.ExceededTimeLimit, "coordinateCommitTransaction: the coordination of transaction %d goes on, its outcome is not known yet", txn)
	}
	if c.err != nil {
		return nil, c.err
	}
	return bsoncore.NewDocumentBuilder().Build(), nil
}

// startCoordination joins the coordination of (lsid, txn) in progress, or
// resumes its recorded one, or — when the local participant has not
// ended it — starts one over participants. nil, nil: the local
// participant committed it (a retried commit after the end).
func (n *Node) startCoordination(ctx context.Context, lsid bsoncore.Document, txn int64, participants []string) (*coordination, error) {
	key := coordKey(lsid, txn)
	n.coords.mu.Lock()
	if c := n.coords.m[key]; c != nil {
		n.coords.mu.Unlock()
		return c, nil
	}
	n.coords.mu.Unlock()
	docs, err := n.localFind(ctx, "config", coordinatorsColl, bson.D{{Key: "_id", Value: coordID(lsid, txn)}})
	if err != nil {
		return nil, err
	}
	var rec bsoncore.Document
	if len(docs) > 0 {
		rec = docs[0]
	} else {
		committed, ended, err := n.localOutcome(ctx, lsid, txn)
		if err != nil {
			return nil, err
		}
		if committed {
			return nil, nil
		}
		if ended || len(participants) == 0 {
			return nil, mongoerr.New(mongoerr.NoSuchTransaction, "Transaction %d was aborted (its coordinator has no record of it and this participant did not commit it)", txn)
		}
	}
	c := &coordination{done: make(chan struct{})}
	n.coords.mu.Lock()
	if n.coords.m == nil {
		n.coords.m = map[string]*coordination{}
	}
	if old := n.coords.m[key]; old != nil {
		n.coords.mu.Unlock()
		return old, nil
	}
	n.coords.m[key] = c
	n.coords.mu.Unlock()
	n.wg.Add(1)
	go func() {
		defer n.wg.Done()
		c.err = coordinationDone(lsid, txn, n.coordinate(lsid, txn, participants, rec))
		n.coords.mu.Lock()
		delete(n.coords.m, key)
		n.coords.mu.Unlock()
		close(c.done)
	}()
	return c, nil
}

// coordID is a coordination's _id.
func coordID(lsid bsoncore.Document, txn int64) bson.D {
	return bson.D{{Key: "lsid", Value: rawDoc(lsid)}, {Key: "txnNumber", Value: txn}}
}

// localOutcome reads this shard's config.transactions record of the
// session: whether transaction txn committed here, and whether it ended
// here otherwise (aborted, or a newer number).
func (n *Node) localOutcome(ctx context.Context, lsid bsoncore.Document, txn int64) (committed, ended bool, err error) {
	docs, err := n.localFind(ctx, "config", "transactions", bson.D{{Key: "_id", Value: rawDoc(lsid)}})
	if err != nil || len(docs) == 0 {
		return false, false, err
	}
	num, _ := docs[0].Lookup("txnNum").AsInt64OK()
	state, _ := docs[0].Lookup("state").StringValueOK()
	switch {
	case num > txn:
		return false, true, nil
	case num == txn && state == "committed":
		return true, true, nil
	case num == txn && state == "aborted":
		return false, true, nil
	}
	return false, false, nil
}

// coordinate runs a coordination to its end (steps 1–4), from its
// recorded document rec when resuming one (nil: a new one). It runs on
// the node's context: a router that stops waiting does not stop it.
func (n *Node) coordinate(lsid bsoncore.Document, txn int64, participants []string, rec bsoncore.Document) error {
	ctx := n.ctx
	id := coordID(lsid, txn)
	var decided bool
	var commit bool
	var commitTS bson.Timestamp
	if rec == nil {
		if _, err := n.local(ctx, "config", bson.D{{Key: "insert", Value: coordinatorsColl},
			{Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: id}, {Key: "participants", Value: participants}}}},
			{Key: "writeConcern", Value: majority}}); err != nil {
			return stepDownErr(err)
		}
	} else {
		participants = participants[:0]
		arr, _ := rec.Lookup("participants").ArrayOK()
		vals, _ := arr.Values()
		for _, v := range vals {
			if s, ok := v.StringValueOK(); ok {
				participants = append(participants, s)
			}
		}
		if d, ok := rec.Lookup("decision").DocumentOK(); ok {
			decided = true
			what, _ := d.Lookup("decision").StringValueOK()
			commit = what == "commit"
			t, i, _ := d.Lookup("commitTimestamp").TimestampOK()
			commitTS = bson.Timestamp{T: t, I: i}
		}
	}
	var voteErr error
	if !decided {
		commit, commitTS, voteErr = n.preparePhase(ctx, lsid, txn, participants)
		hang(ctx, n.hangBeforeDecision)
		decision := bson.D{{Key: "decision", Value: "abort"}}
		if commit {
			decision = bson.D{{Key: "decision", Value: "commit"}, {Key: "commitTimestamp", Value: commitTS}}
		}
		if _, err := n.local(ctx, "config", bson.D{{Key: "update", Value: coordinatorsColl},
			{Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: id}}}, {Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "decision", Value: decision}}}}}}}},
			{Key: "writeConcern", Value: majority}}); err != nil {
			return stepDownErr(err) // undecided: recovery prepares again and decides
		}
	}
	cmd := bson.D{{Key: "abortTransaction", Value: 1}}
	if commit {
		hang(ctx, n.hangBeforeDelivery)
		cmd = bson.D{{Key: "commitTransaction", Value: 1}, {Key: "commitTimestamp", Value: commitTS}}
	}
	if err := n.deliver(ctx, lsid, txn, participants, cmd); err != nil {
		return stepDownErr(err)
	}
	if _, err := n.local(ctx, "config", bson.D{{Key: "delete", Value: coordinatorsColl},
		{Key: "deletes", Value: bson.A{bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: id}}}, {Key: "limit", Value: 1}}}},
		{Key: "writeConcern", Value: majority}}); err != nil {
		n.opts.Log.Warn("deleting a transaction coordinator's document failed; recovery delivers its decision again", "err", err)
	}
	if !commit {
		msg := "a participant did not prepare"
		if voteErr != nil {
			msg = voteErr.Error()
		}
		return mongoerr.New(mongoerr.NoSuchTransaction, "Transaction %d was aborted by its coordinator: %s", txn, msg)
	}
	return nil
}

// stepDownErr is a coordinator's failure to write its own document: it
// stops here (its replica set's next primary resumes the coordination),
// as MongoDB's coordinator stepping down; its waiters get it as
// InterruptedDueToReplStateChange (coordinationDone).
func stepDownErr(err error) error {
	if errors.Is(err, context.Canceled) {
		return mongoerr.New(mongoerr.TransactionCoordinatorSteppingDown, "the transaction coordinator is shutting down: %v", err)
	}
	return mongoerr.New(mongoerr.TransactionCoordinatorSteppingDown, "the transaction coordinator could not record its progress (%v): its replica set's primary resumes it", err)
}

// coordinationDone is the outcome a coordination's waiters get, as
// MongoDB's TransactionCoordinator::_done: TransactionCoordinatorSteppingDown
// (this node, the sender, stopping) becomes InterruptedDueToReplStateChange,
// a retryable error for the router and the driver, which commit again and
// reach the next primary's resumed coordination.
func coordinationDone(lsid bsoncore.Document, txn int64, err error) error {
	if mongoerr.CodeOf(err) != mongoerr.TransactionCoordinatorSteppingDown {
		return err
	}
	reason := err.Error()
	var me *mongoerr.Error
	if errors.As(err, &me) {
		reason = me.Msg
	}
	return mongoerr.New(mongoerr.InterruptedDueToReplStateChange, "Coordinator %s:%d stopped due to: %s", bson.Raw(lsid), txn, reason)
}

// txnCmd is a command of transaction (lsid, txn) for a participant.
func txnCmd(cmd bson.D, lsid bsoncore.Document, txn int64) bson.D {
	return append(cmd, bson.E{Key: "lsid", Value: rawDoc(lsid)}, bson.E{Key: "txnNumber", Value: txn},
		bson.E{Key: "autocommit", Value: false}, bson.E{Key: "writeConcern", Value: majority})
}

// runOnShard runs cmd on shard's primary: this server's own through the
// local command path, another's through its config.shards host.
func (n *Node) runOnShard(ctx context.Context, shardName string, cmd bson.D) (bsoncore.Document, error) {
	id, err := n.shardIdentity(ctx)
	if err != nil {
		return nil, err
	}
	if shardName == id.ShardName {
		return n.local(ctx, "admin", cmd)
	}
	host, err := n.shardHost(ctx, shardName)
	if err != nil {
		return nil, err
	}
	return n.peers.RunPrimary(ctx, host, command("admin", cmd))
}

// preparePhase sends prepareTransaction to every participant at once and
// decides: commit at the highest prepareTimestamp when every one
// prepared, abort (with the first refusal) otherwise.
func (n *Node) preparePhase(ctx context.Context, lsid bsoncore.Document, txn int64, participants []string) (bool, bson.Timestamp, error) {
	ctx, cancel := context.WithTimeout(ctx, prepareTimeout)
	defer cancel()
	type vote struct {
		ts  bson.Timestamp
		err error
	}
	votes := make([]vote, len(participants))
	var wg sync.WaitGroup
	for i, p := range participants {
		wg.Add(1)
		go func() {
			defer wg.Done()
			reply, err := n.runOnShard(ctx, p, txnCmd(bson.D{{Key: "prepareTransaction", Value: 1}}, lsid, txn))
			if err == nil {
				t, inc, ok := reply.Lookup("prepareTimestamp").TimestampOK()
				if !ok {
					err = mongoerr.New(mongoerr.InternalError, "shard %s answered prepareTransaction without a prepareTimestamp", p)
				}
				votes[i].ts = bson.Timestamp{T: t, I: inc}
			}
			votes[i].err = err
		}()
	}
	wg.Wait()
	var max bson.Timestamp
	for i, v := range votes {
		if v.err != nil {
			return false, bson.Timestamp{}, errors.Join(errors.New("shard "+participants[i]+" voted to abort"), v.err)
		}
		if v.ts.After(max) {
			max = v.ts
		}
	}
	return true, max, nil
}

// deliver sends the decision to every participant until each
// acknowledges it (ok, or — MongoDB's TwoPhaseDecisionAckError — a
// transaction it no longer has: NoSuchTransaction, TransactionTooOld),
// retrying on the node's context: a participant down now hears it when it
// is back.
func (n *Node) deliver(ctx context.Context, lsid bsoncore.Document, txn int64, participants []string, cmd bson.D) error {
	var wg sync.WaitGroup
	for _, p := range participants {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for attempt := 0; ; attempt++ {
				c, cancel := context.WithTimeout(ctx, 10*time.Second)
				_, err := n.runOnShard(c, p, txnCmd(append(bson.D(nil), cmd...), lsid, txn))
				cancel()
				switch mongoerr.CodeOf(err) {
				case 0, mongoerr.NoSuchTransaction, mongoerr.TransactionTooOld:
					var re *memberclient.ReplyError
					if err == nil || errors.As(err, &re) {
						return
					}
				}
				if ctx.Err() != nil {
					return
				}
				n.opts.Log.Warn("delivering a transaction's decision failed; retrying", "shard", p, "err", err)
				select {
				case <-ctx.Done():
					return
				case <-time.After(time.Duration(min(attempt+1, 20)) * 100 * time.Millisecond):
				}
			}
		}()
	}
	wg.Wait()
	return ctx.Err()
}

// recoverTxnCoordinators resumes every recorded coordination not running
// in this process (after a restart or on becoming primary).
func (n *Node) recoverTxnCoordinators(ctx context.Context) {
	docs, err := n.localFind(ctx, "config", coordinatorsColl, bson.D{})
	if err != nil {
		return
	}
	for _, d := range docs {
		idDoc, ok := d.Lookup("_id").DocumentOK()
		if !ok {
			continue
		}
		lsid, _ := idDoc.Lookup("lsid").DocumentOK()
		txn, _ := idDoc.Lookup("txnNumber").AsInt64OK()
		key := coordKey(lsid, txn)
		n.coords.mu.Lock()
		_, running := n.coords.m[key]
		n.coords.mu.Unlock()
		if running {
			continue
		}
		n.opts.Log.Info("resuming a transaction coordination", "txnNumber", txn)
		if _, err := n.startCoordination(ctx, append(bsoncore.Document(nil), lsid...), txn, nil); err != nil {
			n.opts.Log.Warn("resuming a transaction coordination failed; it will be retried", "err", err)
		}
	}
}
