package engine

import (
	"bytes"
	"sort"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/storage"
)

// WriteError is the failure of one document of a batch, by its position.
type WriteError struct {
	Index int
	Err   error
}

// GeneratedID is an _id the server made for the document at Index.
type GeneratedID struct {
	Index int
	ID    bsoncore.Value
}

// InsertResult reports a batch insert the way the insert command does.
type InsertResult struct {
	Inserted     int
	GeneratedIDs []GeneratedID
	WriteErrors  []WriteError
}

// Insert stores docs in ns, creating the collection if needed, in one commit
// (one sync). Each document is atomic on its own: a failing document leaves
// no trace, and with ordered the documents after it are not attempted, as
// MongoDB's ordered inserts do. The returned error is for failures of the
// whole request (an invalid namespace, a failed commit); per-document failures
// are in WriteErrors.
func (e *Engine) Insert(ns Namespace, docs []bsoncore.Document, ordered bool) (InsertResult, error) {
	return e.InsertWith(ns, docs, InsertOptions{Ordered: ordered})
}

// InsertOptions are the options of InsertWith.
type InsertOptions struct {
	// Ordered stops the batch at its first failing document.
	Ordered bool
	// BypassValidation skips the collection's validator
	// (bypassDocumentValidation).
	BypassValidation bool
	// Rider, when set, runs at the end of the insert's request with what
	// it stored; what it writes commits with the documents or not at all,
	// and its error fails the whole request (rider.go).
	Rider func(tx *storage.Txn, ride InsertRide) error
	// Session, when set, is written into the documents' oplog entries
	// (lsid, txnNumber, and each document's stmtId).
	Session *OplogSession
	// Txn, when set, makes the insert a statement of that transaction
	// (txn.go).
	Txn *Txn
}

// InsertRide is what an insert's Rider learns: the positions (in docs) of
// the documents stored, and the ids the server made among them.
type InsertRide struct {
	Stored    []int
	Generated []GeneratedID
}

// InsertWith is Insert with every option.
func (e *Engine) InsertWith(ns Namespace, docs []bsoncore.Document, opts InsertOptions) (InsertResult, error) {
	if err := refuseOplogWrite(ns); err != nil {
		return InsertResult{}, err
	}
	ordered := opts.Ordered
	var res InsertResult
	preps := make([]prepared, 0, len(docs))
	positions := make([]int, 0, len(docs))
	newID := e.idMaker(ns)
	for i, d := range docs {
		p, err := prepareInsert(d, newID)
		if err != nil {
			res.WriteErrors = append(res.WriteErrors, WriteError{Index: i, Err: err})
			if ordered {
				break
			}
			continue
		}
		preps = append(preps, p)
		positions = append(positions, i)
	}
	var stored []int // indexes into preps that were written
	if opts.Txn == nil && e.db.AnyPrepared() {
		idKeys := make([][]byte, len(preps))
		for j := range preps {
			idKeys[j] = preps[j].idKey
		}
		if err := e.waitPreparedDocs(nil, ns, nil, idKeys); err != nil { // prepare_conflicts.go
			return InsertResult{}, err
		}
	}
	before := len(res.WriteErrors) // the preparation's; a run again keeps them
	err := e.writeRerun(opts.Txn, ns, func(tx *storage.Txn) error {
		stored = stored[:0]
		res.WriteErrors = res.WriteErrors[:before]
		e.oplog.lastTS = 0
		coll, err := e.ensureCollection(tx, ns)
		if err != nil {
			return err
		}
		if opts.Session != nil {
			e.oplog.sess = opts.Session
			defer func() { e.oplog.sess = nil }()
		}
		if opts.Txn == nil {
			if err := e.prefetchIDs(tx, coll.ID, preps); err != nil {
				return err
			}
		}
		var key []byte
		for j, p := range preps {
			if s := opts.Session; s != nil && positions[j] < len(s.StmtIDs) {
				e.oplog.stmt = s.StmtIDs[positions[j]]
			}
			key = storage.DocKey(key[:0], coll.ID, p.idKey)
			if err := e.insertOne(tx, ns, coll.ID, key, p, opts.BypassValidation); err != nil {
				res.WriteErrors = append(res.WriteErrors, WriteError{Index: positions[j], Err: err})
				if ordered {
					break
				}
				continue
			}
			stored = append(stored, j)
		}
		if opts.Rider != nil {
			var ride InsertRide
			for _, j := range stored {
				ride.Stored = append(ride.Stored, positions[j])
				if preps[j].generated {
					ride.Generated = append(ride.Generated, GeneratedID{Index: positions[j], ID: preps[j].id})
				}
			}
			return opts.Rider(tx, ride)
		}
		return nil
	})
	if err != nil {
		return InsertResult{}, err
	}
	for _, j := range stored {
		res.Inserted++
		if preps[j].generated {
			res.GeneratedIDs = append(res.GeneratedIDs, GeneratedID{Index: positions[j], ID: preps[j].id})
		}
	}
	sort.Slice(res.WriteErrors, func(a, b int) bool { return res.WriteErrors[a].Index < res.WriteErrors[b].Index })
	if ordered && len(res.WriteErrors) > 1 {
		// A document that failed in the pipeline stopped the batch before a
		// later one whose preparation had failed: only the first error happened.
		res.WriteErrors = res.WriteErrors[:1]
	}
	return res, nil
}

