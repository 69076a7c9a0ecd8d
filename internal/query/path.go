package query

import (
	"bytes"
	"encoding/binary"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// missing is the value a path yields where the field does not exist (MongoDB's
// EOO element): the zero Value.
var missing = bsoncore.Value{}

// elems iterates over the elements of a framed document or array without
// allocating. A malformed element ends the iteration (invariant
// "malformed input never panics").
type elems struct{ rest []byte }

func elemsOfBytes(d []byte) elems {
	if len(d) < 5 {
		return elems{}
	}
	n := int(int32(binary.LittleEndian.Uint32(d)))
	if n < 5 || n > len(d) {
		return elems{}
	}
	return elems{rest: d[4 : n-1]}
}

func elemsOf(v bsoncore.Value) elems { return elemsOfBytes(v.Data) }

func (it *elems) next() (key []byte, v bsoncore.Value, ok bool) {
	e, rest, ok := bsoncore.ReadElement(it.rest)
	if !ok {
		it.rest = nil
		return nil, missing, false
	}
	it.rest = rest
	k := bytes.IndexByte(e[1:], 0)
	return e[1 : 1+k], bsoncore.Value{Type: bsoncore.Type(e[0]), Data: e[2+k:]}, true
}

// lookup returns the first field of document doc named name, or missing.
func lookup(doc []byte, name string) bsoncore.Value {
	it := elemsOfBytes(doc)
	for {
		k, v, ok := it.next()
		if !ok {
			return missing
		}
		if string(k) == name {
			return v
		}
	}
}

// path is a dotted field path split into its components.
type path struct {
	dotted string
	parts  []string
}

// idParts is the path _id's one part, shared: a path's parts are never
// written.
var idParts = []string{"_id"}

func newPath(dotted string) path {
	if dotted == "_id" {
		return path{dotted: dotted, parts: idParts}
	}
	if strings.IndexByte(dotted, '.') < 0 {
		return path{dotted: dotted, parts: []string{dotted}} // one part (_id): what Split gives, with less work
	}
	return path{dotted: dotted, parts: strings.Split(dotted, ".")}
}

// isIndex reports whether a path component can name an array element:
// all decimal digits (MongoDB's isAllDigits).
func isIndex(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// walker visits, for one predicate, every value a path reaches in a
// document, as MongoDB's BSONElementIterator does (the "path" invariant in
// doc.go):
//
//   - fields are looked up through documents; a scalar or a missing field
//     in the middle of the path yields missing once;
//   - an array in the middle of the path is traversed: each element that is
//     a document continues the rest of the path; when the next component is
//     numeric, the element at that index also continues (or is yielded, if
//     the index ends the path), so "a.0" is both an index and a field name;
//     an array element of an array is only entered through an index;
//   - an array at the end of the path yields each element and then the
//     array itself, unless the predicate looks at arrays whole ($size,
//     $elemMatch), which see only the array.
//
// Each yielded value carries the position in the outermost array traversed
// implicitly (-1 if none), which the positional projection and update need.
type walker struct {
	pred   pred
	expand bool // yield the elements of a leaf array
	// sortKeys yields a leaf array's elements but not the array itself,
	// and undefined for an empty one (the sort-key rule).
	sortKeys bool
	st       *state
}

// yield tests one value and records its array position on success.
func (w *walker) yield(v bsoncore.Value, pos int) bool {
	if !w.pred.matchValue(v, w.st) {
		return false
	}
	if pos >= 0 {
		w.st.pos = pos
	}
	return true
}

// fromDoc walks parts from document doc.
func (w *walker) fromDoc(doc []byte, parts []string, pos int) bool {
	i := 0
	v := lookup(doc, parts[0])
	for v.Type != bsoncore.TypeArray && i < len(parts)-1 {
		if v.Type != bsoncore.TypeEmbeddedDocument {
			return w.yield(missing, pos)
		}
		i++
		v = lookup(v.Data, parts[i])
	}
	if v.Type != bsoncore.TypeArray {
		return w.yield(v, pos)
	}
	rest := parts[i+1:]
	if len(rest) == 0 {
		if w.expand {
			it := elemsOf(v)
			k := 0
			for ; ; k++ {
				_, e, ok := it.next()
				if !ok {
					break
				}
				if w.yield(e, outer(pos, k)) {
					return true
				}
			}
			if w.sortKeys {
				if k == 0 {
					return w.yield(undefinedKey, pos)
				}
				return false
			}
		}
		return w.yield(v, pos)
	}
	return w.inArray(v, rest, pos)
}

// inArray walks the rest of a path over the elements of array arr.
func (w *walker) inArray(arr bsoncore.Value, rest []string, pos int) bool {
	index := isIndex(rest[0])
	it := elemsOf(arr)
	for k := 0; ; k++ {
		key, e, ok := it.next()
		if !ok {
			return false
		}
		atIndex := index && string(key) == rest[0]
		switch {
		case e.Type == bsoncore.TypeEmbeddedDocument:
			if w.fromDoc(e.Data, rest, outer(pos, k)) {
				return true
			}
			if atIndex {
				if len(rest) == 1 {
					if w.yield(e, pos) {
						return true
					}
				} else if w.fromDoc(e.Data, rest[1:], pos) {
					return true
				}
			}
		case atIndex && len(rest) == 1:
			if w.yield(e, pos) {
				return true
			}
		case atIndex && e.Type == bsoncore.TypeArray:
			if w.inArray(e, rest[1:], pos) {
				return true
			}
		}
	}
}

func outer(pos, k int) int {
	if pos >= 0 {
		return pos
	}
	return k
}
