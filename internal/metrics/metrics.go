// Package metrics owns Cairn's Prometheus endpoint (--metricsAddr): it
// exposes the counters the server already keeps — per-command request
// counts and latencies, connections, cursors, documents, the network, the
// storage engine's cache, compactions and WAL, commit-group sizes and WAL
// sync latency — in the Prometheus text format.
//
// Invariant "Scrapes cost, requests don't": the collector reads the
// server's counters only when scraped (commands.Env.Metrics, Pebble's
// metrics, the commit pipeline's group counters); serving a command pays
// nothing for the endpoint beyond the counters serverStatus reads anyway.
package metrics

import (
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/cairndb/cairn/internal/commands"
)

// exportBuckets are the latency histogram's exported upper bounds in
// microseconds: a subset of the server's buckets (commands.
// HistogramBucketMicros), a factor of 4 apart from 16µs to 16s, so each
// command costs a dozen series.
var exportBuckets = []int64{16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216}

// collector reads an Env's counters at each scrape.
type collector struct {
	env *commands.Env

	cmdLatency, requests                        *prometheus.Desc
	connections, connectionsCreated, cursors    *prometheus.Desc
	network, documents, examined, collScans     *prometheus.Desc
	userErrors                                  *prometheus.Desc
	cacheBytes, cacheCapacity, cacheHits        *prometheus.Desc
	cacheMisses, compactions, compactDebt       *prometheus.Desc
	walBytes, walSync, groupSize, readAmp, disk *prometheus.Desc
	docBytes, docCapacity, docEntries, docHits  *prometheus.Desc
	docMisses, docEvictions                     *prometheus.Desc
}

