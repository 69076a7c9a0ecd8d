package commands

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// matcher reports whether a document satisfies a filter.
type matcher func(doc bsoncore.Document) bool

// compileFilter turns a filter document into a matcher.
//
// Until the query language lands (issue 4) it understands the subset every
// CRUD client starts with: top-level equality on non-dotted fields, with
// MongoDB's semantics for that subset (an array field matches when an element
// or the whole array equals the value; null matches null and missing).
// Anything else is refused with BadValue, never silently misread.
func compileFilter(filter bsoncore.Document) (matcher, error) {
	if len(filter) == 0 {
		return func(bsoncore.Document) bool { return true }, nil
	}
	elems, err := filter.Elements()
	if err != nil {
		return nil, mongoerr.New(mongoerr.BadValue, "invalid filter: %v", err)
	}
	type eq struct {
		key string
		val bsoncore.Value
	}
	var eqs []eq
	for _, el := range elems {
		k, v := el.Key(), el.Value()
		if strings.HasPrefix(k, "$") || strings.Contains(k, ".") || isOperatorDoc(v) || v.Type == bsoncore.TypeRegex {
			return nil, mongoerr.New(mongoerr.BadValue, "filter %s needs the query language, which this build does not have yet", bsoncore.Document(filter))
		}
		eqs = append(eqs, eq{k, v})
	}
	return func(doc bsoncore.Document) bool {
		for _, e := range eqs {
			if !equalityMatches(doc, e.key, e.val) {
				return false
			}
		}
		return true
	}, nil
}

func equalityMatches(doc bsoncore.Document, key string, want bsoncore.Value) bool {
	got, err := doc.LookupErr(key)
	if err != nil {
		return want.Type == bsoncore.TypeNull
	}
	if bsonx.Equal(got, want) {
		return true
	}
	if arr, ok := got.ArrayOK(); ok {
		vals, _ := arr.Values()
		for _, v := range vals {
			if bsonx.Equal(v, want) {
				return true
			}
		}
	}
	return false
}

func isOperatorDoc(v bsoncore.Value) bool {
	d, ok := v.DocumentOK()
	if !ok {
		return false
	}
	el, err := d.IndexErr(0)
	return err == nil && strings.HasPrefix(el.Key(), "$")
}

// idEquality returns the _id a filter selects when it is exactly {_id: v}
// with a plain value: the point-lookup fast path.
func idEquality(filter bsoncore.Document) (bsoncore.Value, bool) {
	elems, err := filter.Elements()
	if err != nil || len(elems) != 1 || elems[0].Key() != "_id" {
		return bsoncore.Value{}, false
	}
	v := elems[0].Value()
	if isOperatorDoc(v) || v.Type == bsoncore.TypeRegex || v.Type == bsoncore.TypeArray {
		return bsoncore.Value{}, false
	}
	return v, true
}
