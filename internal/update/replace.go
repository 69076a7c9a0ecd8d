package update

import (
	"encoding/binary"
	"strings"

	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Replacement updates: the document becomes the replacement, keeping its
// _id. The _id is always the first field, as MongoDB documents for every
// write ("Document Field Order"): the replacement's own _id is moved there,
// and a replacement without _id gets the old one there; a replacement with a
// different _id is refused (ImmutableField). As in
// MongoDB, top-level timestamps that are zero (other than _id) become the
// current timestamp, and top-level field names may not start with "$"
// unless the replacement is an upsert's insert.

func (u *Update) replace(doc bsoncore.Document, ctx *ApplyContext) (bsoncore.Document, error) {
	old, err := rootNode(doc)
	if err != nil {
		return nil, err
	}
	if err := old.expand(); err != nil {
		return nil, err
	}
	repl := &node{t: bsoncore.TypeEmbeddedDocument, data: u.replacement}
	if err := repl.expand(); err != nil {
		return nil, err
	}
	ids := 0
	for _, k := range repl.kids {
		if string(k.name) == "_id" {
			ids++
		}
	}
	if ids > 1 { // MongoDB's storage validation of the resulting document
		return nil, mongoerr.New(mongoerr.BadValue, "Can't have multiple _id fields in one document")
	}
	out := emptyDocNode()
	_, oldID := old.field("_id")
	if _, replID := repl.field("_id"); replID != nil {
		out.appendField("_id", replID)
	} else if oldID != nil {
		out.appendField("_id", oldID)
	}
	for _, k := range repl.kids {
		if string(k.name) == "_id" {
			continue // placed first above
		}
		n := k.n
		if n.t == bsoncore.TypeTimestamp && string(k.name) != "_id" && binary.LittleEndian.Uint64(n.data) == 0 && !ctx.KeepEmptyTimestamps {
			t, i := ctx.timestamp()
			n = newNode(bsoncore.Value{Type: bsoncore.TypeTimestamp, Data: binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, i), t)})
		}
		out.kids = append(out.kids, kid{name: k.name, n: n})
	}
	if err := validateTopLevel(out, ctx.IsUpsertInsert || u.fromPipeline); err != nil {
		return nil, err
	}
	_, newID := out.field("_id")
	if newID != nil && newID.isArray() {
		return nil, errorf(codeNotSingleValueField, "After applying the update to the document, the (immutable) field '_id' was found to be an array or array descendant.")
	}
	if oldID != nil && bsonx.Compare(oldID.value(), newID.value()) != 0 {
		return nil, mongoerr.New(mongoerr.ImmutableField, "After applying the update, the (immutable) field '_id' was found to have been altered to %s", describe("_id", newID))
	}
	return out.appendValue(make([]byte, 0, len(u.replacement)+32)), nil
}

// validateTopLevel checks a whole new document as MongoDB's
// storage_validation::scanDocument: a valid _id, no element deeper than
// 100 levels, and, unless the document is inserted, no $-prefixed
// top-level field other than DBRef fields.
func validateTopLevel(doc *node, insert bool) error {
	for i, k := range doc.kids {
		name := string(k.name)
		if name == "_id" {
			if err := validateID(k.n); err != nil {
				return err
			}
		} else if strings.HasPrefix(name, "$") && !insert {
			if err := validateDollarField(doc.kids, i); err != nil {
				return err
			}
		}
		if k.n.isContainer() {
			if err := checkDepth(1, k.n.value()); err != nil {
				return err
			}
		}
	}
	return nil
}

// validateID is MongoDB's storageValidIdField: an _id may not be an array,
// a regex or undefined, and an _id document may not have $-prefixed fields
// (DBRefs aside).
func validateID(n *node) error {
	switch n.t {
	case bsoncore.TypeRegex, bsoncore.TypeArray, bsoncore.TypeUndefined:
		return mongoerr.New(mongoerr.InvalidIDField, "The '_id' value cannot be of type %s", typeName(n.t))
	case bsoncore.TypeEmbeddedDocument:
		sub := &node{t: n.t, data: n.value().Data}
		if err := sub.expand(); err != nil {
			return err
		}
		for i, k := range sub.kids {
			if strings.HasPrefix(string(k.name), "$") {
				if err := validateDollarField(sub.kids, i); err != nil {
					if e, ok := mongoerr.As(err); ok && e.Code == mongoerr.DollarPrefixedFieldName {
						return mongoerr.New(e.Code, "_id fields may not contain '$'-prefixed fields: %s", e.Msg)
					}
					return err
				}
			}
		}
	}
	return nil
}
