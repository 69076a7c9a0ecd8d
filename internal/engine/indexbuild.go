package engine

import (
	"context"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/catalog"
	"github.com/cairndb/cairn/internal/index"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/opctx"
	"github.com/cairndb/cairn/internal/storage"
)

// Index builds over existing documents.
//
// A build has three steps, each through the commit pipeline:
//
//  1. register: the new indexes join the catalog flagged Building, in the
//     createIndexes commit. From that commit on, every write maintains
//     them like any index (the planner must not read them yet).
//  2. scan: the documents are read in _id order in batches of at most
//     buildBatchDocs documents (or buildBatchBytes bytes), each batch one
//     pipeline request that adds the batch's entries. Between batches the
//     pipeline serves other writers; readers never wait (snapshots).
//  3. commit: one request clears Building.
//
// Invariant "Builds see current documents": a batch reads documents inside
// its pipeline request, so it indexes each document as it is at that
// moment. A document written after step 1 got its entries from the write
// itself; the batch that reaches it later sets the same entries again
// (idempotent), a document deleted before the scan reaches it is not seen,
// and one changed after its batch had its old entries removed by the write.
// So when the scan ends, every index holds exactly its documents' entries,
// with no side table of concurrent writes: the serial pipeline is the
// side table.
//
// Unique indexes: a write during the build is checked against the entries
// the index holds so far (MongoDB defers that check to the end of the
// build; Cairn's is stricter, never looser). A document whose key another
// document holds fails the build with 11000 and the build removes the
// indexes and all their entries, so nothing is left behind. While an index
// builds, the data may hold duplicates, so removing an entry of a unique
// index checks that it belongs to the document being changed (see
// removeEntries).

const (
	buildBatchDocs  = 1000
	buildBatchBytes = 4 << 20
	// buildLogEvery is how often a running build logs its progress.
	buildLogEvery = 10 * time.Second
	// buildMsg is the currentOp message of the scanning step, MongoDB's.
	buildMsg = "Index Build: scanning collection"
)

// IndexBuildTuning adjusts index builds, for tests and benchmarks.
type IndexBuildTuning struct {
	// BatchDocs caps documents per batch (0: the default, 1000).
	BatchDocs int
	// AfterBatch, when set, runs after each committed batch with the
	// documents scanned so far and the collection's count at the start.
	AfterBatch func(done, total int64)
}

// SetIndexBuildTuning changes how later index builds run.
func (e *Engine) SetIndexBuildTuning(t IndexBuildTuning) { e.buildTuning.Store(&t) }

// indexBuild is one running build of one or more indexes of a collection.
type indexBuild struct {
	e *Engine
	// ctx is the createIndexes operation's: when it ends (maxTimeMS,
	// killOp of the command or of the build, a client gone), the build is
	// aborted and its indexes removed, as MongoDB aborts a build whose
	// command is interrupted.
	ctx     context.Context
	ns      Namespace
	collID  uint64
	indexes []catalog.Index // as registered; matched by ID later
	command bsoncore.Document
	op      *Op
	done    int64
	total   int64
}

// run scans, commits, or on failure removes the build's indexes.
func (b *indexBuild) run() error {
	ctx, cancel := context.WithCancelCause(b.ctx)
	defer cancel(context.Canceled)
	b.ctx = ctx
	b.op = b.e.ops.Begin(OpInfo{Desc: "IndexBuildsCoordinatorMongod", Op: "command", NS: b.ns.String(), Command: b.command, Cancel: cancel})
	defer b.e.ops.End(b.op)
	began := time.Now()
	var err error
	b.total, err = b.e.countDocuments(b.collID)
	if err != nil {
		return b.fail(err)
	}
	b.op.SetProgress(buildMsg, 0, b.total)
	b.e.log.Info("index build: started", "ns", b.ns.String(), "indexes", b.names(), "documents", b.total)
	if err := b.scan(); err != nil {
		return b.fail(err)
	}
	if err := b.commit(); err != nil {
		return b.fail(err)
	}
	b.e.log.Info("index build: done", "ns", b.ns.String(), "indexes", b.names(), "documents", b.done,
		"durationMillis", time.Since(began).Milliseconds())
	return nil
}

