package storage

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/batchrepr"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/cairndb/cairn/internal/failpoint"
	"github.com/cairndb/cairn/internal/hlc"
	"github.com/cairndb/cairn/internal/invariants"
)

// formatMarker is stored under SystemKey("format") in every Cairn store; it
// is how Open tells a Cairn directory from some other Pebble store.
const formatMarker = "cairn-storage-v1"

// Options configure a DB. The zero value is durable and uses the OS filesystem.
type Options struct {
	// FS is the filesystem every durable file goes through; tests pass a
	// crash-simulating or error-injecting one. Default: the OS filesystem.
	FS vfs.FS
	// SyncInterval 0 (the default) syncs every commit group before
	// acknowledging it. A positive value acknowledges once the group's log
	// record is written to the OS (so a process crash loses nothing
	// acknowledged) and syncs the log at that interval, trading at most the
	// last interval of writes on power loss for speed (MongoDB's journal
	// commit interval). The log is also synced whenever it starts a new
	// 32 KiB block (invariant "Unsynced log is one block").
	SyncInterval time.Duration
	// MinFreeBytes is the free space the store's disk must keep: below it,
	// writes are refused with ErrDiskFull (OutOfDiskSpace) until space is
	// freed, so Pebble keeps room to flush and compact and a full disk
	// never fails the log. Default 128 MiB; negative turns the check off.
	// Filesystems that cannot tell their free space are not checked.
	MinFreeBytes int64
	// CacheSize is the block cache size in bytes. Default: as WiredTiger,
	// the larger of half of (machine memory − 1 GiB) and 256 MiB
	// (DefaultCacheSize).
	CacheSize int64
	// DocumentCacheSize is the part of CacheSize that caches whole
	// documents for point reads (doccache.go, invariant "Document cache
	// bounded"); Pebble's block cache gets the rest. 0: the default,
	// DefaultDocumentCacheSize (an eighth, at most 1 GiB); negative: no
	// document cache. At most half of CacheSize.
	DocumentCacheSize int64
	// Logger receives storage events. Default: slog.Default().
	Logger *slog.Logger
	// Hooks observe committed and failed groups (may be nil).
	Hooks *Hooks
	// Clock issues the cluster times of commit groups ([Txn.Tick]).
	// Default: a clock of its own on the system's wall clock. The store
	// raises it at open to the highest time a committed group used
	// (invariant "Cluster time survives restart").
	Clock *hlc.Clock
	// FailPoints holds the named fail points of this store's server
	// (failpoint.StorageFailBeforeCommit, StorageFailAfterCommit). Default:
	// a registry of its own.
	FailPoints *failpoint.Registry

	// flushEnd, when set, is Pebble's FlushEnd listener (a store's
	// unflushed set; the bench's floor listens to nothing).
	flushEnd func(pebble.FlushInfo)
}

// DB is an open Cairn store: Pebble plus the commit pipeline.
type DB struct {
	pdb      *pebble.DB
	opts     Options
	pipe     *pipeline
	visible  visibility                 // "Shared view current" (shared_view.go)
	shared   atomic.Pointer[sharedView] // transactions' shared snapshot
	wal      *walFS                     // interval mode only
	stopSync chan struct{}
	syncDone sync.WaitGroup

	// lastSync is when the last completed periodic log sync started
	// (interval mode; see SyncedBefore).
	syncMu   sync.Mutex
	lastSync time.Time

	// open tracks iterators and snapshots so Close can release any a caller
	// leaked (an abandoned client cursor) instead of Pebble failing on them.
	openMu sync.Mutex
	open   map[io.Closer]struct{}

	// lastCommitted is the highest cluster time used by an acknowledged
	// group (LastCommitted).
	lastCommitted atomic.Uint64

	// intents are the keys open transactions wrote (transaction.go).
	intents intents

	closeOnce sync.Once
	closeErr  error

	// writes is held shared by every Write and exclusively while writes
	// are locked (LockWrites, for fsync's lock).
	writes sync.RWMutex

	// applyNoted is ApplyReplicated's set of the cached documents its
	// group changes (applyRefreshSet), reused from group to group.
	applyNoted map[uint64]uint32
}

