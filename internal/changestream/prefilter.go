package changestream

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/query"
)

// OpTypes is a set of the operation types of an entry's own operations
// (insert, update, replace, delete): the ones a stream's first $match can
// keep. The zero set is no prefilter (every event is built).
type OpTypes uint8

const (
	opInsert OpTypes = 1 << iota
	opUpdate
	opReplace
	opDelete
	// opNone is a prefilter keeping no CRUD event (0 is no prefilter).
	opNone OpTypes = 1 << 7
)

var opTypeBits = map[string]OpTypes{"insert": opInsert, "update": opUpdate, "replace": opReplace, "delete": opDelete}

// keeps reports whether the set keeps events of kind (a catalog change's
// kinds are always kept: only insert, update, replace and delete are
// prefiltered).
func (t OpTypes) keeps(kind string) bool {
	bit, ok := opTypeBits[kind]
	return t == 0 || !ok || t&bit != 0
}

// MatchOpTypes is the set of CRUD operation types a change stream's first
// $match stage (its argument, match) can keep, read only from a top-level
// operationType: "<type>", {$eq: "<type>"} or {$in: ["<type>", ...]} (the
// argument is an implicit AND, so an event whose operationType fails that
// one field fails the whole $match). Anything else is 0: no prefilter. A
// pipeline with a collation must not use it (a collation can make two
// strings equal that are not bytewise).
func MatchOpTypes(match bsoncore.Document) OpTypes {
	v := match.Lookup("operationType")
	els, _ := match.Elements()
	n := 0
	for _, el := range els {
		if el.Key() == "operationType" {
			n++
		}
	}
	if n != 1 {
		return 0
	}
	if s, ok := v.StringValueOK(); ok {
		return opBits(s)
	}
	d, ok := v.DocumentOK()
	if !ok {
		return 0
	}
	ops, _ := d.Elements()
	if len(ops) != 1 {
		return 0
	}
	switch ops[0].Key() {
	case "$eq":
		if s, ok := ops[0].Value().StringValueOK(); ok {
			return opBits(s)
		}
	case "$in":
		arr, ok := ops[0].Value().ArrayOK()
		if !ok {
			return 0
		}
		vals, _ := arr.Values()
		t := opNone // $in: [] keeps nothing
		for _, v := range vals {
			s, ok := v.StringValueOK()
			if !ok {
				return 0 // a regex or another type: not prefiltered
			}
			t |= opBits(s)
		}
		if t != opNone {
			t &^= opNone
		}
		return t
	}
	return 0
}

// opBits is the set an operationType equal to s keeps: its own bit, or
// none of the four for another kind (a catalog change's, which keeps()
// always builds; an unknown string matches no CRUD event).
func opBits(s string) OpTypes {
	if bit, ok := opTypeBits[s]; ok {
		return bit
	}
	return opNone
}

// KeepOnly makes the stream build only the CRUD events of types (0: all):
// for the others it keeps their position and token, as if a later $match
// had dropped them, so resume tokens are the same (TestPrefilterSameEvents).
// Call it after Open, before the first Next.
func (s *Stream) KeepOnly(types OpTypes) {
	s.keep = types
	if s.feed != nil {
		s.shape.keep = types
	}
}

// A CRUD event's head is what is known of it from its entry before it is
// built: its operationType, ns and documentKey, as a document
// {operationType, ns: {db, coll}, documentKey} whose fields are the bytes
// the event holds. A $match clause that reads no other field answers the
// same on the head as on the event (a path's value is all a condition on
// it sees), so a stream whose first $match has such clauses (top-level,
// so each is a condition of the whole $match) drops the events whose head
// fails them before building them: MongoDB 7.0 rewrites the same fields
// of a change stream's $match into its oplog scan.
var headFields = map[string]bool{"operationType": true, "ns": true, "documentKey": true}

// headOnly reports whether a clause reads only the head's fields: a path
// under one of them, or $and/$or/$nor of such clauses. Operators that read
// the whole document ($expr, $jsonSchema, $where, $text) or say nothing
// of a path are never head clauses.
func headOnly(c query.Clause) bool {
	switch c.Kind {
	case query.PathClause:
		first, _, _ := strings.Cut(c.Key, ".")
		return headFields[first]
	case query.AndClause, query.OrClause, query.NorClause:
		for _, b := range c.Branches {
			for _, in := range b {
				if !headOnly(in) {
					return false
				}
			}
		}
		return true
	}
	return false
}

// MatchHead is the filter of the top-level clauses of a change stream's
// first $match (its argument, match) that read only an event's head, and
// the document it was parsed from (nil when there is none; the caller
// leaves it off under a collation, which the filter would not apply). The
// $match is an implicit AND, so an event whose head fails it fails the
// $match.
func MatchHead(match bsoncore.Document) (*query.Filter, bsoncore.Document) {
	idx, doc := bsoncore.AppendDocumentStart(nil)
	n := 0
	for _, c := range query.TreeOf(match) {
		if headOnly(c) {
			doc = bsoncore.AppendValueElement(doc, c.Key, c.Value)
			n++
		}
	}
	if n == 0 {
		return nil, nil
	}
	doc, _ = bsoncore.AppendDocumentEnd(doc, idx)
	f, err := query.Parse(doc)
	if err != nil {
		return nil, nil // the whole $match parsed; a part that does not is not used
	}
	return f, doc
}

// Prefilter makes the stream build only the events its first $match
// (match; nil: none) can keep: the CRUD types MatchOpTypes reads from it
// (KeepOnly), and of those only the events whose head matches MatchHead's
// filter. Call it after Open, before the first Next; not under a
// collation.
func (s *Stream) Prefilter(match bsoncore.Document) {
	if match == nil {
		return
	}
	s.KeepOnly(MatchOpTypes(match))
	f, doc := MatchHead(match)
	if f == nil || len(query.TreeOf(doc)) == 1 && MatchOpTypes(doc) != 0 {
		return // nothing beyond what the types say
	}
	s.head = f
	if s.feed != nil {
		s.shape.head = string(doc)
	}
}

// headMatches reports whether a CRUD event's head matches the stream's
// head filter, built in the stream's scratch buffer.
func (s *Stream) headMatches(kind string, e *entry, key bsoncore.Document) bool {
	b := bsoncore.AppendStringElement(append(s.headScratch[:0], 0, 0, 0, 0), "operationType", kind)
	b = appendNSElement(b, "ns", e.db, e.coll)
	b = bsoncore.AppendDocumentElement(b, "documentKey", key)
	b = append(b, 0)
	bsoncore.UpdateLength(b, 0, int32(len(b)))
	s.headScratch = b
	return s.head.Match(b)
}
