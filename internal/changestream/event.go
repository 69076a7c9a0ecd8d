package changestream

import (
	"math"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/docdiff"
	"github.com/cairndb/cairn/internal/hlc"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// Scope is what a stream watches: one collection (DB and Coll), one
// database (Coll ""), or the whole deployment (DB "").
type Scope struct{ DB, Coll string }

// internalDB reports the databases a whole-deployment stream leaves out.
func internalDB(db string) bool { return db == "admin" || db == "config" || db == "local" }

// wants reports whether the scope sees changes to db.coll.
func (sc Scope) wants(db, coll string) bool {
	system := strings.HasPrefix(coll, "system.")
	switch {
	case sc.DB == "":
		return !internalDB(db) && !system
	case db != sc.DB:
		return false
	case sc.Coll == "":
		return !system
	}
	return coll == sc.Coll
}

// position orders events: the entry's ts, the operation's index in its
// applyOps (0 otherwise), and an invalidate after the event causing it.
type position struct {
	ts  hlc.Timestamp
	idx int32
	inv bool
}

const maxIdx = math.MaxInt32

// before is the last position before an event's p.
func (p position) before() position {
	if p.idx > 0 {
		return position{ts: p.ts, idx: p.idx - 1, inv: true}
	}
	return position{ts: p.ts - 1, idx: maxIdx, inv: true}
}

func (p position) after(q position) bool {
	if p.ts != q.ts {
		return p.ts > q.ts
	}
	if p.idx != q.idx {
		return p.idx > q.idx
	}
	return p.inv && !q.inv
}

// event is one change event, ready to return.
type event struct {
	pos   position
	token bsoncore.Document
	doc   bsoncore.Document
	// invalidate ends the stream once returned.
	invalidate bool
}

// entry is what events are built from: one oplog entry, or one operation
// of an applyOps entry with its transaction's fields.
type entry struct {
	ts        hlc.Timestamp
	wall      bsoncore.Value
	idx       int32
	op        string
	db, coll  string
	ui        []byte
	o, o2     bsoncore.Document
	lsid      bsoncore.Document
	txnNumber bsoncore.Value
	inTxn     bool
}

// entryEvents appends the events the stream shows for one oplog entry.
func (s *Stream) entryEvents(dst []event, ts hlc.Timestamp, raw bsoncore.Document) ([]event, error) {
	e := entry{ts: ts, wall: raw.Lookup("wall")}
	fill(&e, raw)
	if e.op == "c" && e.coll == "$cmd" {
		if ops, ok := e.o.Lookup("applyOps").ArrayOK(); ok {
			// A transaction's commit: one event per operation, in order,
			// each with the transaction's lsid and txnNumber.
			vals, _ := ops.Values()
			lsid, _ := raw.Lookup("lsid").DocumentOK()
			txn := raw.Lookup("txnNumber")
			for i, v := range vals {
				d, ok := v.DocumentOK()
				if !ok {
					continue
				}
				in := entry{ts: ts, wall: e.wall, idx: int32(i), lsid: lsid, txnNumber: txn, inTxn: lsid != nil}
				fill(&in, d)
				var err error
				if dst, err = s.opEvents(dst, &in); err != nil {
					return dst, err
				}
			}
			return dst, nil
		}
	}
	return s.opEvents(dst, &e)
}

func fill(e *entry, d bsoncore.Document) {
	e.op, _ = d.Lookup("op").StringValueOK()
	ns, _ := d.Lookup("ns").StringValueOK()
	e.db, e.coll, _ = strings.Cut(ns, ".")
	if _, ui, ok := d.Lookup("ui").BinaryOK(); ok {
		e.ui = ui
	}
	e.o, _ = d.Lookup("o").DocumentOK()
	e.o2, _ = d.Lookup("o2").DocumentOK()
}

// opEvents appends one operation's events.
func (s *Stream) opEvents(dst []event, e *entry) ([]event, error) {
	switch e.op {
	case "i", "u", "d":
		if !s.scope.wants(e.db, e.coll) {
			return dst, nil
		}
		ev, err := s.crudEvent(e)
		if err != nil {
			return dst, err
		}
		return append(dst, ev), nil
	case "c":
		return s.commandEvents(dst, e)
	}
	return dst, nil // "n" and anything else: no event
}

// builder starts an event: _id (its token), operationType, clusterTime,
// wallTime and, with showExpandedEvents, collectionUUID; then the
// transaction's fields.
func (s *Stream) builder(e *entry, kind string, docKey bsoncore.Document, inv bool) (*evDoc, Token, bsoncore.Document) {
	t, tok := s.token(e, kind, docKey, inv)
	// Room for the fields every event has and the entry's documents, which
	// most events hold once (an insert's fullDocument, an update's diff as
	// its updatedFields); more (a post-image) grows the buffer.
	b := newEvDoc(256 + len(tok) + 2*len(docKey) + len(e.o) + len(e.lsid) + len(e.db) + len(e.coll))
	b.AppendDocument("_id", tok).AppendString("operationType", kind).AppendTimestamp("clusterTime", e.ts.T(), e.ts.I())
	if e.wall.Type == bsoncore.TypeDateTime {
		b.AppendValue("wallTime", e.wall)
	}
	if s.spec.ShowExpandedEvents && e.ui != nil && !inv {
		b.AppendBinary("collectionUUID", 4, e.ui)
	}
	if e.inTxn {
		b.AppendValue("txnNumber", e.txnNumber)
		b.AppendDocument("lsid", e.lsid)
	}
	return b, t, tok
}

// token is an event's resume token (t without its EventID, which is the
// stream's scratch buffer, and as a document).
func (s *Stream) token(e *entry, kind string, docKey bsoncore.Document, inv bool) (Token, bsoncore.Document) {
	// The eventIdentifier, {operationType, documentKey}, only to encode in
	// the token: built in the stream's scratch buffer.
	id := bsoncore.AppendStringElement(append(s.scratch[:0], 0, 0, 0, 0), "operationType", kind)
	if docKey != nil {
		id = bsoncore.AppendDocumentElement(id, "documentKey", docKey)
	}
	id = append(id, 0)
	bsoncore.UpdateLength(id, 0, int32(len(id)))
	s.scratch = id
	t := Token{ClusterTime: e.ts, TxnOpIndex: e.idx, FromInvalidate: inv, UUID: e.ui, EventID: id}
	var tok bsoncore.Document
	tok, s.ksScratch = t.docWith(s.ksScratch)
	t.EventID = nil // the scratch buffer is the next event's
	return t, tok
}

func nsDoc(db, coll string) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder().AppendString("db", db)
	if coll != "" {
		b.AppendString("coll", coll)
	}
	return b.Build()
}

