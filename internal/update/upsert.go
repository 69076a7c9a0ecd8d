package update

import (
	"slices"
	"strings"

	"github.com/cairndb/cairn/internal/bsonx"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Upserts. When an update with upsert: true matches nothing, MongoDB builds
// the document to insert from the filter and the update:
//
//  1. The filter's equality conditions seed a new document: {a: 1},
//     {"b.c": 2}, {d: {$eq: 3}}, the conditions of $and, of an $or with a
//     single branch, an $in of one value, each value of $all. Other
//     conditions ($gt, $exists, regexes, $elemMatch, …) contribute nothing.
//     Two conditions on the same path, or on a path and its prefix, are an
//     error (NotSingleValueField). The seed's fields are in path order. A
//     replacement update takes only _id from the filter, and only as a
//     whole value ({"_id.x": 1} is NotExactValueField).
//  2. The update applies to the seed as an insert: $setOnInsert applies,
//     $-prefixed top-level names are allowed, and an _id that came from the
//     filter may not change.
//  3. _id moves to the front; one is generated (ApplyContext.NewID) if
//     there is none.
//  4. The document is validated as an insert (_id type) and may not exceed
//     16 MiB (code 17420).

// equality is one equality condition of a filter.
type equality struct {
	path   path
	dotted string
	val    bsoncore.Value
}

// UpsertSeed returns the document an upsert starts from: the filter's
// equality fields (all of them for an operator update, only _id for a
// replacement).
func (u *Update) UpsertSeed(filter bsoncore.Document) (bsoncore.Document, error) {
	n, err := u.seed(filter)
	if err != nil {
		return nil, err
	}
	return n.appendValue(nil), nil
}

func (u *Update) seed(filter bsoncore.Document) (*node, error) {
	if n, ok := bsonx.ValueSize(bsoncore.TypeEmbeddedDocument, filter); !ok || n != len(filter) {
		return nil, failedToParse("upsert: the filter is not valid BSON")
	}
	var eqs []equality
	if err := extractEqualities(filter, &eqs); err != nil {
		return nil, err
	}
	if u.kind == KindReplacement {
		kept := eqs[:0]
		for _, e := range eqs {
			if e.path[0] != "_id" {
				continue
			}
			if len(e.path) > 1 {
				return nil, errorf(codeNotExactValueField, "field at '_id' must be exactly specified, field at sub-path '%s'found", e.dotted)
			}
			kept = append(kept, e)
		}
		eqs = kept
	}
	slices.SortStableFunc(eqs, func(a, b equality) int { return strings.Compare(a.dotted, b.dotted) })
	for i := 1; i < len(eqs); i++ {
		for j := 0; j < i; j++ {
			a, b := eqs[j], eqs[i]
			switch {
			case a.dotted == b.dotted:
				return nil, errorf(codeNotSingleValueField, "cannot infer query fields to set, path '%s' is matched twice", a.dotted)
			case isPrefix(a.path, b.path):
				return nil, errorf(codeNotSingleValueField, "cannot infer query fields to set, both paths '%s' and '%s' are matched", b.dotted, a.dotted)
			}
		}
	}
	root := emptyDocNode()
	for _, e := range eqs {
		cur := root
		for _, part := range e.path[:len(e.path)-1] {
			_, next := cur.field(part)
			if next == nil {
				next = emptyDocNode()
				cur.appendField(part, next)
			}
			cur = next
		}
		cur.appendField(e.path[len(e.path)-1], newNode(e.val))
	}
	return root, nil
}

// extractEqualities collects the equality conditions of a filter document,
// as MongoDB's extractEqualityMatches over the canonical query.
func extractEqualities(filter []byte, out *[]equality) error {
	elems := filter[4 : len(filter)-1]
	for len(elems) > 0 {
		t, key, val, rest, ok := bsonx.NextElement(elems)
		if !ok {
			return failedToParse("upsert: the filter is not valid BSON")
		}
		elems = rest
		k := string(key)
		v := bsoncore.Value{Type: t, Data: val}
		if strings.HasPrefix(k, "$") {
			switch k {
			case "$expr":
				return errorf(codeQueryFeatureNotAllowed, "$expr is not allowed in the query predicate for an upsert")
			case "$and", "$or":
				if t != bsoncore.TypeArray {
					continue
				}
				branches := arrayValues(v)
				if k == "$or" && len(branches) != 1 {
					// An $or of several branches fixes no field; one of a
					// single branch is that branch.
					if err := rejectExpr(branches); err != nil {
						return err
					}
					continue
				}
				for _, b := range branches {
					if b.Type == bsoncore.TypeEmbeddedDocument {
						if err := extractEqualities(b.Data, out); err != nil {
							return err
						}
					}
				}
			case "$nor":
				if t == bsoncore.TypeArray {
					if err := rejectExpr(arrayValues(v)); err != nil {
						return err
					}
				}
			}
			continue
		}
		p, err := parsePath(k)
		if err != nil {
			return err
		}
		add := func(v bsoncore.Value) { *out = append(*out, equality{path: p, dotted: k, val: v}) }
		switch {
		case t == bsoncore.TypeRegex:
			// A regex matches; it fixes nothing.
		case t == bsoncore.TypeEmbeddedDocument && isOperatorDoc(val):
			ops := val[4 : len(val)-1]
			for len(ops) > 0 {
				ot, okey, oval, orest, ok := bsonx.NextElement(ops)
				if !ok {
					break
				}
				ops = orest
				ov := bsoncore.Value{Type: ot, Data: oval}
				switch string(okey) {
				case "$eq":
					add(ov)
				case "$in":
					if ot == bsoncore.TypeArray {
						if vals := arrayValues(ov); len(vals) == 1 && vals[0].Type != bsoncore.TypeRegex {
							add(vals[0])
						}
					}
				case "$all":
					if ot == bsoncore.TypeArray {
						for _, x := range arrayValues(ov) {
							if x.Type != bsoncore.TypeRegex && !(x.Type == bsoncore.TypeEmbeddedDocument && hasField(x.Data, "$elemMatch")) {
								add(x)
							}
						}
					}
				}
			}
		default:
			add(v)
		}
	}
	return nil
}

// isOperatorDoc reports whether a filter value is an operator document
// ({$gt: 1}) rather than a document to compare with; DBRefs ({$ref, $id})
// are documents.
func isOperatorDoc(doc []byte) bool {
	if len(doc) <= 5 {
		return false
	}
	_, key, _, _, ok := bsonx.NextElement(doc[4 : len(doc)-1])
	return ok && strings.HasPrefix(string(key), "$") && string(key) != "$ref" && string(key) != "$id" && string(key) != "$db"
}

// rejectExpr refuses $expr anywhere in branches the seed ignores.
func rejectExpr(branches []bsoncore.Value) error {
	for _, b := range branches {
		if b.Type != bsoncore.TypeEmbeddedDocument {
			continue
		}
		var scratch []equality
		if err := extractEqualities(b.Data, &scratch); err != nil {
			return err
		}
	}
	return nil
}

// Upsert builds the document an upsert inserts when the filter matched
// nothing; see the steps above. ctx.ArrayPos and ctx.IsUpsertInsert are
// ignored (there is no match, so "$" fails as in MongoDB).
func (u *Update) Upsert(filter bsoncore.Document, ctx ApplyContext) (bsoncore.Document, error) {
	seed, err := u.seed(filter)
	if err != nil {
		return nil, err
	}
	ctx.IsUpsertInsert, ctx.ArrayPos = true, -1
	doc, _, err := u.Apply(seed.appendValue(nil), ctx)
	if err != nil {
		return nil, err
	}
	root, err := rootNode(doc)
	if err != nil {
		return nil, err
	}
	if err := root.expand(); err != nil {
		return nil, err
	}
	if i, id := root.field("_id"); id != nil {
		if i > 0 {
			k := root.kids[i]
			root.kids = slices.Insert(slices.Delete(root.kids, i, i+1), 0, k)
		}
	} else if ctx.NewID != nil {
		root.kids = slices.Insert(root.kids, 0, kid{name: []byte("_id"), n: newNode(ctx.NewID())})
	}
	if err := validateTopLevel(root, true); err != nil {
		return nil, err
	}
	out := root.appendValue(make([]byte, 0, len(doc)+32))
	if len(out) > MaxDocumentSize {
		return nil, errorf(codeDocTooLargeForUpsert, "Document to upsert is larger than %d", MaxDocumentSize)
	}
	return out, nil
}
