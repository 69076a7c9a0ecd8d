package commands

import (
	"bytes"
	"context"
	"fmt"
	"hash/fnv"
	"math"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
)

// BenchmarkInsertYCSB is cairn bench's load phase in process: an insert
// command of 1,000 YCSB records (_id "user" and the FNV-1a hash of the
// record's number, ten fields of 100 characters) in a document sequence,
// with an lsid, as the driver's insertMany sends it; every command's _ids
// are new (written into the same documents before each command). The WAL
// is synced on an interval, so that the figure is the CPU of the insert
// path rather than the disk's sync. ns/doc is per record.
func BenchmarkInsertYCSB(b *testing.B) {
	sess := testSession(b, engine.Options{SyncInterval: time.Millisecond, CacheSize: 1 << 30})
	sess.Env.Profiler.SetSlowMS(math.MaxInt32) // no slow-command log lines under callgrind
	const batch = 1000
	docs := make([]bsoncore.Document, batch)
	at := make([]int, batch) // where each document's _id digits are
	for i := range docs {
		docs[i] = ycsbRecord(uint64(i))
		at[i] = bytes.Index(docs[i], []byte("user")) + len("user")
	}
	body, _ := bson.Marshal(bson.D{{Key: "insert", Value: "usertable"}, {Key: "ordered", Value: true}, {Key: "lsid", Value: benchLsid}, {Key: "$db", Value: "b"}})
	seqs := map[string][]bsoncore.Document{"documents": docs}
	var dst []byte
	var req Request
	n := uint64(0)
	b.ReportAllocs()
	for b.Loop() {
		for i := range docs {
			copy(docs[i][at[i]:], ycsbID(n)[len("user"):])
			n++
		}
		if err := req.Reset(body, "", seqs); err != nil {
			b.Fatal(err)
		}
		dst = Run(context.Background(), sess, &req, dst[:0])
		if got, _ := bson.Raw(dst).Lookup("n").AsInt64OK(); got != batch {
			b.Fatalf("inserted %d of %d: %s", got, batch, bson.Raw(dst))
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/doc")
}

// ycsbRecord is record n: its _id and ten fields of 100 characters.
func ycsbRecord(n uint64) bsoncore.Document {
	d := bson.D{{Key: "_id", Value: ycsbID(n)}}
	for f := range 10 {
		d = append(d, bson.E{Key: fmt.Sprintf("field%d", f), Value: strings.Repeat(string(rune('a'+(int(n)+f)%26)), 100)})
	}
	doc, _ := bson.Marshal(d)
	return doc
}

// ycsbID is record n's _id as YCSB's (and cairn bench's) keys are:
// "user" and the FNV-1a hash of n, 20 digits wide so that every _id has
// the same length.
func ycsbID(n uint64) string {
	h := fnv.New64a()
	var b [8]byte
	for i := range b {
		b[i] = byte(n >> (8 * i))
	}
	_, _ = h.Write(b[:])
	return fmt.Sprintf("user%020d", h.Sum64())
}

// BenchmarkHasEmptyTimestamp is the insert command's look for top-level
// Timestamp(0, 0) values on one of BenchmarkInsertYCSB's records (none
// there): one goroutine, nothing else running, so that its instruction
// count under callgrind is exact.
func BenchmarkHasEmptyTimestamp(b *testing.B) {
	doc := ycsbRecord(1)
	for b.Loop() {
		if hasEmptyTimestamp(doc) {
			b.Fatal("found an empty timestamp")
		}
	}
}