func idDoc(d bsoncore.Document) bsoncore.Document {
	return bsoncore.NewDocumentBuilder().AppendValue("_id", d.Lookup("_id")).Build()
}

// crudEvent is an insert, update, replace or delete.
func (s *Stream) crudEvent(e *entry) (event, error) {
	kind := "insert"
	switch e.op {
	case "u":
		kind = "update"
	case "d":
		kind = "delete"
	}
	var diff bsoncore.Document
	if e.op == "u" {
		if d, ok := e.o.Lookup("diff").DocumentOK(); ok && e.o.Lookup("$v").Type != 0 {
			diff = d
		} else {
			kind = "replace"
		}
	}
	key := e.o2
	if e.op != "u" {
		key = idDoc(e.o)
	}
	if !s.keep.keeps(kind) || s.head != nil && !s.headMatches(kind, e, key) {
		// The stream's $match drops it: only its position and token.
		t, tok := s.token(e, kind, key, false)
		return event{pos: t.pos(), token: tok}, nil
	}
	b, t, tok := s.builder(e, kind, key, false)
	if !t.pos().after(s.skip) {
		// An event at or before the resume point, read again only to find
		// the point: it is not returned, so nothing is looked up for it (a
		// required image it lacks must not fail the stream).
		return event{pos: t.pos(), token: tok, doc: b.Build()}, nil
	}
	var pre bsoncore.Document
	var preFound bool
	if kind != "insert" && (s.spec.FullDocumentBeforeChange != "off" || diff != nil && (s.spec.FullDocument == "whenAvailable" || s.spec.FullDocument == "required")) {
		var err error
		if pre, preFound, err = s.log.PreImage(e.db, e.coll, e.ui, e.ts, e.idx); err != nil {
			return event{}, err
		}
	}
	switch kind {
	case "insert", "replace":
		b.AppendDocument("fullDocument", e.o)
	case "update":
		switch s.spec.FullDocument {
		case "updateLookup":
			doc, found, err := s.log.Lookup(e.db, e.coll, key.Lookup("_id"))
			if err != nil {
				return event{}, err
			}
			appendDocOrNull(b, "fullDocument", doc, found)
		case "whenAvailable", "required":
			var post bsoncore.Document
			if preFound {
				var err error
				if post, err = docdiff.Apply(pre, diff); err != nil {
					return event{}, err
				}
			}
			if post == nil && s.spec.FullDocument == "required" {
				return event{}, mongoerr.New(mongoerr.NoMatchingDocument, "Change stream was configured to require a post-image for all update events, but the post-image was not found for event: %s", tok.Lookup("_data").StringValue())
			}
			appendDocOrNull(b, "fullDocument", post, post != nil)
		}
	}
	b.appendNS("ns", e.db, e.coll).AppendDocument("documentKey", key)
	if diff != nil {
		desc, err := docdiff.Describe(diff)
		if err != nil {
			return event{}, err
		}
		b.AppendDocument("updateDescription", s.describe(desc))
	}
	if kind != "insert" && s.spec.FullDocumentBeforeChange != "off" {
		if !preFound && s.spec.FullDocumentBeforeChange == "required" {
			return event{}, mongoerr.New(mongoerr.NoMatchingDocument, "Change stream was configured to require a pre-image for all update, delete and replace events, but the pre-image was not found for event: %s", tok.Lookup("_data").StringValue())
		}
		appendDocOrNull(b, "fullDocumentBeforeChange", pre, preFound)
	}
	return event{pos: t.pos(), token: tok, doc: b.Build()}, nil
}