// scan indexes the collection's documents, one batch per pipeline request.
func (b *indexBuild) scan() error {
	tuning := IndexBuildTuning{}
	if t := b.e.buildTuning.Load(); t != nil {
		tuning = *t
	}
	maxDocs := tuning.BatchDocs
	if maxDocs <= 0 {
		maxDocs = buildBatchDocs
	}
	prefix := storage.Prefix(nil, storage.SpaceDocument, b.collID)
	from, end := prefix, storage.PrefixEnd(prefix)
	lastLog := time.Now()
	for from != nil {
		if err := opctx.Err(b.ctx); err != nil {
			return err
		}
		var n int64
		var next []byte
		err := b.e.db.Write(func(tx *storage.Txn) error {
			var err error
			n, next, err = b.batch(tx, prefix, from, end, maxDocs)
			return err
		})
		if err != nil {
			return err
		}
		b.done += n
		b.op.SetProgress(buildMsg, b.done, max(b.total, b.done))
		if tuning.AfterBatch != nil {
			tuning.AfterBatch(b.done, b.total)
		}
		if time.Since(lastLog) >= buildLogEvery {
			lastLog = time.Now()
			b.e.log.Info("index build: progress", "ns", b.ns.String(), "indexes", b.names(), "done", b.done, "total", b.total)
		}
		from = next
	}
	return nil
}

// batch indexes up to maxDocs documents from key from on, inside tx. It
// returns how many it indexed and the key to continue from (nil: the end).
func (b *indexBuild) batch(tx *storage.Txn, prefix, from, end []byte, maxDocs int) (n int64, next []byte, err error) {
	one, err := b.building()
	if err != nil {
		return 0, nil, err
	}
	ns := Namespace{DB: one.DB, Coll: one.Name}
	it, err := tx.NewIter(from, end)
	if err != nil {
		return 0, nil, err
	}
	defer it.Close()
	var newly multikeyGrowth
	size := 0
	for ok := it.First(); ok; ok = it.Next() {
		if n >= int64(maxDocs) || size >= buildBatchBytes {
			return n, append([]byte(nil), it.Key()...), b.flag(tx, one, newly)
		}
		doc, err := it.Value()
		if err != nil {
			return 0, nil, err
		}
		idKey := append([]byte(nil), it.Key()[len(prefix):]...)
		entries, mk, err := b.e.entriesOf(one, doc, idKey)
		if err != nil {
			return 0, nil, err
		}
		if err := b.e.addEntries(tx, ns, entries, idKey); err != nil {
			return 0, nil, err
		}
		newly = newly.merge(mk)
		n++
		size += len(doc)
	}
	return n, nil, b.flag(tx, one, newly)
}

// flag records the multikey paths a batch added to the indexes of one.
func (b *indexBuild) flag(tx *storage.Txn, one *catalog.Collection, newly multikeyGrowth) error {
	return b.e.flagMultikey(tx, one, newly)
}

// building returns the collection (as the pipeline sees it now) carrying
// only the build's indexes, or IndexBuildAborted when the collection or one
// of the indexes was dropped meanwhile.
func (b *indexBuild) building() (*catalog.Collection, error) {
	coll := b.e.collectionByID(b.collID)
	if coll == nil {
		return nil, mongoerr.New(mongoerr.IndexBuildAborted, "Index build aborted: collection %s was dropped", b.ns)
	}
	one := *coll
	one.Indexes = make([]catalog.Index, 0, len(b.indexes))
	for _, want := range b.indexes {
		cur := coll.Index(want.Name)
		if cur == nil || cur.ID != want.ID {
			return nil, mongoerr.New(mongoerr.IndexBuildAborted, "Index build aborted: index %s of %s was dropped", want.Name, coll.Namespace())
		}
		one.Indexes = append(one.Indexes, *cur)
	}
	return &one, nil
}

