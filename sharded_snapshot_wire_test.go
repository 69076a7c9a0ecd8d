package cairn_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readconcern"
)

// TestRouterSnapshotBank is the bank workload across shards (issues #19
// and #21: one snapshot across shards): transfers between accounts on
// two shards run as two-phase-commit transactions through a router while
// snapshot readers — transactions with readConcern snapshot and plain
// snapshot finds (read in small batches, so getMore continues at the
// read's time) — sum every account through the router. Every sum must be
// the total (a reader that saw one shard's half of a transfer would not),
// every plain read answers its atClusterTime, and a read at an explicit
// atClusterTime answers the same documents again after later writes.
// Seeded (the seed is logged; CAIRN_SEED replays one); it runs
// CAIRN_SNAPSHOT_BANK_SECONDS seconds (2 by default).
func TestRouterSnapshotBank(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts four servers and a router")
	}
	seed := uint64(time.Now().UnixNano())
	if s, err := strconv.ParseUint(os.Getenv("CAIRN_SEED"), 10, 64); err == nil {
		seed = s
	}
	t.Logf("seed %d", seed)
	run := time.Duration(envInt("CAIRN_SNAPSHOT_BANK_SECONDS", 2)) * time.Second

	kc := startKillableCluster(t, 2)
	ctx := context.Background()
	c := routerClient(t, kc.router)
	for _, s := range kc.shards {
		runAdmin(t, c, bson.D{{Key: "addShard", Value: s}})
	}
	runAdmin(t, c, bson.D{{Key: "enableSharding", Value: "bank"}})
	runAdmin(t, c, bson.D{{Key: "shardCollection", Value: "bank.acct"}, {Key: "key", Value: bson.D{{Key: "_id", Value: "hashed"}}}})
	db := c.Database("bank")
	coll := db.Collection("acct")
	const accounts, balance = 12, 100
	const total = accounts * balance
	byShard := map[string][]int{}
	for i := range accounts {
		if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: i}, {Key: "n", Value: balance}}); err != nil {
			t.Fatal(err)
		}
		s := shardOf(t, db, "acct", bson.D{{Key: "_id", Value: i}})
		byShard[s] = append(byShard[s], i)
	}
	if len(byShard) != 2 {
		t.Fatalf("accounts on %d shards, want both: %v", len(byShard), byShard)
	}
	var sides [][]int
	for _, ids := range byShard {
		sides = append(sides, ids)
	}

	type account struct {
		ID int `bson:"_id"`
		N  int `bson:"n"`
	}
	// plainSess holds the snapshot finds' cursors (a getMore must come
	// from the session that opened its cursor).
	plainSess, err := c.StartSession(options.Session().SetCausalConsistency(false))
	if err != nil {
		t.Fatal(err)
	}
	defer plainSess.EndSession(ctx)
	pctx := mongo.NewSessionContext(ctx, plainSess)
	check := func(what string, docs []account) error {
		sum := 0
		for _, d := range docs {
			sum += d.N
		}
		if len(docs) != accounts || sum != total {
			return fmt.Errorf("%s: %d accounts summing to %d, want %d summing to %d: %v", what, len(docs), sum, accounts, total, docs)
		}
		return nil
	}
	// plainRead is a snapshot find outside a transaction, at (or, zero,
	// at the router's choice), two documents a batch.
	plainRead := func(at bson.Timestamp) ([]account, bson.Timestamp, error) {
		rc := bson.D{{Key: "level", Value: "snapshot"}}
		if !at.IsZero() {
			rc = append(rc, bson.E{Key: "atClusterTime", Value: at})
		}
		var reply struct {
			Cursor struct {
				ID    int64          `bson:"id"`
				First []account      `bson:"firstBatch"`
				Next  []account      `bson:"nextBatch"`
				At    bson.Timestamp `bson:"atClusterTime"`
			} `bson:"cursor"`
		}
		if err := db.RunCommand(pctx, bson.D{{Key: "find", Value: "acct"}, {Key: "sort", Value: bson.D{{Key: "_id", Value: 1}}},
			{Key: "batchSize", Value: 2}, {Key: "readConcern", Value: rc}}).Decode(&reply); err != nil {
			return nil, bson.Timestamp{}, err
		}
		docs, readAt := reply.Cursor.First, reply.Cursor.At
		for id := reply.Cursor.ID; id != 0; id = reply.Cursor.ID {
			reply.Cursor.ID, reply.Cursor.Next = 0, nil
			if err := db.RunCommand(pctx, bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "acct"}, {Key: "batchSize", Value: 2}}).Decode(&reply); err != nil {
				return nil, bson.Timestamp{}, err
			}
			docs = append(docs, reply.Cursor.Next...)
		}
		if readAt.IsZero() {
			return nil, readAt, fmt.Errorf("a snapshot find's reply has no atClusterTime")
		}
		return docs, readAt, nil
	}

	var stop atomic.Bool
	var transfers, txnReads, plainReads, refused atomic.Int64
	var wg sync.WaitGroup
	fail := func(err error) {
		t.Error(err)
		stop.Store(true)
	}
	for w := range 3 { // transfers: two-phase commits
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(seed, uint64(w)))
			sess := startSession(t, c)
			for !stop.Load() {
				from, to := sides[0][rng.IntN(len(sides[0]))], sides[1][rng.IntN(len(sides[1]))]
				if rng.IntN(2) == 0 {
					from, to = to, from
				}
				amount := 1 + rng.IntN(5)
				_, err := sess.WithTransaction(ctx, func(ctx context.Context) (any, error) {
					if _, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: from}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: -amount}}}}); err != nil {
						return nil, err
					}
					_, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: to}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: amount}}}})
					return nil, err
				})
				if err != nil {
					fail(fmt.Errorf("transfer %d → %d: %v", from, to, err))
					return
				}
				transfers.Add(1)
			}
		}()
	}
	wg.Add(2)
	go func() { // snapshot transactions
		defer wg.Done()
		sess := startSession(t, c)
		for !stop.Load() {
			docs, err := sess.WithTransaction(ctx, func(ctx context.Context) (any, error) {
				cur, err := coll.Find(ctx, bson.D{}, options.Find().SetBatchSize(2))
				if err != nil {
					return nil, err
				}
				var docs []account
				err = cur.All(ctx, &docs)
				return docs, err
			}, options.Transaction().SetReadConcern(readconcern.Snapshot()))
			if err == nil {
				err = check("a snapshot transaction", docs.([]account))
			}
			if err != nil {
				fail(err)
				return
			}
			txnReads.Add(1)
		}
	}()
	go func() { // plain snapshot finds
		defer wg.Done()
		for !stop.Load() {
			docs, _, err := plainRead(bson.Timestamp{})
			if code := anyCode(err); code == 239 || code == 246 {
				refused.Add(1) // the router's retries at later times all met a snapshot a shard could not serve
				continue
			}
			if err == nil {
				err = check("a snapshot find", docs)
			}
			if err != nil {
				fail(err)
				return
			}
			plainReads.Add(1)
		}
	}()
	time.Sleep(run)
	stop.Store(true)
	wg.Wait()
	t.Logf("%d transfers, %d snapshot transactions, %d snapshot finds (%d refused after the router's retries) in %v", transfers.Load(), txnReads.Load(), plainReads.Load(), refused.Load(), run)
	if t.Failed() {
		return
	}
	if transfers.Load() == 0 || txnReads.Load() == 0 || plainReads.Load() == 0 {
		t.Fatalf("the workload did not run: %d transfers, %d snapshot transactions, %d snapshot finds", transfers.Load(), txnReads.Load(), plainReads.Load())
	}

	// A read at an explicit atClusterTime answers the same documents
	// again, across a later write (one that changes the total, too).
	docs, at, err := plainRead(bson.Timestamp{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: sides[0][0]}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1000}}}}); err != nil {
		t.Fatal(err)
	}
	again, againAt, err := plainRead(at)
	if err != nil {
		t.Fatalf("a read at atClusterTime %v: %v", at, err)
	}
	if againAt != at || fmt.Sprint(again) != fmt.Sprint(docs) {
		t.Fatalf("a read at %v answered %v at %v, then %v at %v", at, docs, at, again, againAt)
	}
	sess := startSession(t, c)
	inTxn, err := sess.WithTransaction(ctx, func(ctx context.Context) (any, error) {
		cur, err := coll.Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
		if err != nil {
			return nil, err
		}
		var docs []account
		err = cur.All(ctx, &docs)
		return docs, err
	}, options.Transaction().SetReadConcern(readconcern.Snapshot()))
	if err != nil {
		t.Fatal(err)
	}
	sum := 0
	for _, d := range inTxn.([]account) {
		sum += d.N
	}
	if sum != total+1000 {
		t.Fatalf("a snapshot transaction after the write sums to %d, want %d", sum, total+1000)
	}
	// The same at the explicit time in a transaction.
	explicit := mongo.NewSessionContext(ctx, sess)
	if err := sess.StartTransaction(); err != nil { // its readConcern is the command's
		t.Fatal(err)
	}
	var txnReply struct {
		Cursor struct {
			First []account `bson:"firstBatch"`
		} `bson:"cursor"`
	}
	err = db.RunCommand(explicit, bson.D{{Key: "find", Value: "acct"}, {Key: "sort", Value: bson.D{{Key: "_id", Value: 1}}},
		{Key: "readConcern", Value: bson.D{{Key: "level", Value: "snapshot"}, {Key: "atClusterTime", Value: at}}}}).Decode(&txnReply)
	_ = sess.AbortTransaction(ctx)
	if err != nil {
		t.Fatalf("a transaction at atClusterTime %v: %v", at, err)
	}
	if fmt.Sprint(txnReply.Cursor.First) != fmt.Sprint(docs) {
		t.Fatalf("a transaction at %v read %v, a find at it %v", at, txnReply.Cursor.First, docs)
	}
}
