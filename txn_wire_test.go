package cairn_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readconcern"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"

	"github.com/cairndb/cairn/internal/testnet"
	"github.com/cairndb/cairn/internal/txncheck"
)

// replSet is a three-member set of real `cairn serve --replSet` processes.
type replSet struct {
	bin     string
	hosts   []string // as the configuration names them
	members []*memberProc
	// net, when set, is the proxies the configuration names as the
	// members' hosts (startPartitionableSet), for partitions.
	net *netProxy
}

// startReplSet starts and initiates a three-member set and waits for it.
func startReplSet(t *testing.T) *replSet { return startSet(t, false) }

// startPartitionableSet is startReplSet with every connection to a member
// through a netProxy (rs.net), so a test can partition the members; rs.net
// is nil where the proxies' loopback address cannot be bound.
func startPartitionableSet(t *testing.T) *replSet { return startSet(t, true) }

func startSet(t *testing.T, proxied bool) *replSet {
	t.Helper()
	tmp := t.TempDir()
	rs := &replSet{bin: buildCairnBinary(t, tmp)}
	ports := freePorts(t, 3)
	if proxied {
		rs.net = startNetProxy(t, ports)
	}
	cfgMembers := bson.A{}
	for i, p := range ports {
		rs.members = append(rs.members, startMember(t, rs.bin, filepath.Join(tmp, fmt.Sprintf("m%d", i)), p))
		h := net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
		if rs.net != nil {
			h = rs.net.hosts[i]
		}
		rs.hosts = append(rs.hosts, h)
		cfgMembers = append(cfgMembers, bson.D{{Key: "_id", Value: i}, {Key: "host", Value: h}})
	}
	first := directClient(t, rs.hosts[0])
	defer first.Disconnect(context.Background())
	cfg := bson.D{{Key: "_id", Value: "rs0"}, {Key: "members", Value: cfgMembers}}
	if err := first.Database("admin").RunCommand(context.Background(), bson.D{{Key: "replSetInitiate", Value: cfg}}).Err(); err != nil {
		t.Fatalf("replSetInitiate: %v", err)
	}
	waitHealthy(t, rs.hosts, 3)
	return rs
}

func (rs *replSet) client(t *testing.T) *mongo.Client {
	t.Helper()
	uri := "mongodb://" + rs.hosts[0] + "," + rs.hosts[1] + "," + rs.hosts[2] + "/?replicaSet=rs0"
	c, err := mongo.Connect(options.Client().ApplyURI(uri).SetRetryWrites(true).
		SetServerSelectionTimeout(testnet.ConnectWait).SetWriteConcern(writeconcern.Majority()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Disconnect(context.Background()) })
	return c
}

// killPrimary kills the primary with SIGKILL and returns a function that
// restarts it and waits for the set to be whole again.
func (rs *replSet) killPrimary(t *testing.T) (restart func()) {
	t.Helper()
	p := primaryOf(t, rs.hosts)
	m := rs.members[p]
	m.kill()
	return func() {
		rs.members[p] = startMember(t, rs.bin, m.dir, m.port)
		waitHealthy(t, rs.hosts, 3)
	}
}

