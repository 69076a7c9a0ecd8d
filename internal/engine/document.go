package engine

import (
	"encoding/binary"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// MaxDocumentSize is MongoDB's limit on a stored document (16 MiB).
const MaxDocumentSize = 16 * 1024 * 1024

// prepared is a document ready to store: _id first, _id validated and encoded.
type prepared struct {
	doc       bsoncore.Document
	id        bsoncore.Value
	idKey     []byte
	generated bool
	// absent: the caller read the document's key in the same transaction
	// and found nothing (Modify's upsert), so insertOne need not look again.
	absent bool
}

// prepareInsert validates doc for storage and puts its _id first, making
// one with newID when there is none.
func prepareInsert(doc bsoncore.Document, newID func() (bsoncore.Value, error)) (prepared, error) {
	top, err := scanDoc(doc, true)
	if err != nil {
		return prepared{}, mongoerr.New(mongoerr.BadValue, "invalid BSON document: %v", err)
	}
	idVal := top.id
	generated := false
	switch {
	case top.ids == 0:
		if idVal, err = newID(); err != nil {
			return prepared{}, err
		}
		generated = true
		doc = withIDFirst(doc, idVal)
	default:
		if err := validateID(idVal); err != nil {
			return prepared{}, err
		}
		if top.ids > 1 {
			return prepared{}, mongoerr.New(mongoerr.BadValue, "can't have multiple _id fields in one document")
		}
		if !top.idFirst {
			doc = withIDFirst(doc, idVal)
		}
	}
	if len(doc) > MaxDocumentSize {
		return prepared{}, mongoerr.New(mongoerr.BSONObjectTooLarge, "object to insert too large. size in bytes: %d, max size: %d", len(doc), MaxDocumentSize)
	}
	deep := top.tooDeep
	if !top.depthChecked { // bsoncore's walks took doc: the depth's own walk
		deep = tooDeep(doc[4:len(doc)-1], 1)
	}
	if deep {
		return prepared{}, mongoerr.New(mongoerr.Overflow, "cannot insert document because it exceeds %d levels of nesting", MaxStorageDepth)
	}
	return prepared{doc: doc, id: idVal, idKey: appendIDKey(nil, idVal), generated: generated}, nil
}

// MaxStorageDepth is MongoDB's BSONDepth::getMaxDepthForUserStorage: the
// stored document is level 1, and no document or array may sit deeper than
// this (commands themselves may nest to bsonx.MaxDepth, 200). MongoDB's
// insert path (validateDepth in fixDocumentForInsert) answers Overflow.
const MaxStorageDepth = 100

// tooDeep reports whether the elements elems of a container at level hold a
// document or array below MaxStorageDepth. doc was validated, so the walk
// only reads well-formed elements.
func tooDeep(elems []byte, level int) bool {
	for len(elems) > 0 {
		t, _, val, rest, ok := bsonx.NextElement(elems)
		if !ok {
			return false
		}
		elems = rest
		if (t == bsoncore.TypeEmbeddedDocument || t == bsoncore.TypeArray) && len(val) >= 5 {
			if level == MaxStorageDepth || tooDeep(val[4:len(val)-1], level+1) {
				return true
			}
		}
	}
	return false
}

// validateID applies MongoDB's rules for _id values: anything but an array,
// a regular expression or undefined, and no $-prefixed field names inside.
func validateID(v bsoncore.Value) error {
	switch v.Type {
	case bsoncore.TypeArray:
		return mongoerr.New(mongoerr.InvalidIDField, "The '_id' value cannot be of type array")
	case bsoncore.TypeRegex:
		return mongoerr.New(mongoerr.InvalidIDField, "The '_id' value cannot be of type regex")
	case bsoncore.TypeUndefined:
		return mongoerr.New(mongoerr.InvalidIDField, "The '_id' value cannot be of type undefined")
	case bsoncore.TypeEmbeddedDocument:
		elems, err := v.Document().Elements()
		if err != nil {
			return mongoerr.New(mongoerr.BadValue, "invalid _id document: %v", err)
		}
		for _, el := range elems {
			if k := el.Key(); len(k) > 0 && k[0] == '$' {
				return mongoerr.New(mongoerr.DollarPrefixedFieldName, "_id fields may not contain '$'-prefixed fields: %s is not valid for storage.", k)
			}
		}
	}
	return nil
}

// topScan is what one walk over a document's top-level elements learns
// (scanTop).
type topScan struct {
	ids     int            // fields named _id
	id      bsoncore.Value // the first one's value
	idFirst bool           // the first field is _id
	// With the depth asked for, depthChecked is set and tooDeep is
	// tooDeep(doc's elements, 1): a container nested past
	// MaxStorageDepth (the insert's check, in the same walk: a second
	// walk of every document was 6 % of an insert command's
	// instructions in BenchmarkInsertYCSB).
	depthChecked, tooDeep bool
}

// scanTop walks doc's top-level elements once with bsonx.NextElement. ok
// is true only when doc's length is its slice's, it ends in a NUL and every
// element frames (bsonx.ValueSize, which is at least as strict as
// bsoncore's framing: a boolean byte, a string's NUL, a nested document's
// length and NUL): then doc.Validate() would pass and the counts are those
// of countKey, LookupErr("_id") and idIsFirst (invariant "Top-level scan
// agrees", TestScanTopAgrees). When ok is false the caller asks bsoncore,
// which may still accept what this walk refuses.
func scanTop(doc bsoncore.Document, depth bool) (s topScan, ok bool) {
	if len(doc) < 5 || int(int32(binary.LittleEndian.Uint32(doc))) != len(doc) || doc[len(doc)-1] != 0 {
		return topScan{}, false
	}
	elems := doc[4 : len(doc)-1]
	for first := true; len(elems) > 0; first = false {
		t, key, val, rest, valid := bsonx.NextElement(elems)
		if !valid {
			return topScan{}, false
		}
		if depth && !s.tooDeep && (t == bsoncore.TypeEmbeddedDocument || t == bsoncore.TypeArray) && len(val) >= 5 {
			s.tooDeep = MaxStorageDepth == 1 || tooDeep(val[4:len(val)-1], 2)
		}
		if string(key) == "_id" {
			if s.ids == 0 {
				s.id = bsoncore.Value{Type: t, Data: val}
				s.idFirst = first
			}
			s.ids++
		}
		elems = rest
	}
	s.depthChecked = depth
	return s, true
}

// scanDoc is scanTop's answer, or where scanTop refuses doc bsoncore's:
// Validate's error, or the counts of countKey, LookupErr and idIsFirst.
func scanDoc(doc bsoncore.Document, depth bool) (topScan, error) {
	if s, ok := scanTop(doc, depth); ok {
		return s, nil
	}
	if err := doc.Validate(); err != nil {
		return topScan{}, err
	}
	s := topScan{ids: countKey(doc, "_id"), idFirst: idIsFirst(doc)}
	if s.ids > 0 {
		var err error
		if s.id, err = doc.LookupErr("_id"); err != nil {
			return topScan{}, err
		}
	}
	return s, nil
}

// countKey counts the top-level fields of a valid doc named key, without
// allocating (inserts pass here).
func countKey(doc bsoncore.Document, key string) int {
	n := 0
	rest := doc[4 : len(doc)-1]
	for len(rest) > 0 {
		el, r, ok := bsoncore.ReadElement(rest)
		if !ok {
			break
		}
		if string(el.KeyBytes()) == key {
			n++
		}
		rest = r
	}
	return n
}

// idIsFirst reports whether doc's first element is _id.
func idIsFirst(doc bsoncore.Document) bool {
	el, err := doc.IndexErr(0)
	return err == nil && el.Key() == "_id"
}

// withIDFirst returns a copy of doc with id as its first field and any other
// _id field removed.
func withIDFirst(doc bsoncore.Document, id bsoncore.Value) bsoncore.Document {
	idx, out := bsoncore.AppendDocumentStart(make([]byte, 0, len(doc)+len(id.Data)+8))
	out = bsoncore.AppendValueElement(out, "_id", id)
	elems, _ := doc.Elements() // doc was validated by the caller
	for _, el := range elems {
		if el.Key() != "_id" {
			out = append(out, el...)
		}
	}
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	return out
}

// duplicateIDError is MongoDB's E11000 for the _id index.
func duplicateIDError(ns Namespace, id bsoncore.Value) *mongoerr.Error {
	idDoc := bsoncore.NewDocumentBuilder().AppendValue("_id", id).Build()
	return &mongoerr.Error{
		Code: mongoerr.DuplicateKey,
		Msg:  "E11000 duplicate key error collection: " + ns.String() + " index: _id_ dup key: " + bsonx.ShellString(idDoc),
		Extra: []mongoerr.Field{
			{Name: "keyPattern", Value: bson.D{{Key: "_id", Value: 1}}},
			{Name: "keyValue", Value: bson.Raw(idDoc)},
		},
	}
}