// withDefaults fills in the defaults of the options left zero.
func (opts Options) withDefaults() (Options, error) {
	if opts.FS == nil {
		opts.FS = vfs.Default
	}
	if opts.CacheSize == 0 {
		opts.CacheSize = DefaultCacheSize(MachineMemory())
	}
	switch {
	case opts.DocumentCacheSize == 0:
		opts.DocumentCacheSize = DefaultDocumentCacheSize(opts.CacheSize)
	case opts.DocumentCacheSize < 0:
		opts.DocumentCacheSize = 0
	case opts.DocumentCacheSize > opts.CacheSize/2:
		return opts, fmt.Errorf("storage: a document cache of %d MiB is more than half the cache of %d MiB", opts.DocumentCacheSize>>20, opts.CacheSize>>20)
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.MinFreeBytes == 0 {
		opts.MinFreeBytes = defaultMinFreeBytes
	}
	return opts, nil
}

// pebbleFS is the filesystem Pebble is opened on: tables are written in
// large writes (invariant "Tables written in large writes",
// tablewrite.go) and the log ahead of its writer (invariant "Log syncs
// overwrite", logahead.go).
func pebbleFS(fs vfs.FS) vfs.FS {
	fs = newTableFS(fs)
	if logAhead {
		return newAheadFS(fs)
	}
	return fs
}

// OpenPebble opens Pebble alone in dir exactly as Open opens a store's
// Pebble — the same options (pebbleOptions: memtables, filters,
// compression, spans), the same block cache size and the same log
// filesystem (aheadFS), from the same defaults — with no store on top: no
// commit pipeline, no format marker, no keyspaces. It is the bench's Pebble
// floor (package bench), so that the floor is the engine as Cairn
// configures it (invariant "The floor's Pebble is the store's",
// TestOpenPebbleOptionsAreTheStores). opts.SyncInterval must be 0: a
// writer that wants interval durability writes with pebble.NoSync.
func OpenPebble(dir string, opts Options) (*pebble.DB, error) {
	if opts.SyncInterval != 0 {
		return nil, errors.New("storage: OpenPebble has no sync interval: write with pebble.NoSync instead")
	}
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	opts.FS = pebbleFS(opts.FS)
	return openPebble(dir, opts)
}

// Open opens or creates the store in dir.
func Open(dir string, opts Options) (db *DB, err error) {
	opts, err = opts.withDefaults()
	if err != nil {
		return nil, err
	}
	var wal *walFS
	popts := opts
	popts.FS = pebbleFS(opts.FS)
	if opts.SyncInterval > 0 {
		// Every commit still asks Pebble for a sync, which returns once the
		// log record is written; the real sync comes from syncLoop.
		wal = newWALFS(popts.FS)
		popts.FS = wal
	}
	unf := newUnflushed()
	popts.flushEnd = unf.flushEnd
	pdb, err := openPebble(dir, popts)
	if err != nil {
		return nil, err
	}
	if unf.fresh, err = checkFormat(pdb, dir); err != nil {
		_ = pdb.Close()
		return nil, err
	}
	if opts.Clock == nil {
		opts.Clock = hlc.NewClock(nil, 0)
	}
	floor, err := readClusterTime(pdb, dir)
	if err != nil {
		_ = pdb.Close()
		return nil, err
	}
	opts.Clock.Restore(floor)
	db = &DB{pdb: pdb, opts: opts, wal: wal, open: map[io.Closer]struct{}{}, lastSync: time.Now()}
	if opts.DocumentCacheSize > 0 {
		db.visible.docs = newDocCache(opts.DocumentCacheSize)
	}
	db.lastCommitted.Store(uint64(floor))
	if opts.FailPoints == nil {
		opts.FailPoints = failpoint.NewRegistry(uint64(time.Now().UnixNano()))
	}
	db.opts.FailPoints = opts.FailPoints
	db.pipe = startPipeline(pdb, &db.visible, opts.Hooks, opts.Logger, opts.FailPoints, newSpaceCheck(opts.FS, dir, opts.MinFreeBytes), groupBytes(memTableSize(opts.CacheSize)))
	db.pipe.clock, db.pipe.lastCommitted = opts.Clock, &db.lastCommitted
	db.pipe.held = &db.intents
	db.pipe.unf = unf
	if wal != nil {
		db.stopSync = make(chan struct{})
		db.syncDone.Add(1)
		go db.syncLoop(opts.SyncInterval)
	}
	return db, nil
}

// openPebble opens Pebble, turning its lock and corruption failures (and any
// panic while reading a damaged directory) into errors that say what to do.
func openPebble(dir string, opts Options) (pdb *pebble.DB, err error) {
	defer func() {
		if r := recover(); r != nil {
			pdb, err = nil, fmt.Errorf("%w: %s: %v", ErrCorrupt, dir, r)
		}
	}()
	cache := pebble.NewCache(opts.CacheSize - opts.DocumentCacheSize)
	defer cache.Unref()
	pdb, err = pebble.Open(dir, pebbleOptions(opts, cache))
	switch {
	case err == nil:
		return pdb, nil
	case errors.Is(err, syscall.EWOULDBLOCK), errors.Is(err, syscall.EAGAIN),
		strings.Contains(err.Error(), "lock held by current process"):
		return nil, fmt.Errorf("%w: %s (stop the other cairn process or choose another data directory)", ErrLocked, dir)
	case errors.Is(err, os.ErrPermission):
		return nil, fmt.Errorf("storage: cannot open %s: %w", dir, err)
	default:
		return nil, fmt.Errorf("%w: %s: %v (restore it from a backup, or move it aside to start empty)", ErrCorrupt, dir, err)
	}
}

// bloomBitsPerKey sizes the per-table bloom filters (about a 1% false
// positive rate, ~1.2 bytes per key).
const bloomBitsPerKey = 10

// pebbleOptions are Cairn's Pebble settings.
//
// Tables never straddle two keyspace objects (invariant "One object per
// table"): flushes and compactions end a table where a collection's
// documents, an index, the catalog or the system records end. Without it the
// newest documents of a collection always fall inside the key range of some
// table that also holds keys sorting after them (the next collection, an
// index, the catalog), so an append-only load (rising _ids, the point of
// sequential ids) could never move its tables down the LSM as they are: each
// one had to be merged with that straddling table, rewriting the whole
// collection once more into the last level, and that work arrived in the
// later part of a long load. It is the layout that a storage engine with a
// file per collection and per index has by construction.
//
// Bloom filters serve point reads of keys that do not exist, above all the
// uniqueness read of an insert whose _id is not above its collection's last
// one (random ids, client ids): without them such a read searches an index
// and a data block of every table whose key range covers the key.
func pebbleOptions(opts Options, cache *pebble.Cache) *pebble.Options {
	popts := &pebble.Options{
		FS:                 opts.FS,
		Cache:              cache,
		FormatMajorVersion: pebble.FormatNewest,
		Logger:             quietLogger{opts.Logger},
		MemTableSize:       memTableSize(opts.CacheSize),
	}
	for i := range popts.Levels {
		popts.Levels[i].FilterPolicy = bloom.FilterPolicy(bloomBitsPerKey)
		popts.Levels[i].Compression = levelCompression(i)
	}
	popts.Experimental.SpanPolicyFunc = func(start []byte) (pebble.SpanPolicy, []byte, error) {
		return spanPolicy(start), keyspaceEnd(start), nil
	}
	popts.Experimental.ValueSeparationPolicy = func() pebble.ValueSeparationPolicy { return oplogValueSeparation }
	if opts.flushEnd != nil {
		popts.EventListener = &pebble.EventListener{FlushEnd: opts.flushEnd}
	}
	return popts
}

// spanPolicy is the policy of the keyspace object that starts at start:
// the oplog's values are separated into blob files (oplogValueSeparation),
// every other keyspace keeps its values in its tables.
func spanPolicy(start []byte) pebble.SpanPolicy {
	if len(start) > 0 && start[0] == SpaceOplog {
		return pebble.SpanPolicy{}
	}
	return pebble.SpanPolicy{ValueStoragePolicy: pebble.ValueStorageLowReadLatency}
}

// oplogValueSeparation writes the oplog's entries, from the flush that
// first writes them, into blob files of their own, and the oplog's tables
// hold only keys and references to them (invariant "Oplog values written
// once"). An insert's entry repeats its document (MongoDB's o), so the
// oplog is half of what a load flushes; its keys rise, so its tables never
// overlap one another, but an L0 compaction into an empty base level
// (Pebble's growL0ForBase takes every L0 table up to the base level's
// neighbours) took the oplog's tables along with the documents' and
// rewrote them: 43 % of the bytes the first compactions of a
// 100,000-record load rewrote (BENCHMARKS.md, load16). With the entries
// in blob files such a compaction rewrites only the references. Blob
// files are not rewritten by compactions (only to reclaim space: when a
// fifth of one is no longer referenced and it is older than five
// minutes), so a trimmed oplog's space returns as whole blob files lose
// their last reference. Documents, indexes and everything else keep their
// values in their tables (ValueStorageLowReadLatency): a point read of a
// document never takes a second read in a blob file. Entries under 256
// bytes stay in their tables.
var oplogValueSeparation = pebble.ValueSeparationPolicy{
	Enabled:               true,
	MinimumSize:           256,
	MaxBlobReferenceDepth: 10,
	RewriteMinimumAge:     5 * time.Minute,
	TargetGarbageRatio:    0.2,
}

// memTableSize is the memtable size for a block cache of cacheSize bytes: a
// sixteenth of it, from Pebble's default of 4 MiB up to 64 MiB (16 MiB for
// the smallest default cache, 64 MiB from a 1 GiB cache on). Pebble reserves
// the memory of its memtables (at most two before writes stall) in the block
// cache, so they never take more than an eighth of it from cached blocks,
// and the process's memory stays within the cache size. A larger memtable
// absorbs the rewrites of hot documents (YCSB's zipfian updates) before they
// reach a table, and each update carries an oplog entry as well: with 4 MiB
// (a few thousand updates) the store flushed several times a second and
// every flush of keys spread over the collection meant a compaction with
// its base level.
func memTableSize(cacheSize int64) uint64 {
	return uint64(min(max(cacheSize/16, 4<<20), 64<<20))
}

// uncompressedLevels is how many levels from L0 on store blocks uncompressed.
const uncompressedLevels = 2

// levelCompression is the block compression of level i. L0 and L1 hold the
// newest, soonest rewritten data: compressing it only to decompress it at
// the next compaction costs CPU on every write and saves little space, so
// they store blocks as they are. Deeper levels, which hold most of the data
// for longest, compress data blocks adaptively (adaptiveCompression).
func levelCompression(i int) func() *sstable.CompressionProfile {
	if i < uncompressedLevels {
		return func() *sstable.CompressionProfile { return sstable.NoCompression }
	}
	return func() *sstable.CompressionProfile { return adaptiveCompression }
}

// adaptiveCompression compresses a data block with Pebble's fastest
// algorithm (MinLZ on amd64, Snappy on arm64) only while that pays: Pebble's
// adaptive compressor tries it on one block in ten (and on the first) and
// keeps an average of what it saved, and below 12% stores the other blocks
// as they are without trying. A block that shrinks less than 12% is stored
// uncompressed as well. Documents of random or already compressed values
// then cost no compression on every compaction that rewrites them (YCSB's
// records did: MinLZ was 40% of the compactions' CPU under YCSB-A and
// stored almost every block uncompressed anyway). Index and other blocks
// are small and stored uncompressed.
var adaptiveCompression = &sstable.CompressionProfile{
	Name:                           "CairnAdaptive",
	DataBlocks:                     sstable.FastestCompression.DataBlocks,
	ValueBlocks:                    sstable.FastestCompression.ValueBlocks,
	OtherBlocks:                    sstable.NoCompression.OtherBlocks,
	MinReductionPercent:            12,
	AdaptiveReductionCutoffPercent: 12,
}

// checkFormat writes the format marker into a new store (fresh) and
// refuses a non-empty store that lacks it.
func checkFormat(pdb *pebble.DB, dir string) (fresh bool, err error) {
	key := SystemKey("format")
	val, closer, err := pdb.Get(key)
	if err == nil {
		defer closer.Close()
		if string(val) != formatMarker {
			return false, fmt.Errorf("%w: %s has format %q, this build reads %q", ErrNotCairn, dir, val, formatMarker)
		}
		return false, nil
	}
	if !errors.Is(err, pebble.ErrNotFound) {
		return false, fmt.Errorf("%w: %s: %v", ErrCorrupt, dir, err)
	}
	it, err := pdb.NewIter(nil)
	if err != nil {
		return false, fmt.Errorf("%w: %s: %v", ErrCorrupt, dir, err)
	}
	empty := !it.First()
	iterErr := it.Close()
	if iterErr != nil {
		return false, fmt.Errorf("%w: %s: %v", ErrCorrupt, dir, iterErr)
	}
	if !empty {
		return false, fmt.Errorf("%w: %s holds a Pebble store without Cairn's format marker", ErrNotCairn, dir)
	}
	return true, pdb.Set(key, []byte(formatMarker), pebble.Sync)
}

// clusterTimeKey holds the highest cluster time a committed group used,
// written in that group's batch.
var clusterTimeKey = SystemKey("clusterTime")

// readClusterTime returns the highest cluster time a committed group used
// (zero for a new store).
func readClusterTime(pdb *pebble.DB, dir string) (hlc.Timestamp, error) {
	val, closer, err := pdb.Get(clusterTimeKey)
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("%w: %s: %v", ErrCorrupt, dir, err)
	}
	defer closer.Close()
	ts, ok := hlc.FromBinary(val)
	if !ok {
		return 0, fmt.Errorf("%w: %s: cluster time record is %d bytes, want 8", ErrCorrupt, dir, len(val))
	}
	return ts, nil
}