// prefetchIDs reads, in one ascending pass, whether the store holds the
// document keys of preps that insertOne will check (those not above the
// collection's tail bound now: the bound only rises during the request,
// so a key above it now may still need a check, which then seeks alone).
// A batch of one document gains nothing and is left to Has.
func (e *Engine) prefetchIDs(tx *storage.Txn, collID uint64, preps []prepared) error {
	if len(preps) < 2 {
		return nil
	}
	var buf []byte
	ends := make([]int, 0, len(preps))
	for _, p := range preps {
		if p.absent {
			continue
		}
		start := len(buf)
		buf = storage.DocKey(buf, collID, p.idKey)
		beyond, err := e.tails.beyond(tx, collID, buf[start:])
		if err != nil {
			return err
		}
		if beyond {
			buf = buf[:start]
			continue
		}
		ends = append(ends, len(buf))
	}
	if len(ends) < 2 {
		return nil
	}
	keys := make([][]byte, len(ends))
	start := 0
	for i, end := range ends {
		keys[i] = buf[start:end:end]
		start = end
	}
	return tx.PrefetchHas(keys)
}

// insertOne writes one prepared document at key, and its index entries,
// inside tx: all or nothing. The document is validated first ("Valid on
// commit"), unless bypass.
func (e *Engine) insertOne(tx *storage.Txn, ns Namespace, collID uint64, key []byte, p prepared, bypass bool) error {
	if err := e.validateInsert(ns, p.doc, bypass); err != nil {
		return err
	}
	cappedID, lim, capped := e.cappedOfNS(ns)
	if capped {
		if err := checkCappedFits(lim, len(p.doc)); err != nil {
			return err
		}
	}
	inTxn := e.txn.in != nil
	beyond := false
	var err error
	if !inTxn { // a statement uses no bound (txn.go)
		if beyond, err = e.tails.beyond(tx, collID, key); err != nil {
			return err
		}
	}
	if !beyond && !p.absent {
		exists, err := tx.Has(key)
		if err != nil {
			return err
		}
		if exists {
			return duplicateIDError(ns, p.id)
		}
	}
	sp := tx.Savepoint()
	if ver, ok := e.versioningOfNS(ns); ok {
		// "History follows documents": the version field and the first
		// (or next, after a delete) version go in with the document.
		if p.doc, err = e.versionInsert(tx, ver, collID, p.idKey, p.doc); err != nil {
			tx.RollbackTo(sp)
			return err
		}
	}
	tx.Set(key, p.doc)
	if inTxn {
		e.txn.in.addInserted(tx, collID, key)
	} else {
		e.tails.raise(collID, key)
	}
	if err := e.indexInsert(tx, ns, p.doc, p.idKey); err != nil {
		tx.RollbackTo(sp)
		return err
	}
	if capped && cappedID == collID {
		// "Capped within limits": the oldest documents go in this request.
		if err := e.cappedInsert(tx, ns, collID, lim, p.idKey, len(p.doc)); err != nil {
			tx.RollbackTo(sp)
			return err
		}
	}
	e.logStored(tx, 'i', ns, p.doc, p.id) // "Change and entry commit together"
	return nil
}

