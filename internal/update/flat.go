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

// parseFlat parses update (ParseDocument's own copy, its framing checked,
// without array filters) when it is a flat $set: one $set and nothing else,
// of 1 to maxFlatSet fields, each name non-empty, without ".", not _id, not
// $-prefixed, no two alike. The tree's parse accepts every such update and
// flatSets lists its fields, in comparePathParts order, which is what
// parseFlat returns, without the tree, its map, its nodes, its paths and a
// string per name (invariant "Flat parse agrees": TestFlatParseAgrees, and
// invariants builds parse each by the tree as well); tree builds the tree
// when a document needs it. Any other update returns nil, for the tree.
func parseFlat(update bsoncore.Document) *Update {
	t, key, val, rest, ok := bsonx.NextElement(update[4 : len(update)-1])
	if !ok || len(rest) != 0 || t != bsoncore.TypeEmbeddedDocument || string(key) != "$set" {
		return nil
	}
	var fields [maxFlatSet]flatField
	var keys [maxFlatSet][]byte
	n, size := 0, 0
	for elems := val[4 : len(val)-1]; len(elems) > 0; n++ {
		t, key, v, rest, ok := bsonx.NextElement(elems)
		if !ok || n == maxFlatSet || len(key) == 0 || key[0] == '$' || string(key) == "_id" || bytes.IndexByte(key, '.') >= 0 {
			return nil
		}
		elems = rest
		keys[n], fields[n].val = key, bsoncore.Value{Type: t, Data: v}
		size += len(key)
	}
	if n == 0 {
		return nil
	}
	// The names in one string, each a slice of it.
	var b strings.Builder
	b.Grow(size)
	for i := range n {
		b.Write(keys[i])
	}
	names := b.String()
	for i := range n {
		fields[i].name, names = names[:len(keys[i])], names[len(keys[i]):]
	}
	// The tree's order, by insertion (at most maxFlatSet); two alike
	// conflict, which the tree reports.
	for i := 1; i < n; i++ {
		for j := i; j > 0; j-- {
			c := comparePathParts(fields[j-1].name, fields[j].name)
			if c == 0 {
				return nil
			}
			if c < 0 {
				break
			}
			fields[j-1], fields[j] = fields[j], fields[j-1]
		}
	}
	u := &Update{kind: KindOperator}
	if n == 1 {
		u.one[0] = fields[0]
		u.flat = u.one[:1:1]
	} else {
		u.flat = slices.Clone(fields[:n])
	}
	return u
}

// tree is an operator update's tree: root, or for a flat $set parsed by
// parseFlat the tree the parse would have built — a $set leaf per field
// under the root, in flat's order —, built on first use. Goroutines that
// race build alike trees and keep the first.
func (u *Update) tree() *objectNode {
	if u.root != nil {
		return u.root
	}
	if r := u.built.Load(); r != nil {
		return r
	}
	r := newObjectNode()
	r.order = make([]string, len(u.flat))
	for i, f := range u.flat {
		r.children[f.name] = &setNode{val: f.val}
		r.order[i] = f.name
	}
	u.built.CompareAndSwap(nil, r)
	return u.built.Load()
}

// checkFlatParse, in invariants builds, parses update by the tree as well
// and fails invariant "Flat parse agrees" unless it succeeds with the
// same fields, in the same order, and the same tree.
func checkFlatParse(update bsoncore.Document, u *Update) {
	t, err := parseTree(update, nil, Options{})
	if err != nil {
		invariants.Fail("Flat parse agrees", "the tree refused %v: %v", update, err)
		return
	}
	if why := sameFlat(u, t); why != "" {
		invariants.Fail("Flat parse agrees", "%v: %s", update, why)
	}
}

// sameFlat says how two parses of one update differ (flat lists, trees,
// positional), or "" when they do not.
func sameFlat(a, b *Update) string {
	if a.kind != b.kind || a.positional != b.positional || len(a.flat) != len(b.flat) {
		return fmt.Sprintf("kind %v/%v, positional %v/%v, %d/%d flat fields", a.kind, b.kind, a.positional, b.positional, len(a.flat), len(b.flat))
	}
	for i := range a.flat {
		x, y := a.flat[i], b.flat[i]
		if x.name != y.name || x.val.Type != y.val.Type || !bytes.Equal(x.val.Data, y.val.Data) {
			return fmt.Sprintf("flat field %d: %q %v / %q %v", i, x.name, x.val, y.name, y.val)
		}
	}
	ta, tb := a.tree(), b.tree()
	if !slices.Equal(ta.order, tb.order) || ta.positional != nil || tb.positional != nil || len(ta.children) != len(tb.children) {
		return fmt.Sprintf("trees: order %q / %q", ta.order, tb.order)
	}
	for name, c := range ta.children {
		x, ok1 := c.(*setNode)
		y, ok2 := tb.children[name].(*setNode)
		if !ok1 || !ok2 || x.onInsert || y.onInsert || x.val.Type != y.val.Type || !bytes.Equal(x.val.Data, y.val.Data) {
			return fmt.Sprintf("trees differ at %q", name)
		}
	}
	return ""
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
