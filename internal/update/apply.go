package update

import (
	"bytes"
	"strings"
	"time"

	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/invariants"
	"github.com/cairndb/cairn/internal/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// ApplyContext is what applying an update to one document needs to know
// besides the document.
type ApplyContext struct {
	// ArrayPos is the array position the statement's filter matched
	// (query.Filter.MatchDetails), which the positional operator "$"
	// stands for; -1 if the match bound none. The zero value 0 is a
	// position: callers must set -1 explicitly.
	ArrayPos int
	// IsUpsertInsert is true while an upsert builds the document it
	// inserts: $setOnInsert applies, and the new document is validated as
	// an insert ($-prefixed top-level names are allowed).
	IsUpsertInsert bool
	// Now is the time $currentDate writes (as a date, in milliseconds).
	Now time.Time
	// Timestamp, if set, makes the timestamps that $currentDate {$type:
	// "timestamp"} and zero timestamps of replacement documents get
	// (MongoDB takes them from the cluster clock). Without it they are
	// Now's seconds with increment 1.
	Timestamp func() (t, i uint32)
	// KeepEmptyTimestamps leaves a replacement document's top-level
	// Timestamp(0, 0) as it is (the write's bypassEmptyTsReplacement).
	KeepEmptyTimestamps bool
	// NewID, if set, makes the _id of an upserted document that has none;
	// without it Upsert returns the document without an _id and the caller
	// adds one (as the first field).
	NewID func() bsoncore.Value
}

func (ctx *ApplyContext) timestamp() (uint32, uint32) {
	if ctx.Timestamp != nil {
		return ctx.Timestamp()
	}
	return uint32(ctx.Now.Unix()), 1
}

// applyState is the scratch state of one application.
type applyState struct {
	u       *Update
	ctx     *ApplyContext
	root    *node
	matched string // ArrayPos as a path component, "" if none
	insert  bool
	changed bool     // some leaf modified the document
	dollars []string // top-level $-prefixed names that leaves wrote
	scratch []byte
}

// Apply applies the update to doc and returns the new document and whether
// it differs from doc. When it does not (a no-op update: nothing to write,
// not counted in nModified), newDoc is doc itself; otherwise it is a new
// buffer. doc is never modified.
func (u *Update) Apply(doc bsoncore.Document, ctx ApplyContext) (newDoc bsoncore.Document, modified bool, err error) {
	return u.ApplyTo(nil, doc, ctx)
}

// ApplyTo is Apply that may write the new document into dst's memory
// (from its start: dst's bytes are overwritten) instead of a new buffer —
// the flat $set does, when dst has room or grows into it —, so that a
// caller that reuses dst allocates nothing for the common update. newDoc
// may alias dst; dst must not alias doc.
func (u *Update) ApplyTo(dst []byte, doc bsoncore.Document, ctx ApplyContext) (newDoc bsoncore.Document, modified bool, err error) {
	var out bsoncore.Document
	// Each way takes its own copy of ctx by address, so that the flat
	// path's does not move ctx to the heap.
	switch u.kind {
	case KindReplacement:
		c := ctx
		out, err = u.replace(doc, &c)
	case KindOperator:
		flat := false
		if u.flat != nil && !ctx.IsUpsertInsert {
			out, flat, err = u.applyFlat(dst, doc)
			if invariants.Enabled && flat {
				u.checkFlat(doc, ctx, out, err)
			}
		}
		if !flat {
			c := ctx
			out, err = u.applyOperators(doc, &c)
		}
	default:
		c := ctx
		out, err = u.runPipeline(doc, &c)
	}
	if err != nil {
		return nil, false, err
	}
	if out == nil || bytes.Equal(out, doc) {
		return doc, false, nil
	}
	if len(out) > MaxDocumentSize && !ctx.IsUpsertInsert {
		return nil, false, errorf(codeDocTooLargeAfterUpdate, "Resulting document after update is larger than %d", MaxDocumentSize)
	}
	return out, true, nil
}

// applyOperators runs the update tree over doc. It returns nil when no
// leaf changed anything.
func (u *Update) applyOperators(doc bsoncore.Document, ctx *ApplyContext) (bsoncore.Document, error) {
	root, err := rootNode(doc)
	if err != nil {
		return nil, err
	}
	s := &applyState{u: u, ctx: ctx, root: root, insert: ctx.IsUpsertInsert}
	if ctx.ArrayPos >= 0 {
		s.matched = itoa(ctx.ArrayPos)
	}
	if err := u.tree().apply(s, cursor{elem: root}); err != nil {
		return nil, err
	}
	if !s.changed {
		return nil, nil
	}
	if err := s.checkDollarFields(); err != nil {
		return nil, err
	}
	return root.appendValue(make([]byte, 0, len(doc)+64)), nil
}

// The leaves share these steps: modify an existing element or create a
// missing one, then check what MongoDB checks of every write.

// replaced records that a leaf gave the existing element at c a new value
// (already set on the node): _id may not change, and a top-level name is
// checked for "$". The leaf checks the depth of the values it wrote
// (checkDepth).
func (s *applyState) replaced(c cursor) error {
	if err := s.checkImmutable(c.taken); err != nil {
		return err
	}
	s.wrote(c.taken)
	s.changed = true
	return nil
}

// checkImmutable refuses a change at path p (taken) when it is _id or
// below it: MongoDB's immutable paths are _id (and, later, shard keys).
func (s *applyState) checkImmutable(p []string) error {
	if len(p) > 0 && p[0] == "_id" {
		return mongoerr.New(mongoerr.ImmutableField, "Performing an update on the path '%s' would modify the immutable field '_id'", joinPath(p))
	}
	return nil
}

// wrote notes a write at path p: a top-level field name starting with "$"
// is validated once the whole update has applied (checkDollarFields), since
// DBRef fields depend on their siblings. Inserts accept such names.
func (s *applyState) wrote(p []string) {
	if len(p) == 1 && strings.HasPrefix(p[0], "$") && !s.insert {
		s.dollars = append(s.dollars, p[0])
	}
}

// checkDepth refuses a value written at level (a top-level field is at
// level 1) whose elements would nest deeper than MongoDB stores.
func checkDepth(level int, v bsoncore.Value) error {
	if level > maxStorageDepth || valueDepth(v, level) > maxStorageDepth {
		return errorf(codeOverflow, "Document exceeds maximum nesting depth of %d", maxStorageDepth)
	}
	return nil
}

// valueDepth is the level of the deepest element in v, v being at level.
func valueDepth(v bsoncore.Value, level int) int {
	if level > maxStorageDepth || (v.Type != bsoncore.TypeEmbeddedDocument && v.Type != bsoncore.TypeArray) || len(v.Data) < 5 {
		return level
	}
	deepest := level
	elems := v.Data[4 : len(v.Data)-1]
	for len(elems) > 0 {
		t, _, val, rest, ok := bsonx.NextElement(elems)
		if !ok {
			break
		}
		elems = rest
		if d := valueDepth(bsoncore.Value{Type: t, Data: val}, level+1); d > deepest {
			deepest = d
		}
	}
	return deepest
}

// create makes the missing path below c's element, ending in leaf (MongoDB's
// createPathAt): documents are created for missing fields, and an index
// into an array pads it with nulls up to that index.
func (s *applyState) create(c cursor, leaf *node) error {
	base := c.elem
	first := c.create[0]
	if !base.isContainer() {
		return errorf(codePathNotViable, "Cannot create field '%s' in element {%s}", first, describe(c.name(), base))
	}
	if err := base.expand(); err != nil {
		return err
	}
	level := len(c.taken) + len(c.create)
	if leaf.isContainer() {
		if err := checkDepth(level, leaf.value()); err != nil {
			return err
		}
	} else if level > maxStorageDepth {
		return checkDepth(level, bsoncore.Value{})
	}
	if base.isArray() {
		idx, ok := isNumeric(first)
		if !ok || idx < len(base.kids) {
			return errorf(codePathNotViable, "Cannot create field '%s' in element {%s}", first, describe(c.name(), base))
		}
		if idx-len(base.kids) > maxPadding {
			return errorf(codeCannotBackfillArray, "can't backfill more than %d elements", maxPadding)
		}
	}
	// Creating below an existing _id changes it; creating _id itself (in a
	// document without one) does not.
	if len(c.taken) > 0 && c.taken[0] == "_id" {
		return mongoerr.New(mongoerr.ImmutableField, "Updating the path '%s' would modify the immutable field '_id'", c.fullPath())
	}
	top := leaf
	for i := len(c.create) - 1; i >= 1; i-- {
		d := emptyDocNode()
		d.appendField(c.create[i], top)
		top = d
	}
	if base.isArray() {
		idx, _ := isNumeric(first)
		for len(base.kids) < idx {
			base.kids = append(base.kids, kid{n: nullNode()})
		}
		base.kids = append(base.kids, kid{n: top})
	} else {
		base.appendField(first, top)
	}
	s.wrote(append(c.taken[:len(c.taken):len(c.taken)], first))
	s.changed = true
	return nil
}

// checkDollarFields validates the top-level $-prefixed fields leaves wrote
// in an existing document: only DBRef fields ($ref, $id, $db, in that
// order) may be stored there (DollarPrefixedFieldName, InvalidDBRef).
func (s *applyState) checkDollarFields() error {
	for _, name := range s.dollars {
		i, n := s.root.field(name)
		if n == nil {
			continue
		}
		if err := validateDollarField(s.root.kids, i); err != nil {
			return err
		}
	}
	return nil
}

func validateDollarField(kids []kid, i int) error {
	name := string(kids[i].name)
	at := func(j int) string {
		if j < 0 || j >= len(kids) {
			return ""
		}
		return string(kids[j].name)
	}
	switch name {
	case "$db":
		if kids[i].n.t != bsoncore.TypeString {
			return errorf(codeInvalidDBRef, "The DBRef $db field must be a String, not a %s", typeName(kids[i].n.t))
		}
		if at(i-1) != "$id" {
			return errorf(codeInvalidDBRef, "Found $db field without a $id before it, which is invalid.")
		}
		i--
		fallthrough
	case "$id":
		if at(i-1) != "$ref" {
			return errorf(codeInvalidDBRef, "Found $id field without a $ref before it, which is invalid.")
		}
		i--
		fallthrough
	case "$ref":
		if kids[i].n.t != bsoncore.TypeString {
			return errorf(codeInvalidDBRef, "The DBRef $ref field must be a String, not a %s", typeName(kids[i].n.t))
		}
		if at(i+1) != "$id" {
			return errorf(codeInvalidDBRef, "The DBRef $ref field must be followed by a $id field")
		}
		return nil
	}
	return mongoerr.New(mongoerr.DollarPrefixedFieldName, "The dollar ($) prefixed field '%s' in '%s' is not allowed in the context of an update's replacement document. Consider using an aggregation pipeline with $replaceWith.", name, name)
}

// idOf is the value of doc's _id field (Type 0 if none).
func idOf(doc *node) bsoncore.Value {
	if err := doc.expand(); err != nil {
		return bsoncore.Value{}
	}
	if _, n := doc.field("_id"); n != nil {
		return n.value()
	}
	return bsoncore.Value{}
}

// describe renders an element as MongoDB's messages do: "name: value".
func describe(name string, n *node) string {
	return name + ": " + n.value().String()
}