// Clock is the store's cluster time clock (Options.Clock).
func (db *DB) Clock() *hlc.Clock { return db.opts.Clock }

// LastCommitted is the highest cluster time used by a commit group that is
// durable and acknowledged (or, after a restart, recovered): a read that
// starts now sees every change stamped at or below it.
func (db *DB) LastCommitted() hlc.Timestamp { return hlc.Timestamp(db.lastCommitted.Load()) }

// syncLoop makes the write-ahead log durable every interval when commits are
// acknowledged without a sync.
func (db *DB) syncLoop(every time.Duration) {
	defer db.syncDone.Done()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-db.stopSync:
			return
		case <-t.C:
			db.syncWAL()
		}
	}
}

// syncWAL makes every log record written so far durable (interval mode).
// A failed sync stops writes: the OS may have dropped the pages it could
// not write, so acknowledged writes may be lost already and the log is not
// trusted with more (invariant "Stop on a failed log").
func (db *DB) syncWAL() {
	if db.Stopped() != nil {
		return // said once already; the disk is not retried
	}
	start := time.Now()
	if err := db.wal.syncAll(); err != nil {
		db.opts.Logger.Error("periodic log sync failed; writes stopped", "err", err)
		db.pipe.stopWrites(err)
		return
	}
	db.syncMu.Lock()
	if start.After(db.lastSync) { // SyncNow may race the loop
		db.lastSync = start
	}
	db.syncMu.Unlock()
}

