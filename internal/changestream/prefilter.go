package changestream

import "go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

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
