package server_test

import (
	"context"
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
)

// TestDiagnosticReplyTypes checks, field by field, that diagnostic replies
// carry MongoDB 7.0's BSON types: drivers, shells and monitoring tools
// decode them into typed fields.
func TestDiagnosticReplyTypes(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	ctx := context.Background()
	coll := c.Database("shapes").Collection("c")
	if _, err := coll.InsertMany(ctx, []any{bson.D{{"_id", 1}, {"a", 1}}, bson.D{{"_id", 2}, {"a", 2}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{"a", 1}}, Options: options.Index().SetUnique(true)}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		db    string
		cmd   bson.D
		types map[string]bson.Type // dotted path → type
	}{
		{"admin", bson.D{{"hello", 1}}, map[string]bson.Type{
			"connectionId": bson.TypeInt32, "maxWireVersion": bson.TypeInt32, "localTime": bson.TypeDateTime,
			"topologyVersion.counter": bson.TypeInt64, "logicalSessionTimeoutMinutes": bson.TypeInt32,
		}},
		{"admin", bson.D{{"listDatabases", 1}}, map[string]bson.Type{
			"totalSize": bson.TypeInt64, "totalSizeMb": bson.TypeInt64,
			"databases.0.sizeOnDisk": bson.TypeInt64, "databases.0.empty": bson.TypeBoolean, "databases.0.name": bson.TypeString,
		}},
		{"shapes", bson.D{{"dbStats", 1}}, map[string]bson.Type{
			"db": bson.TypeString, "collections": bson.TypeInt64, "views": bson.TypeInt64, "objects": bson.TypeInt64,
			"avgObjSize": bson.TypeDouble, "dataSize": bson.TypeDouble, "storageSize": bson.TypeDouble,
			"indexes": bson.TypeInt64, "indexSize": bson.TypeDouble, "totalSize": bson.TypeDouble,
			"scaleFactor": bson.TypeInt64, "fsUsedSize": bson.TypeDouble, "fsTotalSize": bson.TypeDouble,
		}},
		{"shapes", bson.D{{"collStats", "c"}}, map[string]bson.Type{
			"ns": bson.TypeString, "size": bson.TypeInt32, "count": bson.TypeInt32, "avgObjSize": bson.TypeInt32,
			"storageSize": bson.TypeInt32, "capped": bson.TypeBoolean, "nindexes": bson.TypeInt32,
			"totalIndexSize": bson.TypeInt32, "totalSize": bson.TypeInt32, "indexSizes._id_": bson.TypeInt32,
			"indexSizes.a_1": bson.TypeInt32, "scaleFactor": bson.TypeInt32, "indexBuilds": bson.TypeArray,
		}},
		{"admin", bson.D{{"serverStatus", 1}}, map[string]bson.Type{
			"host": bson.TypeString, "version": bson.TypeString, "pid": bson.TypeInt64, "uptime": bson.TypeDouble,
			"uptimeMillis": bson.TypeInt64, "localTime": bson.TypeDateTime,
			"asserts.user": bson.TypeInt32, "connections.current": bson.TypeInt32, "connections.available": bson.TypeInt32,
			"opcounters.insert": bson.TypeInt64, "opcounters.command": bson.TypeInt64,
			"mem.bits": bson.TypeInt32, "mem.resident": bson.TypeInt32, "mem.virtual": bson.TypeInt32,
			"tcmalloc.generic.current_allocated_bytes": bson.TypeInt64, "tcmalloc.generic.heap_size": bson.TypeInt64,
			"tcmalloc.tcmalloc.pageheap_unmapped_bytes": bson.TypeInt64,
			"storageEngine.name":                        bson.TypeString, "metrics.cursor.open.total": bson.TypeInt64,
			"network.bytesIn": bson.TypeInt64, "network.bytesOut": bson.TypeInt64, "network.numRequests": bson.TypeInt64,
			"opLatencies.reads.latency": bson.TypeInt64, "opLatencies.reads.ops": bson.TypeInt64,
			"opLatencies.writes.latency": bson.TypeInt64, "opLatencies.commands.ops": bson.TypeInt64,
			"opLatencies.transactions.ops": bson.TypeInt64,
			"globalLock.totalTime":         bson.TypeInt64, "globalLock.currentQueue.total": bson.TypeInt32,
			"globalLock.currentQueue.readers": bson.TypeInt32, "globalLock.activeClients.total": bson.TypeInt32,
			"locks.Global.acquireCount.r": bson.TypeInt64, "locks.Collection.acquireCount.w": bson.TypeInt64,
			"metrics.document.returned": bson.TypeInt64, "metrics.document.inserted": bson.TypeInt64,
			"metrics.queryExecutor.scanned": bson.TypeInt64, "metrics.queryExecutor.scannedObjects": bson.TypeInt64,
			"metrics.queryExecutor.collectionScans.total": bson.TypeInt64, "metrics.operation.scanAndOrder": bson.TypeInt64,
			"metrics.changeStreams.largeEventsSplit": bson.TypeInt64, "metrics.changeStreams.largeEventsFailed": bson.TypeInt64,
			"pebble.cache.maximum bytes configured": bson.TypeInt64, "pebble.cache.bytes currently in the cache": bson.TypeInt64,
			"pebble.document cache.hits": bson.TypeInt64, "pebble.document cache.documents currently in the cache": bson.TypeInt64,
			"pebble.compaction.count": bson.TypeInt64, "pebble.wal.bytes written": bson.TypeInt64, "pebble.wal.syncs.count": bson.TypeInt64,
			"wiredTiger.cache.maximum bytes configured": bson.TypeInt64, "wiredTiger.cache.bytes currently in the cache": bson.TypeInt64,
		}},
		{"admin", bson.D{{"getDiagnosticData", 1}}, map[string]bson.Type{
			"data.start": bson.TypeDateTime, "data.end": bson.TypeDateTime,
			"data.serverStatus.connections.current": bson.TypeInt32, "data.serverStatus.opcounters.query": bson.TypeInt64,
			"data.serverStatus.mem.resident": bson.TypeInt32,
		}},
		{"admin", bson.D{{"getLog", "*"}}, map[string]bson.Type{"names": bson.TypeArray}},
		{"admin", bson.D{{"getLog", "global"}}, map[string]bson.Type{"totalLinesWritten": bson.TypeInt32, "log": bson.TypeArray}},
		{"admin", bson.D{{"getLog", "startupWarnings"}}, map[string]bson.Type{"totalLinesWritten": bson.TypeInt32, "log": bson.TypeArray}},
	} {
		raw, err := c.Database(tc.db).RunCommand(ctx, tc.cmd).Raw()
		if err != nil {
			t.Errorf("%v: %v", tc.cmd, err)
			continue
		}
		fieldTypes(t, tc.cmd[0].Key, raw, tc.types)
	}

	raw, err := c.Database("admin").RunCommand(ctx, bson.D{{"getLog", "*"}}).Raw()
	if err != nil {
		t.Fatal(err)
	}
	names, _ := raw.Lookup("names").Array().Values()
	if len(names) != 2 || names[0].StringValue() != "global" || names[1].StringValue() != "startupWarnings" {
		t.Errorf("getLog '*' names %s", raw)
	}
}