// commit makes the built indexes ready.
func (b *indexBuild) commit() error {
	return b.e.db.Write(func(tx *storage.Txn) error {
		one, err := b.building()
		if err != nil {
			return err
		}
		for _, ix := range one.Indexes {
			ix.Building = false
			if err := b.e.cat.UpdateIndex(tx, one.DB, one.Name, ix); err != nil {
				return err
			}
		}
		return nil
	})
}

// fail removes whatever is left of the build's indexes and returns err.
func (b *indexBuild) fail(err error) error {
	b.e.log.Warn("index build: failed", "ns", b.ns.String(), "indexes", b.names(), "done", b.done, "err", err)
	aerr := b.e.db.Write(func(tx *storage.Txn) error {
		coll := b.e.collectionByID(b.collID)
		if coll == nil {
			return nil // dropped, and its indexes with it
		}
		for _, ix := range b.indexes {
			if cur := coll.Index(ix.Name); cur != nil && cur.ID == ix.ID {
				if err := b.e.cat.DropIndex(tx, coll.DB, coll.Name, ix.Name); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if aerr != nil {
		b.e.log.Error("index build: could not remove a failed build's indexes", "ns", b.ns.String(), "err", aerr)
	}
	return err
}

func (b *indexBuild) names() []string {
	out := make([]string, len(b.indexes))
	for i, ix := range b.indexes {
		out[i] = ix.Name
	}
	return out
}

// collectionByID finds a collection in the working catalog by id (a build
// follows its collection through a rename). Only inside a pipeline request.
func (e *Engine) collectionByID(id uint64) *catalog.Collection {
	for _, c := range e.cat.Working().Collections("") {
		if c.ID == id {
			return c
		}
	}
	return nil
}

// countDocuments counts a collection's documents in a snapshot, for a
// build's progress total.
func (e *Engine) countDocuments(collID uint64) (int64, error) {
	prefix := storage.Prefix(nil, storage.SpaceDocument, collID)
	it, err := e.db.NewIter(prefix, storage.PrefixEnd(prefix))
	if err != nil {
		return 0, err
	}
	var n int64
	for ok := it.First(); ok; ok = it.Next() {
		n++
	}
	return n, it.Close()
}

// createIndexesCommand is the command a build shows in currentOp.
func createIndexesCommand(ns Namespace, specs []*index.Spec) bsoncore.Document {
	arr := bsoncore.NewArrayBuilder()
	for _, s := range specs {
		arr.AppendDocument(s.Doc())
	}
	return bsoncore.NewDocumentBuilder().
		AppendString("createIndexes", ns.Coll).
		AppendArray("indexes", arr.Build()).
		AppendString("$db", ns.DB).
		Build()
}

// dropUnfinishedBuilds removes indexes a crash left building: their
// createIndexes was never acknowledged, so the client retries it. Called
// by Open before the first write is accepted.
func (e *Engine) dropUnfinishedBuilds() error {
	var dropped []string
	err := e.db.Write(func(tx *storage.Txn) error {
		dropped = dropped[:0]
		for _, c := range e.cat.Working().Collections("") {
			for _, ix := range c.Indexes {
				if ix.Building {
					if err := e.cat.DropIndex(tx, c.DB, c.Name, ix.Name); err != nil {
						return err
					}
					dropped = append(dropped, fmt.Sprintf("%s %s", c.Namespace(), ix.Name))
				}
			}
		}
		return nil
	})
	if err == nil && len(dropped) > 0 {
		e.log.Warn("index build: removed indexes whose build a shutdown interrupted", "indexes", dropped)
	}
	return err
}

// startIndexes prepares index state at Open: unfinished builds go, and the
// access counters of existing indexes start now (accesses.since).
func (e *Engine) startIndexes() error {
	if err := e.dropUnfinishedBuilds(); err != nil {
		return err
	}
	for _, c := range e.cat.Current().Collections("") {
		e.usage.counter(c.ID, e.now)
		for _, ix := range c.Indexes {
			e.usage.counter(ix.ID, e.now)
		}
	}
	return nil
}