// SyncNow makes every write acknowledged so far durable before it returns,
// so a write concern that asks for the journal (j: true, fsync: true) gets
// it in the interval mode too. With SyncAlways every acknowledged write is
// durable already and it returns at once. The error is the one writes get
// once a sync has failed ("Stop on a failed log").
func (db *DB) SyncNow() error {
	if db.wal != nil {
		db.syncWAL()
	}
	return db.Stopped()
}

// SyncedBefore is a moment before which every acknowledged write is durable
// (survives a power cut): now with SyncAlways, the start of the last
// completed periodic log sync in the interval mode.
func (db *DB) SyncedBefore() time.Time {
	if db.wal == nil {
		return time.Now()
	}
	db.syncMu.Lock()
	defer db.syncMu.Unlock()
	return db.lastSync
}

// Stopped is the error every write gets since the disk failed the log, or
// nil while writes are accepted.
func (db *DB) Stopped() error {
	if e := db.pipe.halted.Load(); e != nil {
		return e
	}
	return nil
}

// Close stops the pipeline (waiting for queued writes), syncs and closes Pebble.
func (db *DB) Close() error {
	db.closeOnce.Do(func() {
		db.pipe.stop()
		db.releaseShared()
		db.releaseLeaked()
		if db.stopSync != nil {
			close(db.stopSync)
			db.syncDone.Wait()
		}
		if db.Stopped() == nil {
			// Pebble treats a failed sync here as fatal: skip it once the
			// log failed (Close below reports the log's error).
			if err := db.pdb.LogData(nil, pebble.Sync); err != nil {
				db.closeErr = err
			}
		}
		if err := db.pdb.Close(); err != nil && db.closeErr == nil {
			db.closeErr = err
		}
	})
	return db.closeErr
}

