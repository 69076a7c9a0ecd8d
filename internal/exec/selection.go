package exec

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/collation"
	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/hlc"
	"github.com/cairndb/cairn/internal/planner"
	"github.com/cairndb/cairn/internal/query"
)

// Selection is a parsed read: a find, or what a count, distinct, update,
// delete, findAndModify or a pipeline's pushed-down stages select. The
// command layer fills it from a request; the planner reads it as a
// planner.Query. Every document it holds is owned (not the request's
// buffer), so a cursor may keep it past the request.
type Selection struct {
	NS        engine.Namespace
	Filter    *query.Filter
	RawFilter bsoncore.Document // the filter as sent ({} when none)
	Sort      *query.Sort       // nil: any order
	RawSort   bsoncore.Document // the sort as sent, for explain
	Proj      *query.Projection // nil: whole documents
	RawProj   bsoncore.Document // the projection as sent, for explain
	// Positional: the projection has a "field.$" that needs the match
	// position.
	Positional   bool
	Skip, Limit  int64 // Limit 0: none
	AllowDiskUse bool
	SortMemory   int64 // a blocking sort's budget in bytes
	// Hint forces a plan (an index name or key pattern, {$natural: ±1});
	// Type 0 lets the planner choose.
	Hint bsoncore.Value
	// Min and Max bound the hinted index's keys (find's options).
	Min, Max bsoncore.Document
	// CountOnly: the results are only counted (count), so the plan may
	// return empty documents (see planner.Query.Count).
	CountOnly bool
	// Distinct: the caller keeps only the first document of each value of
	// this path (see planner.Query.DistinctPath).
	Distinct string
	// ReturnKey and ShowRecordID are find's returnKey and showRecordId
	// (see planner.Query).
	ReturnKey, ShowRecordID bool
	// AsOf, non-zero, reads the collection as it was at that cluster time
	// (readConcern snapshot): a versioned one from its history, a plain one
	// from a replica set member's snapshot history (engine.NewReaderAt).
	AsOf hlc.Timestamp
	// Collation is the collation Filter was parsed with (query.Options's,
	// when it is a *collation.Collator); SetSort sorts by it and the
	// planner matches it against index collations. nil: simple.
	Collation *collation.Collator
	// TextScore: the stages after the read use {$meta: "textScore"} (see
	// planner.Query.TextScore).
	TextScore bool
	// Owned, when set, keeps only the documents of chunks this shard owns
	// (planner.Query.Owned, SHARDING_FILTER). Env.Open sets it from the
	// Env's (Owning) when the selection reads that collection.
	Owned func(bsoncore.Document) bool
}

// NewSelection parses filter (nil or empty: everything) into a Selection of
// ns with no other options; vars are what its $expr reads ($$NOW, let).
func NewSelection(ns engine.Namespace, filter bsoncore.Document, vars query.Options) (Selection, error) {
	if len(filter) == 0 {
		filter = emptyDocument // an absent filter selects everything
	}
	// A cursor keeps the parsed filter past the request, and the request's
	// bytes alias the connection's read buffer, which the next message
	// overwrites: parse an owned copy.
	filter = Owned(filter)
	f, err := query.ParseWith(filter, vars)
	if err != nil {
		return Selection{}, err
	}
	coll, _ := vars.Collation.(*collation.Collator)
	return Selection{NS: ns, Filter: f, RawFilter: filter, Collation: coll}, nil
}

// SetSort sets the order of the results from a sort document; an empty one
// leaves any order.
func (s *Selection) SetSort(raw bsoncore.Document) error {
	if len(raw) <= 5 {
		return nil
	}
	raw = Owned(raw)
	sort, err := query.ParseSort(raw)
	if err != nil {
		return err
	}
	if s.Collation != nil {
		sort = sort.WithCollation(s.Collation)
	}
	s.Sort, s.RawSort = sort, raw
	return nil
}

// SetProjection sets the projection of the results (read against the
// selection's filter, for the positional $); an empty one leaves whole
// documents.
func (s *Selection) SetProjection(raw bsoncore.Document) error {
	if len(raw) <= 5 {
		return nil
	}
	s.RawProj = Owned(raw)
	var err error
	if s.Proj, err = query.ParseProjection(s.RawProj, s.Filter); err != nil {
		return err
	}
	elems, _ := s.RawProj.Elements()
	for _, el := range elems {
		if strings.HasSuffix(el.Key(), ".$") {
			s.Positional = true
		}
	}
	return nil
}

// rawFilter is the filter as sent ({} when none was).
func (s *Selection) rawFilter() bsoncore.Document {
	if len(s.RawFilter) == 0 {
		return emptyDocument
	}
	return s.RawFilter
}

// query is the selection as the planner reads it.
func (s *Selection) query() planner.Query {
	var oplogAfter uint64
	if s.NS == engine.OplogNS {
		oplogAfter = engine.OplogStart(s.rawFilter()) // a ts bound seeks
	}
	return planner.Query{
		OplogAfter: oplogAfter,
		Filter:     s.Filter, RawFilter: s.rawFilter(),
		Sort: s.Sort, RawSort: s.RawSort,
		Proj: s.Proj, RawProj: s.RawProj, Positional: s.Positional,
		Skip: s.Skip, Limit: s.Limit,
		Hint: s.Hint, Min: s.Min, Max: s.Max,
		SortMemory: s.SortMemory, AllowDiskUse: s.AllowDiskUse,
		Count:        s.CountOnly,
		DistinctPath: s.Distinct,
		ReturnKey:    s.ReturnKey, ShowRecordID: s.ShowRecordID,
		Collation: s.Collation,
		TextScore: s.TextScore,
		Owned:     s.Owned,
	}
}

// PointRead reports whether s, opened to run, is the planner's point read
// of one _id, which keeps no context (see Env.Open).
func (s *Selection) PointRead() bool {
	q := s.query()
	return planner.IsPointRead(&q)
}

// pointID is the one _id s selects when it is a point read that returns
// its document (no skip, which leaves none).
func (s *Selection) pointID() (bsoncore.Value, bool) {
	if s.Skip > 0 || s.ReturnKey || s.ShowRecordID || !s.PointRead() {
		return bsoncore.Value{}, false
	}
	id, ok := s.Filter.IDEquality()
	if ok && s.Collation != nil {
		switch id.Type {
		case bsoncore.TypeString, bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray, bsoncore.TypeSymbol:
			// The _id key is simple: under a collation, equal strings of
			// other bytes match too, so the write scans (as planner.pointID).
			return bsoncore.Value{}, false
		}
	}
	return id, ok
}

var emptyDocument = bsoncore.Document{5, 0, 0, 0, 0}

// Owned copies a document out of a request buffer.
func Owned(d bsoncore.Document) bsoncore.Document { return append(bsoncore.Document(nil), d...) }

// OwnedAll copies pipeline stages out of a request buffer: a cursor keeps
// the parsed pipeline past the request.
func OwnedAll(stages []bsoncore.Document) []bsoncore.Document {
	out := make([]bsoncore.Document, len(stages))
	for i, st := range stages {
		out[i] = Owned(st)
	}
	return out
}