// partitionPrimary cuts the primary off from the other members for d,
// then heals the network; clients still reach every member. isolate cuts
// it from both others (they elect a new primary; it keeps answering its
// clients until it finds it lost its quorum); otherwise only from the
// first of them, which still reaches the other: a bridge, where the
// primary keeps its majority and the cut member must not depose it. It
// returns what it did, for the run's log. Without a proxy it pauses the
// primary.
func (rs *replSet) partitionPrimary(t *testing.T, d time.Duration, isolate bool) string {
	t.Helper()
	p := primaryOf(t, rs.hosts)
	if rs.net == nil {
		rs.pausePrimary(t, d)
		return fmt.Sprintf("primary paused (SIGSTOP, no proxy for a partition) for %v", d)
	}
	var others []int
	for i := range rs.members {
		if i != p {
			others = append(others, i)
		}
	}
	if !isolate {
		others = others[:1]
	}
	rs.net.Partition([]int{p}, others)
	// Whether the cut bit: with the primary isolated, the others elect
	// one of them (unless d is shorter than their election timeout).
	end, elected := time.Now().Add(d), ""
	for isolate && elected == "" && time.Now().Before(end) {
		for _, o := range others {
			if isWritablePrimary(rs.hosts[o]) {
				elected = fmt.Sprintf("; member %d elected after %v", o, d-time.Until(end).Round(time.Millisecond))
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	if isolate && elected == "" {
		elected = "; no election meanwhile"
	}
	time.Sleep(time.Until(end))
	rs.net.Heal()
	return fmt.Sprintf("primary %d partitioned from members %v for %v (clients still reached every member%s)", p, others, d, elected)
}

// pausePrimary stops the primary with SIGSTOP for d and resumes it
// (SIGCONT): to the others and the clients it is cut off meanwhile.
func (rs *replSet) pausePrimary(t *testing.T, d time.Duration) {
	t.Helper()
	proc := rs.members[primaryOf(t, rs.hosts)].cmd.Process
	if err := proc.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	time.Sleep(d)
	if err := proc.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
}

// hasLabel reports whether err carries the error label.
func hasLabel(err error, label string) bool {
	var le mongo.LabeledError
	return errors.As(err, &le) && le.HasErrorLabel(label)
}

// TestTransactionProtocol: the session protocol through the Go driver on
// a replica set — commit, abort, own writes, snapshot isolation from
// other sessions, the retryable commit, the codes of bad input, the
// specification cases of testdata/txn_spec.txt (subtest spec), the
// lifetime limit and the abort of open transactions at a step-down.
func TestTransactionProtocol(t *testing.T) {
	if testing.Short() {
		t.Skip("starts three servers")
	}
	rs := startReplSet(t)
	c := rs.client(t)
	ctx := context.Background()
	coll := c.Database("app").Collection("acct")
	if _, err := coll.InsertMany(ctx, []any{bson.D{{Key: "_id", Value: 1}, {Key: "n", Value: 0}}, bson.D{{Key: "_id", Value: 2}, {Key: "n", Value: 0}}}); err != nil {
		t.Fatal(err)
	}
	count := func(ctx context.Context, id int) int {
		t.Helper()
		var d struct{ N int }
		if err := coll.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&d); err != nil {
			t.Fatalf("read %d: %v", id, err)
		}
		return d.N
	}
	sess, err := c.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(ctx)
	sc := mongo.NewSessionContext(ctx, sess)
	if err := sess.StartTransaction(options.Transaction().SetReadConcern(readconcern.Snapshot())); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.UpdateOne(sc, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 5}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.InsertOne(sc, bson.D{{Key: "_id", Value: 3}, {Key: "n", Value: 3}}); err != nil {
		t.Fatal(err)
	}
	if got := count(sc, 1); got != 5 {
		t.Errorf("own write: n=%d, want 5", got)
	}
	if got := count(ctx, 1); got != 0 {
		t.Errorf("outside the open transaction: n=%d, want 0", got)
	}
	if n, err := coll.CountDocuments(ctx, bson.D{{Key: "_id", Value: 3}}); err != nil || n != 0 {
		t.Errorf("the transaction's insert is visible outside: %d %v", n, err)
	}
	cur, err := coll.Find(sc, bson.D{}, options.Find().SetBatchSize(1))
	if err != nil {
		t.Fatal(err)
	}
	var all []bson.M
	if err := cur.All(sc, &all); err != nil || len(all) != 3 {
		t.Errorf("a cursor in the transaction (getMore included): %d documents, %v", len(all), err)
	}
	if err := sess.CommitTransaction(sc); err != nil {
		t.Fatal(err)
	}
	if got := count(ctx, 1); got != 5 {
		t.Errorf("after commit: n=%d, want 5", got)
	}
	// Abort leaves nothing.
	if err := sess.StartTransaction(); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.UpdateOne(sc, bson.D{{Key: "_id", Value: 2}}, bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: 9}}}}); err != nil {
		t.Fatal(err)
	}
	if err := sess.AbortTransaction(sc); err != nil {
		t.Fatal(err)
	}
	if got := count(ctx, 2); got != 0 {
		t.Errorf("after abort: n=%d, want 0", got)
	}
	// Raw commands: the codes of MongoDB 7.0.
	// The driver sends its session's lsid; the transaction fields are ours.
	rawSess, err := c.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer rawSess.EndSession(ctx)
	rawCtx := mongo.NewSessionContext(ctx, rawSess)
	raw := func(db string, cmd bson.D) error {
		return c.Database(db).RunCommand(rawCtx, cmd).Err()
	}
	txnCmd := func(n int64, extra ...bson.E) bson.D {
		return append(bson.D{{Key: "txnNumber", Value: n}, {Key: "autocommit", Value: false}}, extra...)
	}
	start := bson.E{Key: "startTransaction", Value: true}
	find := func(n int64, extra ...bson.E) bson.D {
		return append(bson.D{{Key: "find", Value: "acct"}}, txnCmd(n, extra...)...)
	}
	commit := func(n int64) bson.D { return append(bson.D{{Key: "commitTransaction", Value: 1}}, txnCmd(n)...) }
	abort := func(n int64) bson.D { return append(bson.D{{Key: "abortTransaction", Value: 1}}, txnCmd(n)...) }
	for _, tc := range []struct {
		name  string
		db    string
		cmd   bson.D
		code  int
		label string
	}{
		{"start 100", "app", find(100, start), 0, ""},
		{"commit without start (101)", "admin", commit(101), 251, "TransientTransactionError"},
		{"start 102", "app", find(102, start), 0, ""},
		{"stale txnNumber", "app", find(100), 225, ""},
		{"restart at the active number", "app", find(102, start), 117, ""},
		{"count is not allowed", "app", append(bson.D{{Key: "count", Value: "acct"}}, txnCmd(102)...), 263, ""},
		{"DDL but create and createIndexes is not allowed", "app", append(bson.D{{Key: "drop", Value: "other"}}, txnCmd(102)...), 263, ""},
		{"readConcern after the first statement", "app", find(102, bson.E{Key: "readConcern", Value: bson.D{{Key: "level", Value: "snapshot"}}}), 72, ""},
		{"writeConcern on a statement", "app", find(102, bson.E{Key: "writeConcern", Value: bson.D{{Key: "w", Value: 1}}}), 72, ""},
		{"commit 102", "admin", commit(102), 0, ""},
		{"commit again: the retryable commit", "admin", commit(102), 0, ""},
		{"abort after commit", "admin", abort(102), 256, ""},
		{"a statement after commit", "app", find(102), 256, ""},
		{"start 103", "app", find(103, start), 0, ""},
		{"abort 103", "admin", abort(103), 0, ""},
		{"commit after abort", "admin", commit(103), 251, "TransientTransactionError"},
		{"autocommit true", "app", append(bson.D{{Key: "find", Value: "acct"}}, bson.E{Key: "txnNumber", Value: int64(104)}, bson.E{Key: "autocommit", Value: true}), 72, ""},
		{"start 105", "app", find(105, start), 0, ""},
		{"a capped collection", "app", append(bson.D{{Key: "insert", Value: "capped"}, {Key: "documents", Value: bson.A{bson.D{}}}}, txnCmd(105)...), 263, ""},
		{"the transaction aborted with the failed statement", "admin", commit(105), 251, "TransientTransactionError"},
		{"start 106", "app", find(106, start), 0, ""},
		{"a time series collection (7.0 refuses it; it must not run outside the transaction)", "app", append(bson.D{{Key: "insert", Value: "tsc"}, {Key: "documents", Value: bson.A{bson.D{{Key: "t", Value: time.Now()}}}}}, txnCmd(106)...), 263, ""},
		{"start 107", "app", find(107, start), 0, ""},
		{"a change stream", "app", append(bson.D{{Key: "aggregate", Value: "acct"}, {Key: "pipeline", Value: bson.A{bson.D{{Key: "$changeStream", Value: bson.D{}}}}}, {Key: "cursor", Value: bson.D{}}}, txnCmd(107)...), 263, ""},
	} {
		if tc.name == "start 106" {
			if err := c.Database("app").CreateCollection(ctx, "tsc", options.CreateCollection().SetTimeSeriesOptions(options.TimeSeries().SetTimeField("t"))); err != nil {
				t.Fatal(err)
			}
		}
		if tc.name == "start 105" {
			if err := c.Database("app").CreateCollection(ctx, "capped", options.CreateCollection().SetCapped(true).SetSizeInBytes(4096)); err != nil {
				t.Fatal(err)
			}
		}
		err := raw(tc.db, tc.cmd)
		if got := cmdCodeAny(err); got != tc.code {
			t.Errorf("%s: %v, want code %d", tc.name, err, tc.code)
		}
		if tc.label != "" && !hasLabel(err, tc.label) {
			t.Errorf("%s: %v lacks the %s label", tc.name, err, tc.label)
		}
	}
	// Write conflicts: two sessions update one document; the second gets
	// WriteConflict with TransientTransactionError.
	s2, _ := c.StartSession()
	defer s2.EndSession(ctx)
	sc2 := mongo.NewSessionContext(ctx, s2)
	_ = sess.StartTransaction()
	_ = s2.StartTransaction()
	if _, err := coll.UpdateOne(sc, bson.D{{Key: "_id", Value: 2}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}}); err != nil {
		t.Fatal(err)
	}
	_, err = coll.UpdateOne(sc2, bson.D{{Key: "_id", Value: 2}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}})
	if cmdCodeAny(err) != 112 || !hasLabel(err, "TransientTransactionError") {
		t.Errorf("second writer: %v, want WriteConflict with TransientTransactionError", err)
	}
	_ = s2.AbortTransaction(sc2)
	if err := sess.CommitTransaction(sc); err != nil {
		t.Fatal(err)
	}
	// The driver's convenient API retries a conflicting transaction.
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s, _ := c.StartSession()
			defer s.EndSession(ctx)
			for range 10 {
				_, err := s.WithTransaction(ctx, func(sc context.Context) (any, error) {
					return coll.UpdateOne(sc, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "n", Value: 1}}}})
				})
				if err != nil {
					t.Errorf("worker %d: withTransaction: %v", w, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if got := count(ctx, 1); got != 45 {
		t.Errorf("after 40 withTransaction increments: n=%d, want 45", got)
	}
	// The drivers' specification cases, on the same set.
	t.Run("spec", func(t *testing.T) { runTransactionSpecCases(t, rs) })
	t.Run("snapshot reads", func(t *testing.T) { testSnapshotReads(t, c) })
	// transactionLifetimeLimitSeconds: an idle transaction past it is
	// aborted; its next statement is NoSuchTransaction.
	primary := directClient(t, rs.hosts[primaryOf(t, rs.hosts)])
	defer primary.Disconnect(ctx)
	if err := primary.Database("admin").RunCommand(ctx, bson.D{{Key: "setParameter", Value: 1}, {Key: "transactionLifetimeLimitSeconds", Value: 1}}).Err(); err != nil {
		t.Fatal(err)
	}
	if err := raw("app", find(200, start)); err != nil {
		t.Fatal(err)
	}
	// currentOp lists the open, idle transaction.
	var ops struct {
		Inprog []struct {
			Type        string
			Transaction struct {
				Parameters struct {
					TxnNumber int64 `bson:"txnNumber"`
				}
			}
		}
	}
	if err := primary.Database("admin").RunCommand(ctx, bson.D{{Key: "currentOp", Value: 1}}).Decode(&ops); err != nil {
		t.Fatal(err)
	}
	listed := false
	for _, op := range ops.Inprog {
		listed = listed || op.Type == "idleSession" && op.Transaction.Parameters.TxnNumber == 200
	}
	if !listed {
		t.Errorf("currentOp does not list the open transaction 200: %+v", ops.Inprog)
	}
	time.Sleep(2500 * time.Millisecond)
	if err := raw("app", find(200)); cmdCodeAny(err) != 251 || !hasLabel(err, "TransientTransactionError") {
		t.Errorf("a statement after the lifetime: %v, want NoSuchTransaction", err)
	}

	// A primary that steps down aborts its open transactions at once, as
	// mongod does: currentOp there lists none, and the transaction's next
	// statement (on the new primary) is NoSuchTransaction, transient.
	if err := primary.Database("admin").RunCommand(ctx, bson.D{{Key: "setParameter", Value: 1}, {Key: "transactionLifetimeLimitSeconds", Value: 60}}).Err(); err != nil {
		t.Fatal(err)
	}
	if err := raw("app", append(bson.D{{Key: "insert", Value: "acct"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 300}}}}}, txnCmd(300, start)...)); err != nil {
		t.Fatal(err)
	}
	idle300 := func() bool {
		t.Helper()
		if err := primary.Database("admin").RunCommand(ctx, bson.D{{Key: "currentOp", Value: 1}}).Decode(&ops); err != nil {
			t.Fatal(err)
		}
		for _, op := range ops.Inprog {
			if op.Type == "idleSession" && op.Transaction.Parameters.TxnNumber == 300 {
				return true
			}
		}
		return false
	}
	if !idle300() {
		t.Fatal("currentOp does not list the open transaction 300")
	}
	_ = primary.Database("admin").RunCommand(ctx, bson.D{{Key: "replSetStepDown", Value: 10}}).Err()
	for deadline := time.Now().Add(5 * time.Second); idle300(); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the stepped-down primary still holds transaction 300")
		}
	}
	if err := retry(ctx, func() error {
		err := raw("app", find(300))
		if cmdCodeAny(err) == 251 {
			return nil
		}
		return fmt.Errorf("a statement of the transaction after the step-down: %w", err)
	}); err != nil {
		t.Error(err)
	} else if err := raw("app", find(300)); !hasLabel(err, "TransientTransactionError") {
		t.Errorf("after the step-down: %v lacks TransientTransactionError", err)
	}
	if n, err := coll.CountDocuments(ctx, bson.D{{Key: "_id", Value: 300}}); err != nil || n != 0 {
		t.Errorf("the aborted transaction's insert: %d, %v", n, err)
	}
}