// Write submits fn to the commit pipeline and waits until the group holding
// it is committed (see the package comment for the guarantees).
func (db *DB) Write(fn func(*Txn) error) error {
	db.writes.RLock()
	defer db.writes.RUnlock()
	return db.pipe.submit(fn)
}

// LockWrites waits for the writes in progress to be acknowledged, then
// holds every new Write until UnlockWrites, and flushes the memtable to
// sorted tables, so the data directory needs no log replay (fsync's
// lock: true). Reads go on. Compactions may still rewrite tables while
// writes are locked: a filesystem snapshot of the directory is
// consistent, a file-by-file copy is not guaranteed to be (take a
// checkpoint instead).
func (db *DB) LockWrites() error {
	db.writes.Lock()
	if err := db.pdb.Flush(); err != nil {
		db.writes.Unlock()
		return err
	}
	return nil
}

// UnlockWrites lets the writes held by LockWrites go on.
func (db *DB) UnlockWrites() { db.writes.Unlock() }

// Get appends the committed value of key to dst. found is false when the key
// does not exist. A document's key (SpaceDocument) is read through the
// document cache (doccache.go); snapshots, transactions, iterators and
// requests read Pebble.
func (db *DB) Get(dst, key []byte) (val []byte, found bool, err error) {
	if invariants.Enabled {
		db.pipe.checkNotInRequest("Get")
	}
	if c := db.visible.docs; c != nil && len(key) > 0 && key[0] == SpaceDocument {
		return db.getCached(c, dst, key) // invariant "Document cache exact"
	}
	return get(db.pdb, dst, key)
}

