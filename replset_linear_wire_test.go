package cairn_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readconcern"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"
	"go.mongodb.org/mongo-driver/v2/mongo/writeconcern"
)

// regOp is one operation of the register workload (Jepsen's): a read, a
// write or a compare-and-set of one document's v.
type regOp struct {
	kind     byte // 'r', 'w', 'c'
	key      string
	val, old int64 // write/cas: the new value; cas: the expected one
}

// regOut is an operation's outcome: a read's value (0: no document), a
// CAS's success; unknown when the client got an error after sending a
// write (it may or may not have taken effect).
type regOut struct {
	val     int64
	ok      bool
	unknown bool
}

// registerModel is a map of registers, checked one key at a time. An
// operation whose outcome is unknown never returns (its return time is
// the end of time), so the checker may place it anywhere after its call,
// including after everything else, where it changes nothing observed.
var registerModel = porcupine.Model{
	Partition: func(h []porcupine.Operation) [][]porcupine.Operation {
		by := map[string][]porcupine.Operation{}
		for _, op := range h {
			k := op.Input.(regOp).key
			by[k] = append(by[k], op)
		}
		var out [][]porcupine.Operation
		for _, ops := range by {
			out = append(out, ops)
		}
		return out
	},
	Init: func() any { return int64(0) },
	Step: func(state, input, output any) (bool, any) {
		s, in, out := state.(int64), input.(regOp), output.(regOut)
		switch in.kind {
		case 'r':
			return out.val == s, s
		case 'w':
			return true, in.val
		}
		// A CAS's filter {_id, v: old} matches no document when there is
		// none (state 0), whatever old is.
		matches := s != 0 && s == in.old
		switch {
		case out.unknown:
			if matches {
				return true, in.val
			}
			return true, s
		case out.ok:
			return matches, in.val
		default:
			return !matches, s
		}
	},
	Equal: func(a, b any) bool { return a == b },
	DescribeOperation: func(input, output any) string {
		in, out := input.(regOp), output.(regOut)
		res := fmt.Sprint(out.val)
		switch {
		case out.unknown:
			res = "?"
		case in.kind == 'c':
			res = fmt.Sprint(out.ok)
		}
		switch in.kind {
		case 'r':
			return fmt.Sprintf("read(%s) → %s", in.key, res)
		case 'w':
			return fmt.Sprintf("write(%s, %d)", in.key, in.val)
		}
		return fmt.Sprintf("cas(%s, %d→%d) → %s", in.key, in.old, in.val, res)
	},
}

// TestReplicaSetLinearizableRegister records single-document read, write
// and compare-and-set histories through the Go driver (retryable writes
// and reads on; reads with readConcern linearizable, writes w:
// "majority") against three real `cairn serve --replSet` processes while
// a nemesis kill -9s the primary (and restarts it) and SIGSTOPs members
// (and continues them), and checks each history with porcupine. Every
// acknowledged insert of a second collection must be on every member at
// the end, and the members' documents identical. Seeded (printed;
// CAIRN_LINEAR_SEED replays); CAIRN_LINEAR_RUNS runs (default 1) of
// CAIRN_LINEAR_SECONDS each (default 6): `make replset-linear` runs many.
func TestReplicaSetLinearizableRegister(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts three servers")
	}
	seed := envSeed("CAIRN_LINEAR_SEED")
	runs, secs := envInt("CAIRN_LINEAR_RUNS", 1), envInt("CAIRN_LINEAR_SECONDS", 6)
	bin := buildCairnBinary(t, t.TempDir())
	for run := range runs {
		s := seed + uint64(run)
		t.Run(fmt.Sprint(s), func(t *testing.T) {
			t.Logf("seed %d (CAIRN_LINEAR_SEED=%d replays)", s, s)
			linearRegisterRun(t, bin, s, time.Duration(secs)*time.Second)
		})
	}
}