// cmdCodeAny is the code of any server error, 0 for none.
func cmdCodeAny(err error) int {
	if err == nil {
		return 0
	}
	var ce mongo.CommandError
	if errors.As(err, &ce) {
		return int(ce.Code)
	}
	var we mongo.WriteException
	if errors.As(err, &we) && len(we.WriteErrors) > 0 {
		return we.WriteErrors[0].Code
	}
	return -1
}

// TestTransactionAnomalies runs the list-append and bank workloads through
// the Go driver on a three-member replica set, with one fault per run in
// turn: the primary killed with SIGKILL (and restarted), the primary
// partitioned for 2.5-4 s from the other members (or, every other time,
// from one of them only) while clients still reach it (netProxy), the
// primary paused with SIGSTOP for 1.5-3 s (cut off from members and
// clients alike); and checks each run's history
// (package txncheck): no G0, G1a, G1b, G1c, G-single, lost update or
// impossible read, no committed append lost, and every snapshot read of
// the bank sums to the total. CAIRN_TXN_RUNS runs (5 by default; `make
// txn-anomalies` runs 100), each seeded from CAIRN_TXN_SEED (printed).
func TestTransactionAnomalies(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts three servers")
	}
	runs := 5
	if v := os.Getenv("CAIRN_TXN_RUNS"); v != "" {
		runs, _ = strconv.Atoi(v)
	}
	seed := uint64(time.Now().UnixNano())
	if v := os.Getenv("CAIRN_TXN_SEED"); v != "" {
		seed, _ = strconv.ParseUint(v, 10, 64)
	}
	t.Logf("seed %d (CAIRN_TXN_SEED=%d replays the choices), %d runs", seed, seed, runs)
	rs := startPartitionableSet(t)
	c := rs.client(t)
	for run := range runs {
		rnd := rand.New(rand.NewPCG(seed, uint64(run)))
		stats := runWorkloads(t, rs, c, run, rnd)
		t.Logf("run %d: %s", run, stats)
		if t.Failed() {
			t.Fatalf("run %d failed (CAIRN_TXN_SEED=%d)", run, seed)
		}
	}
}

