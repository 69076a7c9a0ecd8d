package commands

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/cockroachdb/pebble/v2"
	dto "github.com/prometheus/client_model/go"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// This file builds serverStatus, in MongoDB 7.0's section names, field
// names and BSON types, from real counters (usage.go, the connection and
// network counters the server keeps, the process, and Pebble's metrics for
// the pebble section, Cairn's wiredTiger). getDiagnosticData embeds the
// same document.
//
// Deviations from MongoDB: Cairn has no lock manager, so globalLock and
// locks report what the shapes mean without one: no queue, the clients
// with a command running as active, and each command's one intent
// acquisition per level (r for reads, w for writes) as acquireCount.

func cmdServerStatus(_ context.Context, s *Session, _ *Request, dst []byte) (bsoncore.Document, error) {
	r := NewReply(dst)
	appendServerStatus(r, s)
	return r.Finish(), nil
}

// heapSection is serverStatus.tcmalloc in MongoDB's shape, from the Go
// runtime's allocator: generic.current_allocated_bytes is the heap in use
// (live objects and garbage not yet collected), generic.heap_size what the
// heap holds from the system; the pageheap figures are its free spans kept
// (pageheap_free_bytes) and returned to the system (pageheap_unmapped_bytes).
// Reading the figures stops the world for a few microseconds.
func heapSection() bsoncore.Document {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return doc(
		"generic", doc("current_allocated_bytes", int64(ms.HeapAlloc), "heap_size", int64(ms.HeapSys)),
		"tcmalloc", doc("pageheap_free_bytes", int64(ms.HeapIdle-ms.HeapReleased), "pageheap_unmapped_bytes", int64(ms.HeapReleased),
			"total_free_bytes", int64(ms.HeapIdle-ms.HeapReleased), "formattedString", "Go runtime allocator (Cairn): figures from runtime.MemStats"),
	)
}

// appendServerStatus appends serverStatus's sections to r.
func appendServerStatus(r *Reply, s *Session) {
	host, _ := os.Hostname()
	env := s.Env
	up := time.Since(env.Started)
	r.String("host", host)
	r.String("version", MongoVersion)
	r.String("process", "cairn")
	r.Int64("pid", int64(os.Getpid()))
	r.Double("uptime", float64(int64(up.Seconds())))
	r.Int64("uptimeMillis", up.Milliseconds())
	r.Int64("uptimeEstimate", int64(up.Seconds()))
	r.Any("localTime", bson.DateTime(time.Now().UnixMilli()))
	o := &env.Ops
	u := &env.Usage
	r.Doc("asserts", doc("regular", int32(0), "warning", int32(0), "msg", int32(0), "user", int32(o.UserErrors.Load()), "tripwire", int32(0), "rollovers", int32(0)))
	active := int32(len(env.Engine.Ops().List()))
	r.Doc("connections", doc(
		"current", int32(env.Connections.Current.Load()),
		"available", int32(env.Connections.Available.Load()),
		"totalCreated", env.Connections.TotalCreated.Load(),
		"rejected", env.Connections.Rejected.Load(),
		"active", active,
	))
	lat := u.classLatencies()
	reads, writes := lat[classRead].ops.Load(), lat[classWrite].ops.Load()
	r.Doc("globalLock", doc(
		"totalTime", up.Microseconds(),
		"currentQueue", doc("total", int32(0), "readers", int32(0), "writers", int32(0)),
		"activeClients", doc("total", active, "readers", int32(0), "writers", int32(0)),
	))
	acquire := doc("acquireCount", doc("r", reads+lat[classCommand].ops.Load(), "w", writes))
	r.Doc("locks", doc("Global", acquire, "Database", acquire, "Collection", acquire))
	n := &env.Network
	r.Doc("network", doc("bytesIn", n.BytesIn.Load(), "bytesOut", n.BytesOut.Load(), "numRequests", n.NumRequests.Load()))
	r.Doc("opLatencies", latencies(lat, false, true))
	r.Doc("opcounters", doc(
		"insert", o.Insert.Load(), "query", o.Query.Load(), "update", o.Update.Load(),
		"delete", o.Delete.Load(), "getmore", o.GetMore.Load(), "command", o.Command.Load(),
	))
	resident, virtual := processMemMB()
	r.Doc("mem", doc("bits", int32(64), "resident", resident, "virtual", virtual, "supported", true))
	r.Doc("tcmalloc", heapSection())
	r.Doc("metrics", doc(
		"changeStreams", doc("largeEventsFailed", env.largeEventsFailed.Load(), "largeEventsSplit", env.largeEventsSplit.Load()),
		"cursor", doc("open", doc("total", int64(env.Cursors.Len()))),
		"document", doc("deleted", u.deleted.Load(), "inserted", u.inserted.Load(), "returned", u.returned.Load(), "updated", u.updated.Load()),
		"operation", doc("scanAndOrder", u.scanAndOrder.Load(), "writeConflicts", u.writeConflicts.Load()),
		"queryExecutor", doc("scanned", u.keysExamined.Load(), "scannedObjects", u.docsExamined.Load(),
			"collectionScans", doc("nonTailable", u.collScans.Load(), "total", u.collScans.Load())),
		"ttl", doc("deletedDocuments", env.TTL.Deleted(), "passes", env.TTL.Passes()),
		"versioning", doc("prunedVersions", env.History.Pruned(), "passes", env.History.Passes()),
	))
	r.Doc("pebble", pebbleSection(s))
	// The cache again under WiredTiger's field names, which monitoring
	// tools read (mongostat's used%): its whole size and use (the block
	// cache's and the document cache's), the block cache's pages.
	cs := env.Engine.Storage().CacheStats()
	r.Doc("wiredTiger", doc("cache", doc(
		"maximum bytes configured", cs.Capacity,
		"bytes currently in the cache", cs.Size,
		"pages requested from the cache", cs.Hits+cs.Misses,
		"pages read into cache", cs.Misses,
	)))
	r.Doc("storageEngine", doc("name", "pebble", "supportsCommittedReads", true, "persistent", true))
}