func linearRegisterRun(t *testing.T, bin string, seed uint64, dur time.Duration) {
	rnd := rand.New(rand.NewPCG(seed, seed^1))
	tmp := t.TempDir()
	ports := freePorts(t, 3)
	hosts := make([]string, 3)
	members := make([]*memberProc, 3)
	for i, p := range ports {
		hosts[i] = net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
		members[i] = startMember(t, bin, filepath.Join(tmp, fmt.Sprintf("m%d", i)), p)
	}
	ctx := context.Background()
	first := directClient(t, hosts[0])
	defer first.Disconnect(ctx)
	cfgMembers := bson.A{}
	for i, h := range hosts {
		cfgMembers = append(cfgMembers, bson.D{{Key: "_id", Value: i}, {Key: "host", Value: h}})
	}
	if err := first.Database("admin").RunCommand(ctx, bson.D{{Key: "replSetInitiate", Value: bson.D{{Key: "_id", Value: "rs0"}, {Key: "members", Value: cfgMembers}}}}).Err(); err != nil {
		t.Fatalf("replSetInitiate: %v", err)
	}
	waitHealthy(t, hosts, 3)
	uri := "mongodb://" + hosts[0] + "," + hosts[1] + "," + hosts[2] + "/?replicaSet=rs0"
	client, err := mongo.Connect(options.Client().ApplyURI(uri).SetRetryWrites(true).SetRetryReads(true).
		SetServerSelectionTimeout(3 * time.Second).SetWriteConcern(writeconcern.Majority()).
		SetReadConcern(readconcern.Linearizable()).SetReadPreference(readpref.Primary()))
	if err != nil {
		t.Fatal(err)
	}
	defer client.Disconnect(ctx)
	regs := client.Database("app").Collection("registers")
	acks := client.Database("app").Collection("acks")

	var (
		mu      sync.Mutex // members, history, acked
		hist    []porcupine.Operation
		acked   []int64
		start   = time.Now()
		stopc   = make(chan struct{})
		workers sync.WaitGroup
	)
	now := func() int64 { return int64(time.Since(start)) }
	keys := []string{"k0", "k1", "k2"}
	for w := range 4 {
		wr := rand.New(rand.NewPCG(seed, uint64(w)+100))
		workers.Add(1)
		go func() {
			defer workers.Done()
			var seq int64
			for {
				select {
				case <-stopc:
					return
				default:
				}
				seq++
				val := int64(w+1)*1_000_000 + seq
				key := keys[wr.IntN(len(keys))]
				octx, cancel := context.WithTimeout(ctx, 3*time.Second)
				var in regOp
				var out regOut
				call := now()
				var err error
				switch p := wr.IntN(10); {
				case p < 4:
					in = regOp{kind: 'r', key: key}
					var doc struct {
						V int64 `bson:"v"`
					}
					err = regs.FindOne(octx, bson.D{{Key: "_id", Value: key}}).Decode(&doc)
					if errors.Is(err, mongo.ErrNoDocuments) {
						err = nil
					}
					out.val = doc.V
				case p < 7:
					in = regOp{kind: 'w', key: key, val: val}
					_, err = regs.UpdateOne(octx, bson.D{{Key: "_id", Value: key}}, bson.D{{Key: "$set", Value: bson.D{{Key: "v", Value: val}}}}, options.UpdateOne().SetUpsert(true))
				case p < 9:
					in = regOp{kind: 'c', key: key, val: val, old: int64(wr.IntN(3)+1)*1_000_000 + wr.Int64N(seq+1)}
					if wr.IntN(2) == 0 {
						// Often the value last read, so some succeed.
						in.old = lastRead(hist, &mu, key)
					}
					var res *mongo.UpdateResult
					res, err = regs.UpdateOne(octx, bson.D{{Key: "_id", Value: key}, {Key: "v", Value: in.old}}, bson.D{{Key: "$set", Value: bson.D{{Key: "v", Value: val}}}})
					if err == nil {
						out.ok = res.MatchedCount == 1
					}
				default:
					_, err = acks.InsertOne(octx, bson.D{{Key: "_id", Value: val}})
					cancel()
					if err == nil {
						mu.Lock()
						acked = append(acked, val)
						mu.Unlock()
					}
					continue
				}
				cancel()
				ret := now()
				if err != nil {
					if in.kind == 'r' {
						continue // a failed read changed nothing
					}
					out.unknown, ret = true, math.MaxInt64
				}
				mu.Lock()
				hist = append(hist, porcupine.Operation{ClientId: w, Input: in, Call: call, Output: out, Return: ret})
				mu.Unlock()
			}
		}()
	}

	// The nemesis: kill -9 the primary and restart it, or pause a member.
	var faults []string
	deadline := time.Now().Add(dur)
	for time.Now().Before(deadline) {
		time.Sleep(time.Duration(300+rnd.IntN(900)) * time.Millisecond)
		switch rnd.IntN(2) {
		case 0:
			p := findPrimary(hosts)
			if p < 0 {
				continue
			}
			members[p].kill()
			faults = append(faults, fmt.Sprintf("%v kill -9 %d", time.Since(start).Round(time.Millisecond), p))
			time.Sleep(time.Duration(200+rnd.IntN(1500)) * time.Millisecond)
			members[p] = startMember(t, bin, members[p].dir, members[p].port)
		case 1:
			i := rnd.IntN(3)
			proc := members[i].cmd.Process
			_ = proc.Signal(syscall.SIGSTOP)
			faults = append(faults, fmt.Sprintf("%v SIGSTOP %d", time.Since(start).Round(time.Millisecond), i))
			time.Sleep(time.Duration(300+rnd.IntN(2500)) * time.Millisecond)
			_ = proc.Signal(syscall.SIGCONT)
		}
	}
	close(stopc)
	workers.Wait()
	t.Logf("faults: %v", faults)
	waitHealthy(t, hosts, 3)

	mu.Lock()
	defer mu.Unlock()
	var reads, writes, cas, unknown int
	for _, op := range hist {
		switch op.Input.(regOp).kind {
		case 'r':
			reads++
		case 'w':
			writes++
		default:
			cas++
		}
		if op.Output.(regOut).unknown {
			unknown++
		}
	}
	t.Logf("history: %d reads, %d writes, %d cas (%d outcomes unknown), %d acknowledged inserts", reads, writes, cas, unknown, len(acked))
	if reads == 0 || writes == 0 || len(acked) == 0 {
		t.Fatalf("the workload did not run: %d reads, %d writes, %d inserts", reads, writes, len(acked))
	}
	res, info := porcupine.CheckOperationsVerbose(registerModel, hist, time.Minute)
	switch res {
	case porcupine.Illegal:
		path := filepath.Join(os.TempDir(), fmt.Sprintf("cairn-linear-%d.html", seed))
		if f, err := os.Create(path); err == nil {
			_ = porcupine.Visualize(registerModel, info, f)
			f.Close()
		}
		dump := filepath.Join(os.TempDir(), fmt.Sprintf("cairn-linear-%d.txt", seed))
		if f, err := os.Create(dump); err == nil {
			sorted := slices.Clone(hist)
			slices.SortFunc(sorted, func(a, b porcupine.Operation) int { return int(a.Call - b.Call) })
			for _, op := range sorted {
				fmt.Fprintf(f, "%d\t%d\t%d\t%s\n", op.ClientId, op.Call/1000, op.Return/1000, registerModel.DescribeOperation(op.Input, op.Output))
			}
			f.Close()
		}
		t.Fatalf("the history is not linearizable (visualization: %s, history: %s)", path, dump)
	case porcupine.Unknown:
		t.Logf("porcupine timed out: linearizability not decided")
	}

	// Every member: every acknowledged insert, and the same documents. All
	// members are read again each round until they agree: a member that
	// was paused last may hold every acknowledged insert while it still
	// applies the writes after them, so no one member's first reading is
	// the reference.
	slices.Sort(acked)
	for wait := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		var states []string
		var problems []string
		for _, h := range hosts {
			got, err := memberDocs(h)
			missing := 0
			for _, id := range acked {
				if _, ok := got["acks"][fmt.Sprint(id)]; !ok {
					missing++
				}
			}
			states = append(states, fmt.Sprint(got))
			if err != nil || missing > 0 {
				problems = append(problems, fmt.Sprintf("member %s: %d acknowledged inserts missing (%v)", h, missing, err))
			}
		}
		for i := 1; i < len(states); i++ {
			if states[i] != states[0] {
				problems = append(problems, fmt.Sprintf("member %s differs from %s", hosts[i], hosts[0]))
			}
		}
		if len(problems) == 0 {
			break
		}
		if time.Now().After(wait) {
			t.Fatalf("after 30 s: %s", strings.Join(problems, "; "))
		}
	}
}