// track registers an open iterator or snapshot; untrack forgets it.
func (db *DB) track(c io.Closer) {
	db.openMu.Lock()
	db.open[c] = struct{}{}
	db.openMu.Unlock()
}

func (db *DB) untrack(c io.Closer) {
	db.openMu.Lock()
	delete(db.open, c)
	db.openMu.Unlock()
}

// releaseLeaked closes iterators and snapshots still open at Close.
func (db *DB) releaseLeaked() {
	db.openMu.Lock()
	leaked := db.open
	db.open = map[io.Closer]struct{}{}
	db.openMu.Unlock()
	if len(leaked) > 0 {
		db.opts.Logger.Warn("closing iterators left open at shutdown", "count", len(leaked))
	}
	for c := range leaked {
		switch v := c.(type) {
		case *Iter:
			if invariants.Enabled {
				db.opts.Logger.Warn("iterator left open", "opened", v.cc.Origin())
			}
			_ = v.release()
		case *Snapshot:
			if invariants.Enabled {
				db.opts.Logger.Warn("snapshot left open", "opened", v.cc.Origin())
			}
			_ = v.snap.Close()
		}
	}
}

// Snapshot is a consistent read-only view of the store at one moment.
type Snapshot struct {
	db   *DB
	cc   invariants.CloseChecker // "Closed once"; empty without the invariants tag
	snap *pebble.Snapshot
}

// NewSnapshot returns a view of everything committed so far. Close it when done.
func (db *DB) NewSnapshot() *Snapshot {
	if invariants.Enabled {
		db.pipe.checkNotInRequest("NewSnapshot")
	}
	s := &Snapshot{db: db, snap: db.pdb.NewSnapshot()}
	if invariants.Enabled {
		s.cc.Opened()
	}
	db.track(s)
	return s
}

// Get appends the value of key at the snapshot to dst.
func (s *Snapshot) Get(dst, key []byte) ([]byte, bool, error) { return get(s.snap, dst, key) }

// NewIter iterates keys in [lower, upper) as of the snapshot.
func (s *Snapshot) NewIter(lower, upper []byte) (*Iter, error) {
	return s.db.newIter(s.snap.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper}))
}

// Close releases the snapshot.
func (s *Snapshot) Close() error {
	if invariants.Enabled {
		s.cc.Close("storage.Snapshot")
	}
	s.db.untrack(s)
	return s.snap.Close()
}

// NewIter iterates the committed keys in [lower, upper); the iterator sees a
// consistent point-in-time view taken now.
func (db *DB) NewIter(lower, upper []byte) (*Iter, error) {
	if invariants.Enabled {
		db.pipe.checkNotInRequest("NewIter")
	}
	return db.newIter(db.pdb.NewIter(&pebble.IterOptions{LowerBound: lower, UpperBound: upper}))
}

func (db *DB) newIter(it *pebble.Iterator, err error) (*Iter, error) {
	if err != nil {
		return nil, err
	}
	i := &Iter{db: db, it: it}
	if invariants.Enabled {
		i.cc.Opened()
	}
	db.track(i)
	return i, nil
}

// Flush writes the memtable to sorted files (used by tests and benchmarks).
func (db *DB) Flush() error { return db.pdb.Flush() }

