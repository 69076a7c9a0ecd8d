package update

import (
	"strings"

	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/query"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// $pull removes the array elements that meet a condition, $pullAll those
// equal to any of a list of values.
//
// $pull's argument is read as MongoDB reads it:
//   - a document whose first field is not a query operator is a query on
//     the elements that are documents ({$pull: {items: {qty: {$lt: 1}}}});
//   - a document of query operators, or a regex, is a condition on each
//     element's value ({$pull: {scores: {$gte: 6}}}), matched as the value
//     of a field, so arrays nested in the array are traversed;
//   - anything else removes the elements equal to it (MongoDB's comparison;
//     a document must match field for field, in order).

func init() {
	register("$pull", parsePull)
	register("$pullAll", parsePullAll)
}

type pullNode struct {
	object  *query.Filter    // query on document elements
	wrapped *query.Filter    // condition on {v: element}
	equal   []bsoncore.Value // equality ($pullAll: any of them)
	all     bool             // $pullAll
}

// pathOperators are MongoDB's path-accepting query operators: a $pull
// document starting with one of them is a condition on the element itself.
var pathOperators = map[string]bool{
	"$eq": true, "$ne": true, "$gt": true, "$gte": true, "$lt": true, "$lte": true,
	"$in": true, "$nin": true, "$all": true, "$exists": true, "$mod": true,
	"$type": true, "$regex": true, "$options": true, "$elemMatch": true,
	"$size": true, "$not": true, "$bitsAllSet": true, "$bitsAllClear": true,
	"$bitsAnySet": true, "$bitsAnyClear": true, "$geoIntersects": true,
	"$geoWithin": true, "$near": true, "$nearSphere": true, "$within": true,
	"$maxDistance": true, "$minDistance": true, "$jsonSchema": false,
}

func parsePull(_ path, arg bsoncore.Value) (updNode, error) {
	switch arg.Type {
	case bsoncore.TypeEmbeddedDocument:
		first := ""
		if len(arg.Data) > 5 {
			_, key, _, _, ok := bsonx.NextElement(arg.Data[4 : len(arg.Data)-1])
			if ok {
				first = string(key)
			}
		}
		if !strings.HasPrefix(first, "$") || !pathOperators[first] {
			f, err := query.Parse(arg.Data)
			if err != nil {
				return nil, err
			}
			return &pullNode{object: f}, nil
		}
		fallthrough
	case bsoncore.TypeRegex:
		f, err := query.Parse(wrap(nil, "v", arg))
		if err != nil {
			return nil, err
		}
		return &pullNode{wrapped: f}, nil
	}
	return &pullNode{equal: []bsoncore.Value{arg}}, nil
}

func parsePullAll(_ path, arg bsoncore.Value) (updNode, error) {
	if arg.Type != bsoncore.TypeArray {
		return nil, badValue("$pullAll requires an array argument but was given a %s", typeName(arg.Type))
	}
	return &pullNode{equal: arrayValues(arg), all: true}, nil
}

func (n *pullNode) matches(s *applyState, v bsoncore.Value) (bool, error) {
	switch {
	case n.object != nil:
		if v.Type != bsoncore.TypeEmbeddedDocument {
			return false, nil
		}
		r, err := n.object.Exec(v.Data)
		return r.Matched, err
	case n.wrapped != nil:
		s.scratch = wrap(s.scratch, "v", v)
		r, err := n.wrapped.Exec(s.scratch)
		return r.Matched, err
	}
	return containsValue(n.equal, v), nil
}

func (n *pullNode) apply(s *applyState, c cursor) error {
	if !c.complete() {
		return checkViability(c)
	}
	if !c.elem.isArray() {
		return badValue("Cannot apply $pull to a non-array value")
	}
	if err := c.elem.expand(); err != nil {
		return err
	}
	kept := c.elem.kids[:0:0]
	for _, k := range c.elem.kids {
		m, err := n.matches(s, k.n.value())
		if err != nil {
			return err
		}
		if !m {
			kept = append(kept, k)
		}
	}
	if len(kept) == len(c.elem.kids) {
		return nil
	}
	c.elem.kids = kept
	return s.replaced(c)
}