// Replace replaces the document whose _id is id with doc. doc may omit _id
// (it is kept) but may not change it. matched is false when no document has id.
func (e *Engine) Replace(ns Namespace, id bsoncore.Value, doc bsoncore.Document) (matched bool, err error) {
	res, err := e.Modify(ns, []bsoncore.Value{id}, true, func(int, bsoncore.Document) (Action, error) {
		return Action{Replace: doc, Replacement: true}, nil
	})
	if err != nil {
		return false, err
	}
	if len(res.Errors) > 0 {
		return res.Matched > 0, res.Errors[0].Err
	}
	return res.Matched > 0, nil
}

// Delete removes the document whose _id is id; deleted reports whether there was one.
func (e *Engine) Delete(ns Namespace, id bsoncore.Value) (deleted bool, err error) {
	res, err := e.Modify(ns, []bsoncore.Value{id}, true, func(int, bsoncore.Document) (Action, error) {
		return Action{Delete: true}, nil
	})
	return res.Deleted > 0, err
}

// docTails holds, per collection id, a document key at or above every
// document key the collection has held: its tail bound. An insert whose key
// is above the bound cannot collide with a stored document, so it skips the
// uniqueness read. That is the common case of server-made ids (sequential
// ids and ObjectIds both rise) and of any client that numbers its documents
// in order; the read is a Pebble point lookup that costs about a quarter of
// an appending insert's CPU.
//
// Invariant "Tail bound": for every collection c in the map, no document
// key of c that exists (committed, or written by a request of the group
// being applied) is greater than last[c]. It holds because
//   - only insertOne, InstallHistories (a migration's recipient,
//     history_migrate.go) and putPlain (a server document of a plain
//     collection, rider.go), which load and raise the bound as insertOne
//     does, create document keys: Insert, upserts, Merge's
//     inserts and $out's temporary collection all go through it (Modify
//     rewrites or deletes keys it found, a replacement cannot change _id,
//     a rename keeps the collection's id and keys, index builds and TTL
//     passes write index entries or delete), and insertOne raises the
//     bound before anything else can see the key;
//   - a bound is first loaded from the collection's last key as the group
//     sees it, before the request adds any document of its own to c (the
//     load happens at the request's first insert into c). That order
//     matters: Txn.NewIter does not see the request's own writes;
//   - every other change only lowers the set of keys (deletes, dropping a
//     collection) or discards writes (a rolled-back document, a failed
//     request or group), which leaves the bound high: too high only costs a
//     read, never a missed duplicate;
//   - a bound is forgotten only between groups, for a collection the
//     committed catalog no longer holds (forgetDropped): no key of it is
//     left, and a later use loads it afresh.
//
// The map is used only on the commit pipeline's goroutine ("Serial apply"),
// so it needs no lock.
type docTails struct {
	last map[uint64][]byte
}

// beyond reports whether key, a document key of collection collID, is above
// the collection's tail bound, loading the bound on first use.
func (t *docTails) beyond(tx *storage.Txn, collID uint64, key []byte) (bool, error) {
	last, ok := t.last[collID]
	if !ok {
		var err error
		if last, err = lastDocKey(tx, collID); err != nil {
			return false, err
		}
		if t.last == nil {
			t.last = make(map[uint64][]byte)
		}
		t.last[collID] = last
	}
	return bytes.Compare(key, last) > 0, nil
}

// raise lifts collID's bound to key, just written.
func (t *docTails) raise(collID uint64, key []byte) {
	last := t.last[collID]
	if bytes.Compare(key, last) > 0 {
		t.last[collID] = append(last[:0], key...)
	}
}

// lastDocKey is the greatest document key of collID as the group sees it, or
// the collection's bare prefix (below all its keys) when it has none.
func lastDocKey(tx *storage.Txn, collID uint64) ([]byte, error) {
	prefix := storage.Prefix(nil, storage.SpaceDocument, collID)
	it, err := tx.NewIter(prefix, storage.PrefixEnd(prefix))
	if err != nil {
		return nil, err
	}
	last := prefix
	if it.Last() {
		last = append([]byte(nil), it.Key()...)
	}
	return last, it.Close()
}