// Pebble exposes the underlying store for diagnostics and benchmarks.
func (db *DB) Pebble() *pebble.DB { return db.pdb }

// CacheCapacity is the cache's size in bytes (Options.CacheSize): the
// block cache's and the document cache's together.
func (db *DB) CacheCapacity() int64 { return db.opts.CacheSize }

// BlockCacheCapacity is Pebble's block cache's size in bytes: the cache
// less the document cache's share.
func (db *DB) BlockCacheCapacity() int64 { return db.opts.CacheSize - db.opts.DocumentCacheSize }

// DocumentCacheCapacity is the document cache's size in bytes (0: none).
func (db *DB) DocumentCacheCapacity() int64 { return db.opts.DocumentCacheSize }

// FailPoints is the store's fail point registry.
func (db *DB) FailPoints() *failpoint.Registry { return db.opts.FailPoints }

type getter interface {
	Get(key []byte) ([]byte, io.Closer, error)
}

func get(r getter, dst, key []byte) ([]byte, bool, error) {
	v, closer, err := r.Get(key)
	if errors.Is(err, pebble.ErrNotFound) {
		return dst, false, nil
	}
	if err != nil {
		return dst, false, err
	}
	dst = append(dst, v...)
	return dst, true, closer.Close()
}

// quietLogger routes Pebble's informational chatter to debug level.
type quietLogger struct{ l *slog.Logger }

func (q quietLogger) Infof(format string, args ...any) {
	q.l.Debug(fmt.Sprintf(format, args...), "component", "pebble")
}
func (q quietLogger) Errorf(format string, args ...any) {
	q.l.Error(fmt.Sprintf(format, args...), "component", "pebble")
}
func (q quietLogger) Fatalf(format string, args ...any) {
	q.l.Error(fmt.Sprintf(format, args...), "component", "pebble")
	os.Exit(70) // Pebble only calls Fatalf when continuing could lose data.
}

// SyncApplied makes every group ApplyReplicated applied so far durable in
// the store's own log before it returns (ApplyReplicated writes without a
// sync: the Raft log is the durable copy). A replica set member calls it
// after a group that changed its configuration, so that a power cut of
// every member cannot take the configuration — the members' addresses —
// from all of them at once (TestSyncAppliedSurvivesPowerCut).
func (db *DB) SyncApplied() error {
	if e := db.pipe.halted.Load(); e != nil {
		return e
	}
	return db.pdb.LogData(nil, pebble.Sync)
}

// appliedKey records the replicated log index of the last group applied by
// ApplyReplicated, in the same batch as the group's writes.
var appliedKey = SystemKey("replApplied")

// appliedRecordRoom is what ApplyReplicated's batch needs beyond a
// group's records for the applied index: Pebble's reservation for a Set
// of appliedKey and an 8-byte value (invariant "Replicated groups copied
// once", TestApplyReplicatedCopiesOnce).
var appliedRecordRoom = 1 + 2*binary.MaxVarintLen32 + len(appliedKey) + 8

// ApplyReplicated applies a replicated commit group — the batch
// representation a primary's Hooks.Replicate was handed — to the store,
// with the log index it was committed at, in one atomic batch (invariant
// "Replicated in order"). It does not sync: the replicated log is durable
// already, and a member restarted after a crash replays it from
// AppliedIndex. It must not run concurrently with a commit of the
// pipeline (a replica set member's pipeline commits nothing itself), nor
// with another ApplyReplicated. The documents it sets that were cached
// are cached at their new value after it (changeRefreshing, "keep cached
// what was cached"), so a document read, then updated, is read from the
// cache again on every member, as on a standalone store.
func (db *DB) ApplyReplicated(index uint64, repr []byte) error {
	if e := db.pipe.halted.Load(); e != nil {
		return e
	}
	prev := db.LastCommitted()
	b, ts, err := db.replicatedBatch(index, repr)
	defer b.Close()
	if err != nil {
		return err
	}
	db.pipe.unf.off.Store(true) // "Unflushed documents known": a member's writes are not noted
	apply := func() error { return db.pdb.Apply(b, pebble.NoSync) }
	if err := db.visible.changeRefreshing(repr, apply, db.applyRefreshSet()); err != nil {
		db.pipe.stopWrites(err)
		return err
	}
	db.followClusterTime(ts)
	if h := db.opts.Hooks; h != nil && h.Applied != nil && len(repr) > 0 {
		h.Applied(prev, db.LastCommitted(), func(space byte, fn func(k, v []byte)) {
			// The caller's repr, not b's: Pebble takes a large batch's
			// records (a flushable batch) and leaves b empty.
			for r := batchrepr.Read(repr); ; {
				kind, k, v, ok, err := r.Next()
				if err != nil || !ok {
					return // read once above without an error
				}
				if kind == pebble.InternalKeyKindSet && len(k) > 0 && k[0] == space {
					fn(k, v)
				}
			}
		})
	}
	return nil
}

