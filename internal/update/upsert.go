package update

import (
	"slices"
	"strings"

	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/query"
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
	if err := extractEqualities(query.TreeOf(filter), &eqs); err != nil {
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

// extractEqualities collects the equality conditions of a filter, read
// through query's filter tree, as MongoDB's extractEqualityMatches over the
// canonical query.
func extractEqualities(filter query.Conjunction, out *[]equality) error {
	for _, c := range filter {
		switch c.Kind {
		case query.OpaqueClause:
			if c.Key == "$expr" {
				return errorf(codeQueryFeatureNotAllowed, "$expr is not allowed in the query predicate for an upsert")
			}
			continue
		case query.AndClause, query.OrClause:
			if c.Kind == query.OrClause && len(c.Branches) != 1 {
				// An $or of several branches fixes no field; one of a
				// single branch is that branch.
				if err := rejectExpr(c.Branches); err != nil {
					return err
				}
				continue
			}
			for _, b := range c.Branches {
				if err := extractEqualities(b, out); err != nil {
					return err
				}
			}
			continue
		case query.NorClause:
			if err := rejectExpr(c.Branches); err != nil {
				return err
			}
			continue
		}
		p, err := parsePath(c.Key)
		if err != nil {
			return err
		}
		add := func(v bsoncore.Value) { *out = append(*out, equality{path: p, dotted: c.Key, val: v}) }
		for _, op := range c.Ops {
			switch op.Name {
			case "$eq":
				add(op.Value)
			case "$in":
				if len(op.List) == 1 && op.List[0].Type != bsoncore.TypeRegex {
					add(op.List[0])
				}
			case "$all":
				for _, it := range op.Sub {
					if it.Name == "$eq" {
						add(it.Value)
					}
				}
			}
			// A regex matches; it fixes nothing. So do the other
			// operators.
		}
	}
	return nil
}

// rejectExpr refuses $expr anywhere in branches the seed ignores.
func rejectExpr(branches []query.Conjunction) error {
	for _, b := range branches {
		var scratch []equality
		if err := extractEqualities(b, &scratch); err != nil {
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