// processMemMB is the process's resident and virtual size in MiB, as the
// kernel reports them (/proc/self/status); elsewhere, what the Go runtime
// holds for both.
func processMemMB() (resident, virtual int32) {
	b, err := os.ReadFile("/proc/self/status")
	if err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
				resident = kbToMB(v)
			} else if v, ok := strings.CutPrefix(line, "VmSize:"); ok {
				virtual = kbToMB(v)
			}
		}
		if resident > 0 && virtual > 0 {
			return resident, virtual
		}
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int32(ms.Sys >> 20), int32(ms.Sys >> 20)
}

// kbToMB reads "  1234 kB" as MiB.
func kbToMB(v string) int32 {
	f := strings.Fields(v)
	if len(f) == 0 {
		return 0
	}
	kb, _ := strconv.ParseInt(f[0], 10, 64)
	return int32(kb >> 10)
}

// pebbleSection is the storage engine's own section, as wiredTiger's is
// MongoDB's: the block cache, compactions, flushes, the write-ahead log and
// the LSM's shape.
func pebbleSection(s *Session) bsoncore.Document {
	st := s.Env.Engine.Storage()
	m := st.Pebble().Metrics()
	total := m.Total()
	dc := st.DocumentCacheStats()
	return doc(
		"cache", doc(
			"maximum bytes configured", st.BlockCacheCapacity(),
			"bytes currently in the cache", m.BlockCache.Size,
			"blocks currently in the cache", m.BlockCache.Count,
			"hits", m.BlockCache.Hits,
			"misses", m.BlockCache.Misses,
		),
		// Cairn's own cache of whole documents in front of Pebble's
		// point reads (storage's doccache.go), part of the cache size.
		"document cache", doc(
			"maximum bytes configured", dc.Capacity,
			"bytes currently in the cache", dc.Size,
			"documents currently in the cache", dc.Entries,
			"hits", dc.Hits,
			"misses", dc.Misses,
			"evictions", dc.Evictions,
			"invalidations", dc.Invalidations,
			"documents too large to cache", dc.Refused,
			"reads not cached for a concurrent write", dc.Raced,
			"documents refreshed in place", dc.Refreshed,
		),
		"compaction", doc(
			"count", m.Compact.Count,
			"in progress", m.Compact.NumInProgress,
			"estimated debt bytes", int64(m.Compact.EstimatedDebt),
			"bytes compacted", int64(total.TableBytesCompacted),
			"duration micros", m.Compact.Duration.Microseconds(),
		),
		"flush", doc("count", m.Flush.Count, "in progress", m.Flush.NumInProgress),
		"memtable", doc("size", int64(m.MemTable.Size), "count", m.MemTable.Count),
		"wal", doc(
			"files", m.WAL.Files,
			"size", int64(m.WAL.Size),
			"bytes in", int64(m.WAL.BytesIn),
			"bytes written", int64(m.WAL.BytesWritten),
			"syncs", walSyncs(m),
		),
		"lsm", doc(
			"read amplification", int64(m.ReadAmp()),
			"table count", total.TablesCount,
			"table bytes", int64(total.TablesSize),
			"disk space used", int64(m.DiskSpaceUsage()),
		),
	)
}

// walSyncs is the write-ahead log's fsyncs: how many and their total time
// in microseconds (Pebble's fsync latency histogram, in nanoseconds).
func walSyncs(m *pebble.Metrics) bsoncore.Document {
	var count, micros int64
	if h := m.LogWriter.FsyncLatency; h != nil {
		var d dto.Metric
		if h.Write(&d) == nil && d.Histogram != nil {
			count, micros = int64(d.Histogram.GetSampleCount()), int64(d.Histogram.GetSampleSum()/1e3)
		}
	}
	return doc("count", count, "total micros", micros)
}