// replicatedBatch is the batch ApplyReplicated applies: the group's
// records repr, copied once (invariant "Replicated groups copied once":
// the copy has the room Pebble reserves for the applied index's record,
// so that record's Set does not copy the whole batch into a larger one),
// then the applied index; ts is the group's cluster time, if it took any
// (the primary sets it last), for followClusterTime without reading it
// back. The caller closes b, whatever err.
func (db *DB) replicatedBatch(index uint64, repr []byte) (b *pebble.Batch, ts hlc.Timestamp, err error) {
	b = db.pdb.NewBatch()
	if len(repr) > 0 {
		// The batch owns what SetRepr gets: a copy.
		if err := b.SetRepr(append(make([]byte, 0, len(repr)+appliedRecordRoom), repr...)); err != nil {
			return b, 0, fmt.Errorf("storage: replicated group %d: %w", index, err)
		}
		for r := b.Reader(); ; {
			kind, k, v, ok, err := r.Next()
			if err != nil {
				return b, 0, fmt.Errorf("storage: replicated group %d: %w", index, err)
			}
			if !ok {
				break
			}
			if kind == pebble.InternalKeyKindSet && bytes.Equal(k, clusterTimeKey) {
				ts, _ = hlc.FromBinary(v)
			}
		}
	}
	var v [8]byte
	binary.BigEndian.PutUint64(v[:], index)
	return b, ts, b.Set(appliedKey, v[:], nil)
}

// followClusterTime raises the clock and LastCommitted to ts, the cluster
// time a group applied from the replicated log carries (0: none), or a
// restored checkpoint holds: this member's clock and LastCommitted follow
// it, so a secondary's times and its afterClusterTime waits agree with the
// primary's.
func (db *DB) followClusterTime(ts hlc.Timestamp) {
	if ts != 0 {
		db.opts.Clock.Restore(ts)
		raiseTo(&db.lastCommitted, uint64(ts))
	}
}

// raiseTo raises v to at least x.
func raiseTo(v *atomic.Uint64, x uint64) {
	for {
		cur := v.Load()
		if x <= cur || v.CompareAndSwap(cur, x) {
			return
		}
	}
}

// AppliedIndex is the log index of the last group ApplyReplicated applied
// (0 if none).
func (db *DB) AppliedIndex() (uint64, error) {
	v, ok, err := db.Get(nil, appliedKey)
	if err != nil || !ok {
		return 0, err
	}
	if len(v) != 8 {
		return 0, fmt.Errorf("%w: applied index record of %d bytes", ErrCorrupt, len(v))
	}
	return binary.BigEndian.Uint64(v), nil
}

// SetPropose installs Hooks.Propose on an open store (a pipelined replica
// set member's; the store's owner sets Hooks.Publishes at Open). Call it from a request function
// (Write), on the pipeline goroutine that reads the hooks: every later
// group is proposed so.
func (db *DB) SetPropose(propose func(repr []byte, publishes, follows bool) func() error, room int) {
	if db.pipe.hooks == nil {
		db.pipe.hooks = &Hooks{}
	}
	db.pipe.hooks.Propose, db.pipe.hooks.ProposeRoom = propose, room
}

// SetLogBusy installs Hooks.LogBusy on an open store, as SetPropose
// does Hooks.Propose (from a request function).
func (db *DB) SetLogBusy(busy func() <-chan struct{}) {
	if db.pipe.hooks == nil {
		db.pipe.hooks = &Hooks{}
	}
	db.pipe.hooks.LogBusy = busy
}

// SetReplicate installs Hooks.Replicate on an open store. Call it from a
// request function (Write), on the pipeline goroutine that reads the hook:
// every later group is replicated.
func (db *DB) SetReplicate(fn func(repr []byte, publishes bool) error) {
	if db.pipe.hooks == nil {
		db.pipe.hooks = &Hooks{}
	}
	db.pipe.hooks.Replicate = fn
}
