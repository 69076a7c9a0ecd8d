package planner

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/index"
	"github.com/cairndb/cairn/internal/query"
)

// Covered plans answer from index keys alone (IXSCAN, then
// PROJECTION_COVERED, no FETCH). The scan rebuilds, from each key, a
// document of the index's fields, applies the filter to it, and the
// projection shapes it.
//
// Invariant "Keys stand for documents": a plan is covered only when the
// rebuilt document answers the filter, the sort and the projection exactly
// as the stored one would: the index is not multikey (so each field has
// one scalar or subdocument value, which the key holds), the filter, sort
// and projection name only index fields, the filter uses only operators
// that read values, not types (keys keep numbers' values, not their
// types; $type too when the entries have type bits), no path has a numeric component ("a.0" names an array element,
// which a rebuilt document would make a field), and the projection is a
// plain inclusion (_id excluded unless indexed). A key part that may not be
// the stored value, type included (see keyValueExact), makes that one
// document fetched and used instead (and counted in docsExamined). With
// type bits (indexes created since they exist, catalog.Index.TypeBits)
// every part is exact but a missing dotted field, whose key cannot tell
// {} from {a: {}}; so covered plans on numeric keys examine no documents.

// coveredOps are the operators a covered filter may use.
var coveredOps = map[string]bool{
	"$eq": true, "$ne": true, "$gt": true, "$gte": true, "$lt": true, "$lte": true,
	"$in": true, "$nin": true, "$exists": true, "$regex": true, "$options": true, "$mod": true,
}

// coverable reports whether a scan of ix can answer the query without
// fetching documents. A query with a shard filter (Query.Owned) fetches:
// the filter reads the shard key from the document.
func (pl *planning) coverable(ix *indexRef) bool {
	q := pl.q
	if q.Proj == nil || q.Owned != nil || q.Positional || ix.multikey || ix.isID || ix.spec.IsHashed() || ix.spec.IsWildcard() || ix.spec.IsGeo() || ix.spec.Collation != nil {
		return false
	}
	fields := map[string]bool{}
	for i, f := range ix.spec.KeyPattern {
		for j, g := range ix.spec.KeyPattern {
			if i != j && strings.HasPrefix(g.Path, f.Path+".") {
				return false // {a: 1, "a.b": 1}: one value cannot rebuild both
			}
		}
		for _, part := range f.Parts {
			if isNumeric(part) {
				return false
			}
		}
		fields[f.Path] = true
	}
	if !coveredProjection(q.RawProj, fields) || !coveredFilter(q.Filter.Tree(), fields, ix.typeBits) {
		return false
	}
	if q.Sort != nil {
		keys, ok := sortKeys(q.RawSort)
		if !ok {
			return false
		}
		for _, k := range keys {
			if !fields[k.path] {
				return false
			}
		}
	}
	return true
}

// coveredProjection reports a plain inclusion of index fields.
func coveredProjection(proj bsoncore.Document, fields map[string]bool) bool {
	elems, err := proj.Elements()
	if err != nil || len(elems) == 0 {
		return false
	}
	idSeen := false
	for _, el := range elems {
		k := el.Key()
		on, ok := truthy(el.Value())
		if !ok {
			return false
		}
		if k == "_id" {
			idSeen = true
			if on && !fields["_id"] {
				return false
			}
			continue
		}
		if !on || strings.HasPrefix(k, "$") || strings.Contains(k, ".$") || !fields[k] {
			return false
		}
	}
	return idSeen || fields["_id"]
}

// truthy reads a projection flag: a number or a boolean.
func truthy(v bsoncore.Value) (on, ok bool) {
	switch v.Type {
	case bsoncore.TypeBoolean:
		return v.Boolean(), true
	case bsoncore.TypeInt32:
		return v.Int32() != 0, true
	case bsoncore.TypeInt64:
		return v.Int64() != 0, true
	case bsoncore.TypeDouble:
		return v.Double() != 0, true
	}
	return false, false
}

// coveredFilter reports a filter over index fields only, with value
// operators only, or $type as well when typed (the keys' type bits restore
// every value's type).
func coveredFilter(c query.Conjunction, fields map[string]bool, typed bool) bool {
	for i := range c {
		cl := &c[i]
		switch cl.Kind {
		case query.AndClause, query.OrClause, query.NorClause:
			for _, b := range cl.Branches {
				if !coveredFilter(b, fields, typed) {
					return false
				}
			}
			continue
		case query.PathClause:
		default:
			return false
		}
		if !fields[cl.Key] {
			return false
		}
		for _, op := range cl.Ops {
			if !coveredOps[op.Name] && !(typed && op.Name == "$type") {
				return false
			}
		}
	}
	return true
}

// isNumeric reports a path component that may name an array element.
func isNumeric(part string) bool {
	if part == "" {
		return false
	}
	for _, c := range part {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// keyDocument rebuilds a document from an index key's values, nesting
// dotted paths; ok is false when a value may not be the stored one (see
// keyValueExact). typed says the values were restored with the entry's
// type bits (a missing field is then the zero Value, and is left out).
func keyDocument(dst []byte, fields []index.Field, vals []bsoncore.Value, typed bool) ([]byte, bool) {
	for i, v := range vals {
		if typed {
			if v.Type == 0 && len(fields[i].Parts) > 1 || v.Type == bsoncore.TypeArray {
				return dst, false
			}
			continue
		}
		if !keyValueExact(v) {
			return dst, false
		}
	}
	idx, dst := bsoncore.AppendDocumentStart(dst)
	dst = appendLevel(dst, fields, vals, 0)
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst, true
}

// keyValueExact reports whether a value decoded from a key without type
// bits is the stored value, type included. Not so for null and undefined (either may stand for
// a missing field), numbers (keys keep a number's value, and decode it as
// the narrowest exact type: a stored 5.0 or NumberLong(5) comes back as
// int32 5), and documents and arrays (they may hold numbers). Strings are
// taken as exact although a stored symbol also decodes as a string: symbols
// are deprecated and rare, and refusing strings would cover almost nothing.
func keyValueExact(v bsoncore.Value) bool {
	switch v.Type {
	case bsoncore.TypeNull, bsoncore.TypeUndefined,
		bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128,
		bsoncore.TypeEmbeddedDocument, bsoncore.TypeArray:
		return false
	}
	return true
}

// appendLevel appends the fields at path depth depth, grouping paths that
// share a component into one subdocument (in key pattern order).
func appendLevel(dst []byte, fields []index.Field, vals []bsoncore.Value, depth int) []byte {
	done := make([]bool, len(fields))
	for i, f := range fields {
		if done[i] {
			continue
		}
		name := f.Parts[depth]
		if len(f.Parts) == depth+1 {
			if vals[i].Type != 0 { // a missing field stays missing
				dst = bsoncore.AppendValueElement(dst, name, vals[i])
			}
			done[i] = true
			continue
		}
		var subF []index.Field
		var subV []bsoncore.Value
		for j := i; j < len(fields); j++ {
			if !done[j] && len(fields[j].Parts) > depth+1 && fields[j].Parts[depth] == name {
				subF, subV = append(subF, fields[j]), append(subV, vals[j])
				done[j] = true
			}
		}
		var idx int32
		idx, dst = bsoncore.AppendDocumentElementStart(dst, name)
		dst = appendLevel(dst, subF, subV, depth+1)
		dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	}
	return dst
}