func newCollector(env *commands.Env) *collector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("cairn_"+name, help, labels, nil)
	}
	return &collector{
		env:                env,
		cmdLatency:         d("command_duration_seconds", "Time commands took, by command.", "command"),
		requests:           d("commands_total", "Commands run, by command.", "command"),
		connections:        d("connections", "Client connections open."),
		connectionsCreated: d("connections_created_total", "Client connections accepted since start."),
		cursors:            d("cursors_open", "Server-side cursors open."),
		network:            d("network_bytes_total", "Wire protocol bytes, by direction.", "direction"),
		documents:          d("documents_total", "Documents returned, inserted, updated and deleted.", "op"),
		examined:           d("examined_total", "Index keys and documents plans examined.", "kind"),
		collScans:          d("collection_scans_total", "Plans that scanned a collection."),
		userErrors:         d("command_errors_total", "Commands answered with an error."),
		cacheBytes:         d("pebble_block_cache_bytes", "Bytes in the storage engine's block cache."),
		cacheCapacity:      d("pebble_block_cache_capacity_bytes", "The block cache's configured size."),
		cacheHits:          d("pebble_block_cache_hits_total", "Block cache hits."),
		cacheMisses:        d("pebble_block_cache_misses_total", "Block cache misses."),
		compactions:        d("pebble_compactions_total", "Compactions completed."),
		compactDebt:        d("pebble_compaction_debt_bytes", "Estimated bytes compaction is behind."),
		walBytes:           d("pebble_wal_bytes_written_total", "Bytes written to the write-ahead log."),
		walSync:            d("pebble_wal_sync_duration_seconds", "Write-ahead log fsync latency."),
		groupSize:          d("commit_group_size", "Write requests per commit group (one WAL write each)."),
		readAmp:            d("pebble_read_amplification", "The LSM's read amplification."),
		disk:               d("pebble_disk_bytes", "Disk space the storage engine uses."),
		docBytes:           d("document_cache_bytes", "Bytes in the document cache (point reads by _id)."),
		docCapacity:        d("document_cache_capacity_bytes", "The document cache's configured size (part of the cache)."),
		docEntries:         d("document_cache_documents", "Documents in the document cache."),
		docHits:            d("document_cache_hits_total", "Point reads answered from the document cache."),
		docMisses:          d("document_cache_misses_total", "Point reads of documents the document cache did not hold."),
		docEvictions:       d("document_cache_evictions_total", "Documents evicted from the document cache for room."),
	}
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.cmdLatency, c.requests, c.connections, c.connectionsCreated, c.cursors,
		c.network, c.documents, c.examined, c.collScans, c.userErrors, c.cacheBytes, c.cacheCapacity, c.cacheHits,
		c.cacheMisses, c.compactions, c.compactDebt, c.walBytes, c.walSync, c.groupSize, c.readAmp, c.disk,
		c.docBytes, c.docCapacity, c.docEntries, c.docHits, c.docMisses, c.docEvictions} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	m := c.env.Metrics()
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), labels...)
	}
	for name, l := range m.Commands {
		counter(c.requests, l.Ops, name)
		ch <- prometheus.MustNewConstHistogram(c.cmdLatency, uint64(l.Ops), float64(l.Micros)/1e6, cumulative(l), name)
	}
	gauge(c.connections, m.Connections)
	counter(c.connectionsCreated, m.ConnectionsCreated)
	gauge(c.cursors, m.Cursors)
	counter(c.network, m.BytesIn, "in")
	counter(c.network, m.BytesOut, "out")
	counter(c.documents, m.Returned, "returned")
	counter(c.documents, m.Inserted, "inserted")
	counter(c.documents, m.Updated, "updated")
	counter(c.documents, m.Deleted, "deleted")
	counter(c.examined, m.KeysExamined, "keys")
	counter(c.examined, m.DocsExamined, "documents")
	counter(c.collScans, m.CollScans)
	counter(c.userErrors, m.UserErrors)

	st := c.env.Engine.Storage()
	pm := st.Pebble().Metrics()
	gauge(c.cacheBytes, pm.BlockCache.Size)
	gauge(c.cacheCapacity, st.BlockCacheCapacity())
	counter(c.cacheHits, pm.BlockCache.Hits)
	counter(c.cacheMisses, pm.BlockCache.Misses)
	ds := st.DocumentCacheStats()
	gauge(c.docBytes, ds.Size)
	gauge(c.docCapacity, ds.Capacity)
	gauge(c.docEntries, ds.Entries)
	counter(c.docHits, ds.Hits)
	counter(c.docMisses, ds.Misses)
	counter(c.docEvictions, ds.Evictions)
	counter(c.compactions, pm.Compact.Count)
	gauge(c.compactDebt, int64(pm.Compact.EstimatedDebt))
	counter(c.walBytes, int64(pm.WAL.BytesWritten))
	gauge(c.readAmp, int64(pm.ReadAmp()))
	gauge(c.disk, int64(pm.DiskSpaceUsage()))
	if h := pm.LogWriter.FsyncLatency; h != nil {
		// Pebble observes nanoseconds; re-expose it in seconds under our name.
		if hist, ok := fsyncSeconds(h); ok {
			ch <- prometheus.MustNewConstHistogram(c.walSync, hist.count, hist.sum, hist.buckets)
		}
	}
	g := st.CommitGroups()
	groups := map[float64]uint64{}
	var cum uint64
	for i, n := range g.Sizes {
		cum += uint64(n)
		groups[float64(int64(2)<<i-1)] = cum // bucket i holds sizes up to 2^(i+1)-1
	}
	ch <- prometheus.MustNewConstHistogram(c.groupSize, uint64(g.Groups), float64(g.Requests), groups)
}

// cumulative is l's histogram at the exported bounds, in seconds: the
// commands faster than each bound.
func cumulative(l commands.LatencyCounts) map[float64]uint64 {
	out := make(map[float64]uint64, len(exportBuckets))
	var below uint64
	b := 0
	for _, bound := range exportBuckets {
		for b < len(l.Buckets) && commands.HistogramBucketMicros(b) < bound {
			below += uint64(l.Buckets[b])
			b++
		}
		out[float64(bound)/1e6] = below
	}
	return out
}

// Handler serves env's metrics, plus the Go runtime's and the process's,
// in the Prometheus text format.
func Handler(env *commands.Env) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(newCollector(env), collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
}

// Serve listens on addr and serves /metrics until the listener is closed;
// it returns the listener (its Addr says the port chosen for ":0").
func Serve(addr string, env *commands.Env) (net.Listener, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", Handler(env))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return ln, nil
}
