package server_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/commands"
	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/server"
	"github.com/cairndb/cairn/internal/wire"
)

// BenchmarkVersionedWire measures, over the wire with a raw client, a find
// by _id of a document with 10,000 versions: the latest, and as of a time
// in the middle of its history (readConcern snapshot atClusterTime), with
// the process's CPU per operation (client and server both: the same
// client cost is in both figures).
func BenchmarkVersionedWire(b *testing.B) {
	log := discard()
	eng, err := engine.Open(b.TempDir(), engine.Options{Logger: log, SyncInterval: 100 * time.Millisecond})
	if err != nil {
		b.Fatal(err)
	}
	env := commands.NewEnv(eng, commands.Config{CairnVer: "test"}, log)
	srv := server.New(env, server.Options{Logger: log})
	if err := srv.Listen("127.0.0.1:0"); err != nil {
		b.Fatal(err)
	}
	go func() { _ = srv.Serve() }()
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
		env.Close()
		_ = eng.Close()
	})
	ns := engine.Namespace{DB: "bench", Coll: "v"}
	opts := mustMarshal(b, bson.D{{Key: "versioning", Value: bson.D{{Key: "enabled", Value: true}}}})
	if err := eng.CreateCollection(ns, opts); err != nil {
		b.Fatal(err)
	}
	id := bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 5)}
	if _, err := eng.Insert(ns, []bsoncore.Document{mustMarshal(b, bson.D{{Key: "_id", Value: 5}, {Key: "n", Value: 0}})}, true); err != nil {
		b.Fatal(err)
	}
	var mid bson.Timestamp
	for n := 1; n < 10000; n++ {
		if _, err := eng.Replace(ns, id, mustMarshal(b, bson.D{{Key: "_id", Value: 5}, {Key: "n", Value: n}})); err != nil {
			b.Fatal(err)
		}
		if n == 3333 {
			ts := eng.Storage().LastCommitted()
			mid = bson.Timestamp{T: ts.T(), I: ts.I()}
		}
	}
	latest := mustMarshal(b, bson.D{{Key: "find", Value: "v"}, {Key: "filter", Value: bson.D{{Key: "_id", Value: 5}}},
		{Key: "limit", Value: 1}, {Key: "singleBatch", Value: true}, {Key: "$db", Value: "bench"}})
	asOf := mustMarshal(b, bson.D{{Key: "find", Value: "v"}, {Key: "filter", Value: bson.D{{Key: "_id", Value: 5}}},
		{Key: "limit", Value: 1}, {Key: "singleBatch", Value: true},
		{Key: "readConcern", Value: bson.D{{Key: "level", Value: "snapshot"}, {Key: "atClusterTime", Value: mid}}}, {Key: "$db", Value: "bench"}})
	addr := srv.Addr().String()
	// The as-of find answers what it should (rawLoop reads replies unchecked).
	cl := (&testServer{addr: addr}).client(b)
	raw, err := cl.Database("bench").RunCommand(context.Background(), bson.D{{Key: "find", Value: "v"}, {Key: "filter", Value: bson.D{{Key: "_id", Value: 5}}},
		{Key: "readConcern", Value: bson.D{{Key: "level", Value: "snapshot"}, {Key: "atClusterTime", Value: mid}}}}).Raw()
	if err != nil || firstDoc(raw).Lookup("n").Int32() != 3333 {
		b.Fatalf("as-of find: %v %v", raw, err)
	}
	for _, c := range []struct {
		name string
		msg  []byte
	}{{"op=find_latest", latest}, {"op=find_asof_10k_versions", asOf}} {
		b.Run(c.name, func(b *testing.B) {
			start := processCPU()
			rawLoop(b, addr, wire.AppendMsg(nil, 1, 0, 0, c.msg))
			b.ReportMetric(float64(processCPU()-start)/float64(b.N), "cpu-ns/op")
		})
	}
}

func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