// laTxn is one list-append transaction to run: its micro-operations
// without their reads.
func runWorkloads(t *testing.T, rs *replSet, c *mongo.Client, run int, rnd *rand.Rand) string {
	t.Helper()
	ctx := context.Background()
	db := c.Database("elle")
	la := db.Collection(fmt.Sprintf("la%d", run))
	bank := db.Collection(fmt.Sprintf("bank%d", run))
	const accounts, initial = 5, 100
	var docs []any
	for i := range accounts {
		docs = append(docs, bson.D{{Key: "_id", Value: i}, {Key: "b", Value: initial}})
	}
	if err := retry(ctx, func() error {
		_ = bank.Drop(ctx)
		_ = la.Drop(ctx)
		if err := db.CreateCollection(ctx, la.Name()); err != nil {
			return err
		}
		_, err := bank.InsertMany(ctx, docs)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	const keys, workers, perWorker = 5, 4, 25
	plans := make([][][]txncheck.Mop, workers)
	next := 0
	for w := range plans {
		for range perWorker {
			var mops []txncheck.Mop
			for range 1 + rnd.IntN(4) {
				k := strconv.Itoa(rnd.IntN(keys))
				if rnd.IntN(2) == 0 {
					next++
					mops = append(mops, txncheck.Mop{Append: true, Key: k, Value: next})
				} else {
					mops = append(mops, txncheck.Mop{Key: k})
				}
			}
			plans[w] = append(plans[w], mops)
		}
	}
	transfers := make([][3]int, workers*perWorker/2)
	for i := range transfers {
		transfers[i] = [3]int{rnd.IntN(accounts), rnd.IntN(accounts), 1 + rnd.IntN(20)}
	}
	killAfter := time.Duration(100+rnd.IntN(400)) * time.Millisecond
	// The run's fault, in turn: a kill -9 of the primary (restarted after
	// the writers); a partition of it from the other members, clients
	// still reaching it (it answers them until it finds it lost its quorum
	// and steps down, while the others elect a new primary; its commits in
	// flight never reach a majority); a pause of it (SIGSTOP, cut off from
	// the others and the clients: when it resumes, its commits in flight
	// have lost their leadership).
	faultDur := time.Duration(1500+rnd.IntN(1500)) * time.Millisecond

	var mu sync.Mutex
	var history []txncheck.Txn
	var bankReads [][]int
	var wg sync.WaitGroup
	id := 0
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sess, err := c.StartSession()
			if err != nil {
				t.Error(err)
				return
			}
			defer sess.EndSession(ctx)
			for i, mops := range plans[w] {
				done, outcome := listAppendTxn(ctx, sess, la, mops)
				mu.Lock()
				id++
				history = append(history, txncheck.Txn{ID: id, Outcome: outcome, Mops: done})
				mu.Unlock()
				if i%2 == 0 {
					tr := transfers[(w*perWorker+i)/2]
					bankTxn(ctx, sess, bank, tr)
				} else if r, ok := bankRead(ctx, sess, bank, accounts); ok {
					mu.Lock()
					bankReads = append(bankReads, r)
					mu.Unlock()
				}
			}
		}()
	}
	time.Sleep(killAfter)
	var fault string
	switch run % 3 {
	case 0:
		restart := rs.killPrimary(t)
		wg.Wait()
		restart()
		fault = fmt.Sprintf("primary killed after %v", killAfter)
	case 1:
		// A second longer than a pause: the others' election timeout
		// is 1-2 s (randomised) after the last heartbeat they heard.
		fault = rs.partitionPrimary(t, faultDur+time.Second, run/3%2 == 0) + fmt.Sprintf(" after %v", killAfter)
		wg.Wait()
		waitHealthy(t, rs.hosts, 3)
	default:
		rs.pausePrimary(t, faultDur)
		fault = fmt.Sprintf("primary paused (SIGSTOP) for %v after %v", faultDur, killAfter)
		wg.Wait()
		waitHealthy(t, rs.hosts, 3)
	}
	// The final reads: every key and every account, after the writers.
	sess, err := c.StartSession()
	if err != nil {
		t.Fatal(err)
	}
	defer sess.EndSession(ctx)
	var final []txncheck.Mop
	for k := range keys {
		final = append(final, txncheck.Mop{Key: strconv.Itoa(k)})
	}
	var finalDone []txncheck.Mop
	if err := retry(ctx, func() error {
		var o txncheck.Outcome
		var err error
		finalDone, o, err = listAppendTxnErr(ctx, sess, la, final)
		if o != txncheck.OK {
			return fmt.Errorf("final read failed: %w", err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	history = append(history, txncheck.Txn{ID: id + 1, Outcome: txncheck.OK, Mops: finalDone, Final: true})
	if err := retry(ctx, func() error {
		r, ok := bankRead(ctx, sess, bank, accounts)
		if !ok {
			return errors.New("final bank read failed")
		}
		bankReads = append(bankReads, r)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, a := range txncheck.Check(history) {
		t.Errorf("run %d: %s", run, a)
	}
	corruptControl(t, run, history)
	for _, a := range txncheck.Bank(bankReads, accounts*initial) {
		t.Errorf("run %d: %s", run, a)
	}
	n := map[txncheck.Outcome]int{}
	for _, h := range history {
		n[h.Outcome]++
	}
	return fmt.Sprintf("list-append: %d ok, %d failed, %d unknown; bank: %d snapshot reads; %s", n[txncheck.OK], n[txncheck.Fail], n[txncheck.Info], len(bankReads), fault)
}

// corruptControl is the run's negative control: the history with the
// writer of a value the final read saw marked failed must be reported
// (G1a), or the checker would pass anything.
func corruptControl(t *testing.T, run int, history []txncheck.Txn) {
	t.Helper()
	final := history[len(history)-1]
	for _, m := range final.Mops {
		if len(m.Read) == 0 {
			continue
		}
		v := m.Read[len(m.Read)-1]
		bad := slices.Clone(history)
		for i, h := range bad {
			for _, w := range h.Mops {
				if w.Append && w.Key == m.Key && w.Value == v {
					bad[i].Outcome = txncheck.Fail
				}
			}
		}
		for _, a := range txncheck.Check(bad) {
			if a.Kind == "G1a" {
				return
			}
		}
		t.Errorf("run %d: the checker passed a history whose read of %d in %s came from a failed transaction", run, v, m.Key)
		return
	}
	t.Errorf("run %d: the final read saw nothing: no history to check", run)
}

// retry runs fn until it succeeds or a minute passes (a failover).
func retry(ctx context.Context, fn func() error) error {
	deadline := time.Now().Add(60 * time.Second)
	for {
		err := fn()
		if err == nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// txnOptions: snapshot reads, majority commits.
var txnOptions = options.Transaction().SetReadConcern(readconcern.Snapshot()).SetWriteConcern(writeconcern.Majority())

// listAppendTxn runs one list-append transaction: appends with $push
// (upserting the key's document), reads of the key's list. It returns the
// micro-operations with what they read and the outcome: OK, Fail when the
// transaction certainly did not commit (a statement failed, or the commit
// answered WriteConflict), Info when the commit's outcome is unknown.
func listAppendTxn(ctx context.Context, sess *mongo.Session, coll *mongo.Collection, mops []txncheck.Mop) ([]txncheck.Mop, txncheck.Outcome) {
	out, o, _ := listAppendTxnErr(ctx, sess, coll, mops)
	return out, o
}

func listAppendTxnErr(ctx context.Context, sess *mongo.Session, coll *mongo.Collection, mops []txncheck.Mop) ([]txncheck.Mop, txncheck.Outcome, error) {
	sc := mongo.NewSessionContext(ctx, sess)
	opCtx, cancel := context.WithTimeout(sc, 10*time.Second)
	defer cancel()
	if err := sess.StartTransaction(txnOptions); err != nil {
		return mops, txncheck.Fail, err
	}
	out := make([]txncheck.Mop, len(mops))
	for i, m := range mops {
		out[i] = m
		var err error
		if m.Append {
			_, err = coll.UpdateOne(opCtx, bson.D{{Key: "_id", Value: m.Key}}, bson.D{{Key: "$push", Value: bson.D{{Key: "v", Value: m.Value}}}}, options.UpdateOne().SetUpsert(true))
		} else {
			var d struct{ V []int }
			err = coll.FindOne(opCtx, bson.D{{Key: "_id", Value: m.Key}}).Decode(&d)
			if errors.Is(err, mongo.ErrNoDocuments) {
				err = nil
			}
			out[i].Read = d.V
		}
		if err != nil {
			_ = sess.AbortTransaction(ctx)
			return out, txncheck.Fail, err
		}
	}
	err := sess.CommitTransaction(opCtx)
	switch {
	case err == nil:
		return out, txncheck.OK, nil
	case cmdCodeAny(err) == 112:
		return out, txncheck.Fail, err
	}
	return out, txncheck.Info, err
}

// bankTxn moves tr[2] from account tr[0] to tr[1] in one transaction.
func bankTxn(ctx context.Context, sess *mongo.Session, coll *mongo.Collection, tr [3]int) {
	if tr[0] == tr[1] {
		return
	}
	sc := mongo.NewSessionContext(ctx, sess)
	opCtx, cancel := context.WithTimeout(sc, 10*time.Second)
	defer cancel()
	if sess.StartTransaction(txnOptions) != nil {
		return
	}
	for k, delta := range []int{-tr[2], tr[2]} {
		if _, err := coll.UpdateOne(opCtx, bson.D{{Key: "_id", Value: tr[k]}}, bson.D{{Key: "$inc", Value: bson.D{{Key: "b", Value: delta}}}}); err != nil {
			_ = sess.AbortTransaction(ctx)
			return
		}
	}
	_ = sess.CommitTransaction(opCtx)
}

// bankRead reads every balance in one snapshot transaction.
func bankRead(ctx context.Context, sess *mongo.Session, coll *mongo.Collection, accounts int) ([]int, bool) {
	sc := mongo.NewSessionContext(ctx, sess)
	opCtx, cancel := context.WithTimeout(sc, 10*time.Second)
	defer cancel()
	if sess.StartTransaction(txnOptions) != nil {
		return nil, false
	}
	cur, err := coll.Find(opCtx, bson.D{}, options.Find().SetBatchSize(2))
	if err != nil {
		_ = sess.AbortTransaction(ctx)
		return nil, false
	}
	var docs []struct{ B int }
	if err := cur.All(opCtx, &docs); err != nil || len(docs) != accounts {
		_ = sess.AbortTransaction(ctx)
		return nil, false
	}
	if err := sess.CommitTransaction(opCtx); err != nil {
		return nil, false
	}
	out := make([]int, len(docs))
	for i, d := range docs {
		out[i] = d.B
	}
	return out, true
}
