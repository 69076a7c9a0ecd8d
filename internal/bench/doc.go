// Package bench is `cairn bench`: YCSB's core workloads driven through the
// official Go driver against a server, measured side by side with floors in
// the same invocation, reporting throughput, latency percentiles and CPU
// time per operation for the server and for the client.
//
// # What runs
//
// Targets are measured one at a time, never concurrently:
//
//   - cairn: `cairn serve` started as a child process on a free loopback
//     port with a fresh data directory (or any server given by --uri);
//   - compare: another server (--compare), for peers;
//   - floor-protocol: a server speaking the same wire protocol from a Go
//     map (floor_protocol.go), also a child process;
//   - floor-durable: the protocol floor with a log that every write is
//     appended to and fdatasync'd to (group commit) before its reply
//     (floor_durable.go): the least any server pays for durable writes,
//     also reported against the protocol floor (floor-durable ÷
//     floor-protocol: what the disk's syncs alone cost a workload);
//   - floor-pebble: the same records and operations against Pebble directly,
//     in this process, Pebble opened exactly as Cairn's store opens it
//     (storage.OpenPebble; floor_pebble.go).
//   - floor-pebble-oplog: the Pebble floor with, in each write's batch, an
//     entry of the change log Cairn keeps on every node (MongoDB's oplog
//     shape, in the store's oplog keyspace): Pebble given the bytes Cairn
//     writes.
//   - floor-proxy: cairn's server behind a proxy process that forwards
//     each message reading only its header (floor_proxy.go), into a
//     database of its own; its server CPU is the proxy's and the server's
//     together, and it is reported against cairn (floor-proxy vs cairn):
//     the least a router process adds to the server's work.
//
// Each target is loaded --runs times (batched inserts), each load into a
// fresh store (fresh.go: invariant "Every load into a fresh store" — the
// child servers restarted on new directories, the Pebble floors reopened on
// new ones), the targets in an order rotated from one run to the next; a
// --uri or --compare server and the proxy floor, which the harness cannot
// renew, are loaded once, after the others. Every workload then runs
// --runs times on every target, over its last load; the order of targets
// reverses from one run to the next so that drifting background load does
// not always fall on the same target. The report gives each figure's
// median over the runs (the load's too) and the
// spread of throughput, and every non-floor target as a ratio of each
// floor — the load phase too (records per second and server CPU per
// record), so cairn's load is reported against Pebble's own synced insert
// rate measured in the same run (issue 16's target: at least 80 %, marked
// MISSED in the text report's last table when not met).
//
// # Workloads
//
// workload.go holds YCSB's A–F (mixes, distributions, scan lengths) and
// the records: _id "user" + FNV-1a hash of the key number, fields field0…
// of printable characters, as YCSB's MongoDB binding stores them.
// distribution.go implements uniform, YCSB's scrambled zipfian and
// skewed-latest from their definitions. Inserts during a run take new key
// numbers; reads never target a record whose insert is not yet
// acknowledged.
//
// Updates are $set of one field, as in YCSB's MongoDB binding; --update
// replace sends the whole record with one field changed instead (the
// driver's ReplaceOne), for servers without update operators (see
// DefaultUpdateStyle). Every target receives the same requests.
//
// A server error is never a result: the first failed operation stops that
// workload on that target and the report shows the server's message
// (before Cairn's query language landed, workload E's
// find({_id: {$gte: k}}).sort({_id: 1}).limit(n) failed this way).
//
// # Measurement
//
// Latency is taken around each driver call into per-worker log-linear
// histograms (histogram.go; < 1% error at any scale); throughput is a run's
// operations over its wall time. CPU is attributed as cpu.go describes:
// from /proc/<pid>/stat for servers running as processes on this machine
// (the embedded server, the protocol floor, a loopback --uri or --compare
// server found by its listening socket), from getrusage for this process
// (the client), and, for the in-process Pebble floor, as this process's
// CPU minus the harness's own cost per operation measured against a no-op
// target.
//
// Before each phase the harness waits for the machine to settle (no local
// server busy: a previous phase's flushes and compactions done), connects
// the driver afresh with its pool already filled, and disconnects after,
// so that no target's connection costs anything while another target is
// measured.
//
// # Profiles
//
// profiling.go: with --profile-dir, the cairn target's server is profiled
// in every measured phase (its own CPU profile, and its allocations
// profile at the phase's start and end) through ProfileHandler, which only
// a profiling build serves (-tags cairnpprof); `make bench-profile` builds
// one, runs every workload and prints each profile's top 15 — issue 16's
// "profile of the server per workload". A server without the endpoint is
// refused before anything is measured, and any failed fetch fails the
// run: profiles asked for are never silently missing
// (TestProfilerPhases, TestProfileDirEndToEnd).
//
// # Soak
//
// soak.go is the load soak (`make soak-load`): SoakMix, a steady mix with
// no inserts, over a fixed data set with a fixed number of connections
// against a fresh `cairn serve`, throughput and the server's RSS every
// interval; it passes only if the last window's throughput is within
// MaxChange of the first window's and RSS stays under MaxRSSMiB, so a
// server that degrades or leaks under hours of load fails it.
//
// # Invariants
//
// No fake results: a run that failed is reported as failed with its error
// and kept out of every median and ratio; a figure that cannot be measured
// (the CPU of a remote server) is null, never zero.
//
// "Every load into a fresh store" (TestLoadRunsFresh; fresh.go checks it
// before every load and fails the load when it does not hold): a target
// the harness started is loaded only into a store nothing was written to.
//
// Same work for every target: all targets get the same records, the same
// per-thread operation streams (same seeds) and the same request bytes.
//
// "The proxy changes only ids" (TestProxyFloorForwards): the proxy floor
// passes every message on byte for byte but its requestID and responseTo.
//
// "The durable floor syncs before it answers"
// (TestDurableFloorSyncsBeforeReply, TestDurableFloorRingWraps): a write
// command's reply leaves only after a sync that covers its statements
// ended; syncs are shared by the writes waiting together, never more
// syncs than writes.
package bench