// envSeed is the seed the environment variable name gives, or a new one.
func envSeed(name string) uint64 {
	if s, err := strconv.ParseUint(os.Getenv(name), 10, 64); err == nil {
		return s
	}
	return uint64(time.Now().UnixNano())
}

// envInt is the environment variable name as an integer, or def.
func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil {
		return n
	}
	return def
}

// lastRead is the value the history last read for key (0 if none).
func lastRead(hist []porcupine.Operation, mu *sync.Mutex, key string) int64 {
	mu.Lock()
	defer mu.Unlock()
	for i := len(hist) - 1; i >= 0; i-- {
		if in := hist[i].Input.(regOp); in.key == key && in.kind == 'r' {
			return hist[i].Output.(regOut).val
		}
	}
	return 0
}

// findPrimary returns the index of the member whose hello says it is a
// writable primary, or -1.
func findPrimary(hosts []string) int {
	for i, h := range hosts {
		c, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + h + "/?directConnection=true").SetServerSelectionTimeout(500 * time.Millisecond))
		if err != nil {
			continue
		}
		var hello struct {
			Primary bool `bson:"isWritablePrimary"`
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		err = c.Database("admin").RunCommand(ctx, bson.D{{Key: "hello", Value: 1}}).Decode(&hello)
		cancel()
		c.Disconnect(context.Background())
		if err == nil && hello.Primary {
			return i
		}
	}
	return -1
}