func appendDocOrNull(b *evDoc, name string, d bsoncore.Document, found bool) {
	if found {
		b.AppendDocument(name, d)
	} else {
		b.AppendNull(name)
	}
}

// describe is an update's updateDescription, as MongoDB 7.0 shows it:
// disambiguatedPaths only with showExpandedEvents.
func (s *Stream) describe(desc docdiff.Description) bsoncore.Document {
	removed := bsoncore.NewArrayBuilder()
	for _, r := range desc.Removed {
		removed.AppendString(r)
	}
	truncated := bsoncore.NewArrayBuilder()
	for _, t := range desc.Truncated {
		truncated.AppendDocument(bsoncore.NewDocumentBuilder().AppendString("field", t.Field).AppendInt32("newSize", t.NewSize).Build())
	}
	b := bsoncore.NewDocumentBuilder().AppendDocument("updatedFields", desc.Updated).
		AppendArray("removedFields", removed.Build()).AppendArray("truncatedArrays", truncated.Build())
	if s.spec.ShowExpandedEvents {
		b.AppendDocument("disambiguatedPaths", desc.Disambiguated)
	}
	return b.Build()
}

// commandEvents are a catalog change's events: drop, rename and
// dropDatabase (each followed by an invalidate where it ends the stream's
// scope), and with showExpandedEvents create, createIndexes, dropIndexes
// and modify.
func (s *Stream) commandEvents(dst []event, e *entry) ([]event, error) {
	els, err := e.o.Elements()
	if err != nil || len(els) == 0 {
		return dst, nil
	}
	name := els[0].Key()
	arg, _ := els[0].Value().StringValueOK()
	// rest is the command's other fields, for operationDescription.
	rest := func() bsoncore.Document {
		b := bsoncore.NewDocumentBuilder()
		for _, el := range els[1:] {
			b.AppendValue(el.Key(), el.Value())
		}
		return b.Build()
	}
	simple := func(kind, coll string, desc bsoncore.Document, extra func(*evDoc)) event {
		b, t, tok := s.builder(e, kind, nil, false)
		b.appendNS("ns", e.db, coll)
		if extra != nil {
			extra(b)
		}
		if desc != nil && s.spec.ShowExpandedEvents {
			b.AppendDocument("operationDescription", desc)
		}
		return event{pos: t.pos(), token: tok, doc: b.Build()}
	}
	invalidate := func() event {
		b, t, tok := s.builder(e, "invalidate", nil, true)
		return event{pos: t.pos(), token: tok, doc: b.Build(), invalidate: true}
	}
	switch name {
	case "create", "createIndexes", "dropIndexes", "collMod":
		if !s.spec.ShowExpandedEvents || !s.scope.wants(e.db, arg) {
			return dst, nil
		}
		kind, desc := name, rest()
		switch name {
		case "createIndexes":
			desc = bsoncore.NewDocumentBuilder().AppendArray("indexes", bsoncore.NewArrayBuilder().AppendDocument(desc).Build()).Build()
		case "dropIndexes":
			idx := bsoncore.NewDocumentBuilder().AppendValue("name", e.o.Lookup("index")).Build()
			desc = bsoncore.NewDocumentBuilder().AppendArray("indexes", bsoncore.NewArrayBuilder().AppendDocument(idx).Build()).Build()
		case "collMod":
			kind = "modify"
		}
		return append(dst, simple(kind, arg, desc, nil)), nil
	case "drop":
		if !s.scope.wants(e.db, arg) {
			return dst, nil
		}
		dst = append(dst, simple("drop", arg, nil, nil))
		if s.scope.Coll != "" {
			dst = append(dst, invalidate())
		}
		return dst, nil
	case "renameCollection":
		fromDB, from, _ := strings.Cut(arg, ".")
		to, _ := e.o.Lookup("to").StringValueOK()
		toDB, toColl, _ := strings.Cut(to, ".")
		if !s.scope.wants(fromDB, from) && !(s.spec.ShowExpandedEvents && s.scope.wants(toDB, toColl)) {
			return dst, nil
		}
		e.db = fromDB
		dst = append(dst, simple("rename", from, bsoncore.NewDocumentBuilder().AppendDocument("to", nsDoc(toDB, toColl)).Build(), func(b *evDoc) {
			b.AppendDocument("to", nsDoc(toDB, toColl))
		}))
		if s.scope.Coll != "" && s.scope.DB == fromDB && s.scope.Coll == from {
			dst = append(dst, invalidate())
		}
		return dst, nil
	case "dropDatabase":
		switch {
		case s.scope.DB == "":
			if !internalDB(e.db) {
				dst = append(dst, simple("dropDatabase", "", nil, nil))
			}
		case s.scope.DB != e.db:
		case s.scope.Coll == "":
			dst = append(dst, simple("dropDatabase", "", nil, nil), invalidate())
		default:
			// The watched collection went with its database: MongoDB logs
			// its drop before the dropDatabase, and the stream ends there.
			dst = append(dst, simple("drop", s.scope.Coll, nil, nil), invalidate())
		}
		return dst, nil
	}
	return dst, nil
}
