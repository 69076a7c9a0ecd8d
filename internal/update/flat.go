package update

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/invariants"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// The flat $set path (invariant "Flat sets splice"): an update that is
// only $set of a few top-level fields — YCSB's update, and the commonest
// update there is — applied to a document that holds every one of them
// needs no node tree. One walk over the document's top-level elements
// finds the fields; the new document is the old one's bytes with those
// values spliced in, which is byte for byte what the tree serializes
// (untouched elements are copied as they are; a set element keeps its
// place and name, with the new type and value). Anything else — a field
// the document lacks (the tree appends it in its order), a malformed
// document (the tree reports it), an upsert's insert — goes the tree's
// way. TestFlatSetMatchesTree and TestFlatSetRandom compare the two.

// maxFlatSet is the most fields the flat path takes: it matches every
// element's name against each field.
const maxFlatSet = 8

// flatField is one $set of a top-level field.
type flatField struct {
	name string
	val  bsoncore.Value
}

// flatSets lists root's fields in the tree's order when root holds only
// $set leaves (not $setOnInsert) of top-level fields other than _id and
// not $-prefixed (those checks stay with the tree), at most maxFlatSet of
// them; otherwise nil.
func flatSets(root *objectNode) []flatField {
	if root.positional != nil || len(root.order) == 0 || len(root.order) > maxFlatSet {
		return nil
	}
	flat := make([]flatField, 0, len(root.order))
	for _, name := range root.order {
		set, ok := root.children[name].(*setNode)
		if !ok || set.onInsert || name == "_id" || strings.HasPrefix(name, "$") {
			return nil
		}
		flat = append(flat, flatField{name: name, val: set.val})
	}
	return flat
}

// flatHit is a field of u.flat found in the document: the offsets of its
// element's type byte and of its value's bytes.
type flatHit struct {
	field                 int
	typeAt, valAt, valEnd int
}

// applyFlat applies a flat $set to doc. ok is false when the tree must
// apply it instead (doc malformed or lacking a field); otherwise out is
// the new document, written over dst's memory (grown if it lacks room),
// or nil when no field changes (the tree's no-op).
func (u *Update) applyFlat(dst []byte, doc bsoncore.Document) (out bsoncore.Document, ok bool, err error) {
	if n, valid := bsonx.ValueSize(bsoncore.TypeEmbeddedDocument, doc); !valid || n != len(doc) || len(doc) < 5 {
		return nil, false, nil
	}
	var hits [maxFlatSet]flatHit
	nhits := 0
	var seen uint32 // bit i: u.flat[i] was found (the first element of that name is the tree's)
	elems := doc[4 : len(doc)-1]
	for len(elems) > 0 {
		at := len(doc) - 1 - len(elems)
		_, key, val, rest, valid := bsonx.NextElement(elems)
		if !valid {
			return nil, false, nil
		}
		elems = rest
		for i := range u.flat {
			if seen&(1<<i) == 0 && string(key) == u.flat[i].name {
				seen |= 1 << i
				valAt := at + 1 + len(key) + 1
				hits[nhits] = flatHit{field: i, typeAt: at, valAt: valAt, valEnd: valAt + len(val)}
				nhits++
				break
			}
		}
	}
	if nhits < len(u.flat) {
		return nil, false, nil
	}
	size := len(doc)
	changed := false
	for _, h := range hits[:nhits] {
		f := &u.flat[h.field]
		old := bsoncore.Value{Type: bsoncore.Type(doc[h.typeAt]), Data: doc[h.valAt:h.valEnd]}
		if sameBytes(old, f.val) {
			continue
		}
		if err := checkDepth(1, f.val); err != nil {
			return nil, true, err
		}
		changed = true
		size += len(f.val.Data) - len(old.Data)
	}
	if !changed {
		return nil, true, nil
	}
	out = slices.Grow(dst[:0], size)
	prev := 0
	for _, h := range hits[:nhits] {
		f := &u.flat[h.field]
		out = append(out, doc[prev:h.typeAt]...)
		out = append(out, byte(f.val.Type))
		out = append(out, doc[h.typeAt+1:h.valAt]...)
		out = append(out, f.val.Data...)
		prev = h.valEnd
	}
	out = append(out, doc[prev:len(doc)-1]...)
	out = append(out, 0)
	binary.LittleEndian.PutUint32(out, uint32(len(out)))
	return out, true, nil
}

// checkFlat, in invariants builds, applies the update by the tree as well
// and fails invariant "Flat sets splice" unless the flat path's document
// and error are the tree's.
func (u *Update) checkFlat(doc bsoncore.Document, ctx ApplyContext, out bsoncore.Document, err error) {
	want, werr := u.applyOperators(doc, &ctx)
	if !bytes.Equal(out, want) || fmt.Sprint(err) != fmt.Sprint(werr) {
		invariants.Fail("Flat sets splice", "the flat path wrote %v (%v), the tree %v (%v)", out, err, want, werr)
	}
}