// memberDocs reads app.registers and app.acks of one member directly:
// collection → _id → the document's canonical JSON.
func memberDocs(host string) (map[string]map[string]string, error) {
	ctx := context.Background()
	c, err := mongo.Connect(options.Client().ApplyURI("mongodb://" + host + "/?directConnection=true").
		SetReadPreference(readpref.SecondaryPreferred()).SetServerSelectionTimeout(5 * time.Second))
	if err != nil {
		return nil, err
	}
	defer c.Disconnect(ctx)
	out := map[string]map[string]string{}
	for _, name := range []string{"registers", "acks"} {
		cur, err := c.Database("app").Collection(name).Find(ctx, bson.D{})
		if err != nil {
			return nil, err
		}
		out[name] = map[string]string{}
		for cur.Next(ctx) {
			id := cur.Current.Lookup("_id")
			key := id.String()
			if n, ok := id.AsInt64OK(); ok {
				key = strconv.FormatInt(n, 10)
			}
			out[name][key] = cur.Current.String()
		}
		if err := cur.Err(); err != nil {
			return nil, err
		}
		cur.Close(ctx)
	}
	return out, nil
}

// TestRegisterModel: the checker refuses what a register cannot do — a
// stale read, a CAS on a missing document, a failed CAS on the current
// value — and accepts concurrent orders.
func TestRegisterModel(t *testing.T) {
	w := func(c int, call, ret int64, v int64) porcupine.Operation {
		return porcupine.Operation{ClientId: c, Call: call, Return: ret, Input: regOp{kind: 'w', key: "k", val: v}, Output: regOut{}}
	}
	r := func(c int, call, ret int64, v int64) porcupine.Operation {
		return porcupine.Operation{ClientId: c, Call: call, Return: ret, Input: regOp{kind: 'r', key: "k"}, Output: regOut{val: v}}
	}
	cas := func(c int, call, ret int64, old, v int64, ok bool) porcupine.Operation {
		return porcupine.Operation{ClientId: c, Call: call, Return: ret, Input: regOp{kind: 'c', key: "k", old: old, val: v}, Output: regOut{ok: ok}}
	}
	unknown := func(op porcupine.Operation) porcupine.Operation {
		op.Output, op.Return = regOut{unknown: true}, math.MaxInt64
		return op
	}
	for _, tc := range []struct {
		name  string
		hist  []porcupine.Operation
		legal bool
	}{
		{"write then read", []porcupine.Operation{w(0, 0, 10, 1), r(1, 20, 30, 1)}, true},
		{"stale read", []porcupine.Operation{w(0, 0, 10, 1), w(0, 20, 30, 2), r(1, 40, 50, 1)}, false},
		{"concurrent writes, either order", []porcupine.Operation{w(0, 0, 30, 1), w(1, 0, 30, 2), r(2, 40, 50, 1)}, true},
		{"cas on a missing document", []porcupine.Operation{cas(0, 0, 10, 0, 5, true)}, false},
		{"failed cas on a missing document", []porcupine.Operation{cas(0, 0, 10, 0, 5, false)}, true},
		{"failed cas on the current value", []porcupine.Operation{w(0, 0, 10, 1), cas(1, 20, 30, 1, 2, false)}, false},
		{"cas then read", []porcupine.Operation{w(0, 0, 10, 1), cas(1, 20, 30, 1, 2, true), r(2, 40, 50, 2)}, true},
		{"unknown write may have happened", []porcupine.Operation{unknown(w(0, 0, 10, 1)), r(1, 20, 30, 1)}, true},
		{"unknown write may not have happened", []porcupine.Operation{unknown(w(0, 0, 10, 1)), r(1, 20, 30, 0)}, true},
	} {
		if got := porcupine.CheckOperations(registerModel, tc.hist); got != tc.legal {
			t.Errorf("%s: linearizable %v, want %v", tc.name, got, tc.legal)
		}
	}
}
