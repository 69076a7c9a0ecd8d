package engine

import (
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/cairndb/cairn/internal/catalog"
	"github.com/cairndb/cairn/internal/failpoint"
	"github.com/cairndb/cairn/internal/idgen"
	"github.com/cairndb/cairn/internal/storage"
)

// Options configure an Engine. The zero value is durable, on the OS filesystem.
type Options struct {
	// FS is the filesystem for every durable file (tests inject faults here).
	FS vfs.FS
	// SyncInterval 0 syncs before acknowledging each write; see storage.Options.
	SyncInterval time.Duration
	// CacheSize is the block cache in bytes; 0 is storage's default
	// (storage.DefaultCacheSize).
	CacheSize int64
	// DocumentCacheSize is the document cache's part of CacheSize
	// (storage.Options.DocumentCacheSize): 0 the default share,
	// negative none.
	DocumentCacheSize int64
	// Logger receives engine events. Default: slog.Default().
	Logger *slog.Logger
	// Now is the clock. Default: time.Now.
	Now func() time.Time
	// FailPoints holds the server's named fail points (package failpoint);
	// the engine's own sit in its commit path. Default: a registry of its own.
	FailPoints *failpoint.Registry
	// OplogSize caps local.oplog.rs in bytes (--oplogSize); 0 is mongod's
	// default, DefaultOplogSize of the data directory's disk.
	OplogSize int64
}

// Engine is one node's open database.
type Engine struct {
	db          *storage.DB
	cat         *catalog.Catalog
	seq         *idgen.Sequential
	specs       specCache
	tails       docTails        // "Tail bound" (write.go); pipeline goroutine only
	valid       validators      // "Valid on commit" (docvalidation.go); pipeline goroutine only
	wake        wakeup          // awaitData waiters on capped inserts (capped.go)
	oplog       oplog           // the change log (oplog.go)
	horizons    horizons        // versioned collections' retention horizons (history_asof.go)
	asOfIters   asOfIters       // open iterators for as-of point reads (history_iters.go)
	snaps       snapHistory     // held views for snapshot reads of plain collections (snapshot_history.go)
	prepCommits preparedCommits // prepared commits after their commitTimestamp (snapshot_prepared.go)
	recordBuf   []byte          // a version's record as recordVersion builds it (pipeline goroutine)
	versionings versionings     // parsed versioning options (versioning.go); pipeline goroutine only
	txn         txnCursor       // the transaction whose statement is applied (txn.go); pipeline goroutine only
	// modBufs are ModifyWith's key and document buffers, kept between
	// requests (pipeline goroutine only; nil while a ModifyWith holds them).
	modBufs *modifyBufs
	log     *slog.Logger
	now     func() time.Time

	ops         Ops                              // operations in progress (ops.go)
	usage       indexUsage                       // index access counters (indexusage.go)
	buildTuning atomic.Pointer[IndexBuildTuning] // (indexbuild.go)
}

// Namespace names a collection.
type Namespace struct{ DB, Coll string }

func (ns Namespace) String() string { return ns.DB + "." + ns.Coll }

// Open opens (or creates) the database in dir.
func Open(dir string, opts Options) (*Engine, error) {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	hooks := &storage.Hooks{}
	db, err := storage.Open(dir, storage.Options{FS: opts.FS, SyncInterval: opts.SyncInterval, CacheSize: opts.CacheSize, DocumentCacheSize: opts.DocumentCacheSize, Logger: opts.Logger, Hooks: hooks, FailPoints: opts.FailPoints})
	if err != nil {
		return nil, err
	}
	cat, err := catalog.Load(db, opts.Now)
	if err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("engine: %s: %w", dir, err)
	}
	e := &Engine{db: db, cat: cat, log: opts.Logger, now: opts.Now}
	// Set before the first Write (see storage.Hooks).
	hooks.Committing = func() bool { e.oplogCommitting(); e.wake.seal(); return cat.Committing() }
	hooks.Committed = e.committed
	hooks.Publishes = cat.Changing // a pipelined member's (storage's "Pipelined groups")
	hooks.Failed = func() { e.oplogFailed(); e.wake.drop(); cat.Failed() }
	hooks.Verify = e.verifyGroup // runs only in builds with the invariants tag
	hooks.Applied = e.oplogApplied
	if opts.OplogSize == 0 {
		opts.OplogSize = DefaultOplogSize(diskBytes(dir))
	}
	if err := e.openOplog(opts.OplogSize); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("engine: %s: oplog: %w", dir, err)
	}
	if err := e.openIDGen(); err != nil {
		_ = e.Close()
		return nil, fmt.Errorf("engine: %s: %w", dir, err)
	}
	if err := e.dropTempOutCollections(); err != nil {
		_ = e.Close()
		return nil, fmt.Errorf("engine: %s: %w", dir, err)
	}
	if err := e.startIndexes(); err != nil {
		_ = e.Close()
		return nil, fmt.Errorf("engine: %s: %w", dir, err)
	}
	return e, nil
}

// Close waits for queued writes and closes the store.
func (e *Engine) Close() error {
	e.stopOplogCount()
	e.asOfIters.drop(true)
	e.snaps.closeAll()
	return e.db.Close()
}

// Catalog is the catalog as of the last committed write.
func (e *Engine) Catalog() *catalog.State { return e.cat.Current() }

// FailPoints is the registry of the engine's fail points; the command layer
// adds its own (failCommand) and configureFailPoint sets any of them.
func (e *Engine) FailPoints() *failpoint.Registry { return e.db.FailPoints() }

// Storage exposes the store, for benchmarks and diagnostics.
func (e *Engine) Storage() *storage.DB { return e.db }

// committed publishes a committed group's catalog (the storage Committed
// hook) and, when the group changed it, forgets what the engine cached for
// collections and indexes that no longer exist, so caches keyed by id do
// not grow with every collection ever made ($out makes one per run).
func (e *Engine) committed() {
	prev := e.cat.Current()
	e.cat.Committed()
	e.wake.fire()
	e.maybeTrimOplog()
	e.historyAfterCommit()
	if cur := e.cat.Current(); cur != prev {
		e.forgetDropped(cur)
	}
}

// forgetDropped drops the per-id entries (tail bounds, parsed specs, access
// counters) of ids st no longer holds. It runs on storage's completer
// goroutine after a group that changed the catalog, while the pipeline
// goroutine waits for it ("Overlapped sync"), so the tail bounds may be
// changed ("Serial apply"); a
// dropped id has no keys left, so a bound reloaded for it would be the
// same. A reader on an older catalog may cache a dropped index's spec or
// counter again: that entry stays until the next change, harmless.
func (e *Engine) forgetDropped(st *catalog.State) {
	live := map[uint64]bool{}
	for _, c := range st.Collections("") {
		live[c.ID] = true
		for _, ix := range c.Indexes {
			live[ix.ID] = true
		}
	}
	for id := range e.tails.last {
		if !live[id] {
			delete(e.tails.last, id)
		}
	}
	for id := range e.valid.m {
		if !live[id] {
			delete(e.valid.m, id)
		}
	}
	for id := range e.versionings.m {
		if !live[id] {
			delete(e.versionings.m, id)
		}
	}
	forget := func(k, _ any) bool {
		if !live[k.(uint64)] {
			e.specs.m.Delete(k)
			e.usage.m.Delete(k)
		}
		return true
	}
	e.specs.m.Range(forget)
	e.usage.m.Range(forget)
	e.horizons.m.Range(forget)
}