// TestListIndexesFieldOrder checks MongoDB 7.0's order: v, key, name, then
// the options.
func TestListIndexesFieldOrder(t *testing.T) {
	s := startServer(t)
	c := s.client(t)
	ctx := context.Background()
	coll := c.Database("order").Collection("c")
	if _, err := coll.Indexes().CreateOne(ctx, mongo.IndexModel{Keys: bson.D{{"a", 1}}, Options: options.Index().SetUnique(true).SetSparse(true)}); err != nil {
		t.Fatal(err)
	}
	cur, err := coll.Indexes().List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var specs []bson.Raw
	if err := cur.All(ctx, &specs); err != nil {
		t.Fatal(err)
	}
	want := [][]string{{"v", "key", "name"}, {"v", "key", "name", "unique", "sparse"}}
	if len(specs) != len(want) {
		t.Fatalf("listIndexes: %v", specs)
	}
	for i, sp := range specs {
		if got := replyKeys(sp); !slices.Equal(got, want[i]) {
			t.Errorf("index %d fields %v, want %v", i, got, want[i])
		}
	}
}

// TestServerStatusNetworkCounts: each request adds to numRequests and to
// the bytes in and out.
func TestServerStatusNetworkCounts(t *testing.T) {
	s := startServer(t)
	admin := s.client(t).Database("admin")
	ctx := context.Background()
	status := func() bson.Raw {
		raw, err := admin.RunCommand(ctx, bson.D{{"serverStatus", 1}}).Raw()
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	before := status()
	if err := admin.RunCommand(ctx, bson.D{{"ping", 1}, {"comment", "0123456789012345678901234567890123456789"}}).Err(); err != nil {
		t.Fatal(err)
	}
	after := status()
	for _, f := range []string{"bytesIn", "bytesOut"} {
		if d := after.Lookup("network", f).Int64() - before.Lookup("network", f).Int64(); d < 40 {
			t.Errorf("network.%s grew %d bytes over a ping and a serverStatus", f, d)
		}
	}
	if d := after.Lookup("network", "numRequests").Int64() - before.Lookup("network", "numRequests").Int64(); d < 2 {
		t.Errorf("network.numRequests grew %d over two requests", d)
	}
}
