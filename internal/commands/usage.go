package commands

import (
	"math/bits"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// This file owns the server's usage counters, kept for every command by
// Run (through Env.observe): latencies by class with histograms
// (serverStatus.opLatencies and $collStats latencyStats), the documents
// returned and written and what plans examined (serverStatus.metrics), and
// time and counts per collection (top).
//
// Invariant "Counting does not allocate": a command is counted with atomic
// adds and one read-locked map lookup keyed by bytes; only a collection's
// first command allocates its counters.
//
// Invariant "Sums are summed when read": a command adds to its own
// counters only (its command's latency, its collection's class latency and
// its kind's time), never to a total that other counters already hold:
// the server's latency per class is the sum of its commands', a
// collection's total, readLock and writeLock are sums of its class
// latencies. Every add is an atomic on a line every connection writes, so
// the few readers (serverStatus, top) add up instead. TestUsageSums.

// opClass is how MongoDB's latency statistics divide commands.
type opClass uint8

const (
	classRead opClass = iota
	classWrite
	classCommand
	numClasses
)

var classNames = [numClasses]string{"reads", "writes", "commands"}

// classOf sorts a command into its latency class, as MongoDB's Top does.
func classOf(name string) opClass {
	switch name {
	case "find", "getMore", "count", "distinct", "aggregate":
		return classRead
	case "insert", "update", "delete", "findAndModify", "findandmodify":
		return classWrite
	}
	return classCommand
}

// histBuckets are the latency histogram's buckets, MongoDB's: powers of
// two from 1 to 1024 microseconds, then two per power (2048, 3072, 4096,
// 6144, …); each is named by its lower bound.
const histBuckets = 64

// bucketOf is the histogram bucket of a latency of us microseconds.
func bucketOf(us int64) int {
	if us < 2 {
		return 0
	}
	k := bits.Len64(uint64(us)) - 1
	if k <= 10 {
		return k
	}
	b := 11 + 2*(k-11)
	if us >= 3<<(k-1) {
		b++
	}
	return min(b, histBuckets-1)
}

// bucketMicros is bucket b's lower bound in microseconds.
func bucketMicros(b int) int64 {
	if b <= 10 {
		return 1 << b
	}
	j := b - 11
	k := 11 + j/2
	if j%2 == 0 {
		return 1 << k
	}
	return 3 << (k - 1)
}

// latency is one class's latency counters.
type latency struct {
	micros, ops atomic.Int64
	hist        [histBuckets]atomic.Int64
}

func (l *latency) add(us int64) {
	l.micros.Add(us)
	l.ops.Add(1)
	l.hist[bucketOf(us)].Add(1)
}

// doc is the class's {latency, ops[, histogram]} (MongoDB lists only the
// buckets with a count, each as {micros: lower bound, count}).
func (l *latency) doc(histogram, encryption bool) bsoncore.Document {
	r := NewReply(nil)
	if histogram {
		h := bson.A{}
		for i := range l.hist {
			if n := l.hist[i].Load(); n > 0 {
				h = append(h, bson.D{{Key: "micros", Value: bucketMicros(i)}, {Key: "count", Value: n}})
			}
		}
		r.Any("histogram", h)
	}
	r.Int64("latency", l.micros.Load())
	r.Int64("ops", l.ops.Load())
	if encryption {
		r.Int64("queryableEncryptionLatencyMicros", 0)
	}
	return r.End()
}

// latencies is the reads/writes/commands/transactions document.
func latencies(ls *[numClasses]latency, histogram, encryption bool) bsoncore.Document {
	r := NewReply(nil)
	for c := range numClasses {
		r.Doc(classNames[c], ls[c].doc(histogram, encryption))
	}
	var none latency // Cairn has no multi-document transactions yet
	r.Doc("transactions", none.doc(histogram, false))
	return r.End()
}

// timeCount is one of top's {time, count} pairs.
type timeCount struct{ time, count atomic.Int64 }

func (t *timeCount) add(us int64) {
	t.time.Add(us)
	t.count.Add(1)
}

func (t *timeCount) doc() bsoncore.Document {
	return timeCountDoc(t.time.Load(), t.count.Load())
}

func timeCountDoc(time, count int64) bsoncore.Document {
	// int32 when they fit, as mongod's appendNumber writes them
	return NewReply(nil).Count("time", time).Count("count", count).End()
}

// collUsage are one collection's counters.
type collUsage struct {
	queries, getmore, insert, update, remove, commands timeCount
	lat                                                [numClasses]latency
	collScans                                          atomic.Int64
}

// topFields are top's per-collection fields, in MongoDB's order. total,
// readLock and writeLock are sums of the class latencies ("Sums are summed
// when read"): a write takes the write lock, every other command the read
// lock.
func (c *collUsage) topDoc() bsoncore.Document {
	r := NewReply(nil)
	var time, count [numClasses]int64
	for i := range c.lat {
		count[i], time[i] = c.lat[i].ops.Load(), c.lat[i].micros.Load()
	}
	r.Doc("total", timeCountDoc(time[classRead]+time[classWrite]+time[classCommand], count[classRead]+count[classWrite]+count[classCommand]))
	r.Doc("readLock", timeCountDoc(time[classRead]+time[classCommand], count[classRead]+count[classCommand]))
	r.Doc("writeLock", timeCountDoc(time[classWrite], count[classWrite]))
	for _, f := range []struct {
		name string
		tc   *timeCount
	}{{"queries", &c.queries}, {"getmore", &c.getmore}, {"insert", &c.insert},
		{"update", &c.update}, {"remove", &c.remove}, {"commands", &c.commands}} {
		r.Doc(f.name, f.tc.doc())
	}
	return r.End()
}

// Usage are the server's usage counters.
type Usage struct {
	// unlisted has the latencies of commands byCmd does not list (none
	// today: every registered command has its counters).
	unlisted                              [numClasses]latency
	returned, inserted, updated, deleted  atomic.Int64
	keysExamined, docsExamined, collScans atomic.Int64
	scanAndOrder, writeConflicts          atomic.Int64

	// byCmd has every registered command's latencies; built by NewEnv and
	// never changed after, so it is read without a lock. byClass names
	// each one's class.
	byCmd   map[string]*latency
	byClass map[string]opClass

	mu    sync.RWMutex
	colls map[string]*collUsage
	// forgets counts forget calls: a connection's remembered counters
	// (usageCache) are good while it has not changed.
	forgets atomic.Uint64
}

// usageCache is one connection's memory of the counters of the namespace
// it counted last: a connection's commands mostly name one collection, and
// the shared map's read lock is an atomic every connection writes.
type usageCache struct {
	ns      []byte
	c       *collUsage
	forgets uint64
}

// initCommands gives every registered command its latency counters.
func (u *Usage) initCommands() {
	u.byCmd = make(map[string]*latency, len(registry))
	u.byClass = make(map[string]opClass, len(registry))
	for name := range registry {
		u.byCmd[name] = &latency{}
		u.byClass[name] = classOf(name)
	}
}

// classLatencies are the server's latencies by class: the sums of its
// commands' ("Sums are summed when read").
func (u *Usage) classLatencies() *[numClasses]latency {
	var sum [numClasses]latency
	add := func(to, from *latency) {
		to.ops.Add(from.ops.Load())
		to.micros.Add(from.micros.Load())
		for i := range from.hist {
			to.hist[i].Add(from.hist[i].Load())
		}
	}
	for name, l := range u.byCmd {
		add(&sum[u.byClass[name]], l)
	}
	for c := range sum {
		add(&sum[c], &u.unlisted[c])
	}
	return &sum
}

// record counts one command that took us microseconds; ns is its
// "db.collection" as bytes (nil: it names no collection).
func (u *Usage) record(name string, class opClass, us int64, ns []byte, st *opStats, mem *usageCache) {
	if l := u.byCmd[name]; l != nil {
		l.add(us)
	} else {
		u.unlisted[class].add(us)
	}
	if st.reads {
		u.returned.Add(st.nreturned)
		u.keysExamined.Add(st.keysExamined)
		u.docsExamined.Add(st.docsExamined)
	}
	if st.writes != 0 {
		u.inserted.Add(st.ninserted)
		u.updated.Add(st.nModified)
		u.deleted.Add(st.ndeleted)
	}
	scan := st.plan != nil && st.plan.ScansCollection()
	if scan {
		u.collScans.Add(1)
	}
	if ns == nil {
		return
	}
	var c *collUsage
	if f := u.forgets.Load(); mem.c != nil && mem.forgets == f && string(mem.ns) == string(ns) {
		c = mem.c
	} else {
		c = u.coll(ns)
		mem.ns, mem.c, mem.forgets = append(mem.ns[:0], ns...), c, f
	}
	c.lat[class].add(us)
	if scan {
		c.collScans.Add(1)
	}
	switch name {
	case "find":
		c.queries.add(us)
	case "getMore":
		c.getmore.add(us)
	case "insert":
		c.insert.add(us)
	case "update":
		c.update.add(us)
	case "delete":
		c.remove.add(us)
	default:
		c.commands.add(us)
	}
}

// coll returns ns's counters, creating them on its first command.
func (u *Usage) coll(ns []byte) *collUsage {
	u.mu.RLock()
	c := u.colls[string(ns)]
	u.mu.RUnlock()
	if c != nil {
		return c
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.colls == nil {
		u.colls = map[string]*collUsage{}
	}
	if c = u.colls[string(ns)]; c == nil {
		c = &collUsage{}
		u.colls[string(ns)] = c
	}
	return c
}

// lookup returns ns's counters, or nil before its first command.
func (u *Usage) lookup(ns string) *collUsage {
	u.mu.RLock()
	defer u.mu.RUnlock()
	return u.colls[ns]
}

// forget drops ns's counters (its collection was dropped), as MongoDB's
// top forgets a dropped collection.
func (u *Usage) forget(ns string) {
	u.mu.Lock()
	delete(u.colls, ns)
	u.forgets.Add(1)
	u.mu.Unlock()
}

// top is the top command's totals document.
func (u *Usage) top() bsoncore.Document {
	u.mu.RLock()
	names := make([]string, 0, len(u.colls))
	for ns := range u.colls {
		names = append(names, ns)
	}
	u.mu.RUnlock()
	sort.Strings(names)
	r := NewReply(nil)
	r.String("note", "all times in microseconds")
	for _, ns := range names {
		if c := u.lookup(ns); c != nil {
			r.Doc(ns, c.topDoc())
		}
	}
	return r.End()
}

// countedNS appends to buf the namespace a command is counted under in top
// and $collStats: db.collection for the commands that act on one
// collection (reads, writes, getMore), nothing otherwise.
func countedNS(buf []byte, req *Request, cmd *command) []byte {
	if cmd.kind == kindOther && req.Name != "getMore" {
		return nil
	}
	v := req.First()
	if req.Name == "getMore" {
		v, _ = req.Arg("collection")
	}
	if v.Type != bsoncore.TypeString || len(v.Data) < 5 {
		return nil
	}
	buf = append(buf[:0], req.DB...)
	buf = append(buf, '.')
	return append(buf, v.Data[4:len(v.Data)-1]...)
}

// elapsedMicros is d in whole microseconds, at least 1 (MongoDB's
// histograms have no zero bucket of their own; a command takes time).
func elapsedMicros(d time.Duration) int64 { return max(d.Microseconds(), 1) }

// LatencyCounts are one command's latency counters: how many ran, their
// total time, and the histogram (HistogramBucketMicros names the buckets).
type LatencyCounts struct {
	Ops, Micros int64
	Buckets     [histBuckets]int64
}

// HistogramBucketMicros is the lower bound of latency histogram bucket b,
// in microseconds.
func HistogramBucketMicros(b int) int64 { return bucketMicros(b) }

func (l *latency) counts() LatencyCounts {
	c := LatencyCounts{Ops: l.ops.Load(), Micros: l.micros.Load()}
	for i := range l.hist {
		c.Buckets[i] = l.hist[i].Load()
	}
	return c
}

// Metrics is a copy of the counters the metrics endpoint exports.
type Metrics struct {
	// Commands are the latencies of each command that has run.
	Commands                                 map[string]LatencyCounts
	Connections, ConnectionsCreated, Cursors int64
	BytesIn, BytesOut, Requests              int64
	Returned, Inserted, Updated, Deleted     int64
	KeysExamined, DocsExamined, CollScans    int64
	UserErrors                               int64
}

// Metrics copies the server's counters.
func (e *Env) Metrics() Metrics {
	u := &e.Usage
	m := Metrics{
		Commands:    map[string]LatencyCounts{},
		Connections: e.Connections.Current.Load(), ConnectionsCreated: e.Connections.TotalCreated.Load(),
		Cursors: int64(e.Cursors.Len()),
		BytesIn: e.Network.BytesIn.Load(), BytesOut: e.Network.BytesOut.Load(), Requests: e.Network.NumRequests.Load(),
		Returned: u.returned.Load(), Inserted: u.inserted.Load(), Updated: u.updated.Load(), Deleted: u.deleted.Load(),
		KeysExamined: u.keysExamined.Load(), DocsExamined: u.docsExamined.Load(), CollScans: u.collScans.Load(),
		UserErrors: e.Ops.UserErrors.Load(),
	}
	for name, l := range u.byCmd {
		if l.ops.Load() > 0 {
			m.Commands[name] = l.counts()
		}
	}
	return m
}
