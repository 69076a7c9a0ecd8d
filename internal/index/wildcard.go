package index

import (
	"bytes"
	"encoding/binary"
	"slices"
	"strings"
	"sync"

	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/keystring"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/query"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// checkWildcardProjection checks a wildcardProjection beyond what a find
// projection allows: only inclusions and exclusions (numbers, booleans,
// sub-projections of them), no computed fields, positional paths or
// operators (51271). Mixing inclusion and exclusion is left to
// query.ParseProjection (31253/31254).
func checkWildcardProjection(proj bsoncore.Document) error {
	elems, _ := proj.Elements()
	for _, e := range elems {
		k, v := e.Key(), e.Value()
		if strings.HasPrefix(k, "$") || strings.HasSuffix(k, ".$") || strings.Contains(k, ".$.") {
			return mongoerr.New(CodeWildcardProjectionComputed, "Wildcard projections may only include or exclude fields, not '%s'", k)
		}
		switch {
		case isNumber(v.Type), v.Type == bsoncore.TypeBoolean:
		case v.Type == bsoncore.TypeEmbeddedDocument && !isOperatorDoc(v.Document()):
			if err := checkWildcardProjection(v.Document()); err != nil {
				return err
			}
		default:
			return mongoerr.New(CodeWildcardProjectionComputed, "Wildcard projections may only include or exclude fields; '%s' is computed", k)
		}
	}
	return nil
}

// prepareWildcard compiles the projection a wildcard index applies before
// walking a document: {root: 1} for "root.$**", the wildcardProjection for
// "$**", and in both cases _id excluded unless the projection names it
// (MongoDB's wildcard projection policy excludes _id by default). A "$**"
// index without a projection just skips the top-level _id.
func (p *specParser) prepareWildcard() error {
	s := p.s
	f := s.KeyPattern[0]
	var proj bsoncore.Document
	switch {
	case len(f.Parts) > 0:
		root := strings.Join(f.Parts, ".")
		b := bsoncore.NewDocumentBuilder().AppendInt32(root, 1)
		if !namesID(root) {
			b.AppendInt32("_id", 0)
		}
		proj = b.Build()
	case s.WildcardProjection != nil:
		elems, _ := s.WildcardProjection.Elements()
		b := bsoncore.NewDocumentBuilder()
		mentionsID := false
		for _, e := range elems {
			b.AppendValue(e.Key(), e.Value())
			mentionsID = mentionsID || namesID(e.Key())
		}
		if !mentionsID {
			b.AppendInt32("_id", 0)
		}
		proj = b.Build()
	default:
		s.skipID = true
		return nil
	}
	pr, err := query.ParseProjection(proj, nil)
	if err != nil {
		return err
	}
	s.proj = pr
	return nil
}

func namesID(path string) bool { return path == "_id" || strings.HasPrefix(path, "_id.") }

// wildcardGen is the state of one wildcard key generation (MongoDB's
// WildcardKeyGenerator::_traverseWildcard).
type wildcardGen struct {
	s        *Spec
	ks       keySet
	path     []byte // the dotted path of the value being visited
	str      []byte // path framed as a BSON string
	proj     []byte // the projected document
	multikey []string
}

var wildcardPool = sync.Pool{New: func() any { return new(wildcardGen) }}

func (s *Spec) wildcardKeys(doc bsoncore.Document, dst [][]byte) ([][]byte, Multikey, error) {
	g := wildcardPool.Get().(*wildcardGen)
	defer func() {
		g.s, g.ks, g.multikey = nil, keySet{}, g.multikey[:0]
		wildcardPool.Put(g)
	}()
	g.s, g.ks, g.path = s, keySet{dst}, g.path[:0]
	src := []byte(doc)
	if s.proj != nil {
		var err error
		if g.proj, err = s.proj.Apply(g.proj[:0], doc, -1); err != nil {
			return g.ks.keys, Multikey{}, err
		}
		src = g.proj
	}
	g.traverse(src, false, 1)
	var mk Multikey
	if len(g.multikey) > 0 {
		slices.Sort(g.multikey)
		mk.Paths = slices.Clone(slices.Compact(g.multikey))
	}
	return g.ks.keys, mk, nil
}

// traverse indexes the fields of obj. Inside an array the path does not
// grow: the elements of a.b's array are all at "a.b". Fields whose names
// hold a dot are skipped (no query can name them); a nested array is a
// value, not descended; an empty document is a value; an empty array is
// undefined.
func (g *wildcardGen) traverse(obj []byte, objIsArray bool, depth int) {
	elems := elementsOf(obj)
	for {
		t, key, val, next, ok := bsonx.NextElement(elems)
		if !ok {
			return
		}
		elems = next
		if bytes.IndexByte(key, '.') >= 0 {
			continue
		}
		if depth == 1 && g.s.skipID && string(key) == "_id" {
			continue
		}
		mark := len(g.path)
		if !objIsArray {
			if mark > 0 {
				g.path = append(g.path, '.')
			}
			g.path = append(g.path, key...)
		}
		v := bsoncore.Value{Type: t, Data: val}
		switch {
		case depth >= bsonx.MaxDepth:
			g.add(v)
		case t == bsoncore.TypeArray && objIsArray:
			g.add(v)
		case t == bsoncore.TypeArray:
			g.multikey = append(g.multikey, string(g.path))
			if isEmptyContainer(val) {
				g.add(undefinedValue)
			} else {
				g.traverse(val, true, depth+1)
			}
		case t == bsoncore.TypeEmbeddedDocument:
			if isEmptyContainer(val) {
				g.add(v)
			} else {
				g.traverse(val, false, depth+1)
			}
		default:
			g.add(v)
		}
		g.path = g.path[:mark]
	}
}

// add stores the key (path, v).
func (g *wildcardGen) add(v bsoncore.Value) {
	g.str = append(g.str[:0], 0, 0, 0, 0)
	g.str = append(g.str, g.path...)
	g.str = append(g.str, 0)
	binary.LittleEndian.PutUint32(g.str, uint32(len(g.path)+1))
	b := g.ks.start()
	b = keystring.Append(b, bsoncore.Value{Type: bsoncore.TypeString, Data: g.str})
	if g.s.valDesc {
		b = keystring.AppendDesc(b, v)
	} else {
		b = keystring.Append(b, v)
	}
	g.ks.finish(b)
}

// WildcardIndexes reports whether a wildcard index holds keys for values
// at the dotted path: the path lies under the index's root, the
// wildcardProjection keeps it, and it is not the _id a "$**" index skips.
// The planner asks before using the index for a condition on path.
func (s *Spec) WildcardIndexes(path string) bool {
	if s.gen != genWildcard || path == "" {
		return false
	}
	parts := strings.Split(path, ".")
	if s.skipID && parts[0] == "_id" {
		return false
	}
	if s.proj == nil {
		return true
	}
	// Project a document holding only path, and see whether it stays.
	b := bsoncore.NewDocumentBuilder().AppendInt32(parts[len(parts)-1], 1)
	for i := len(parts) - 2; i >= 0; i-- {
		b = bsoncore.NewDocumentBuilder().AppendDocument(parts[i], b.Build())
	}
	out, err := s.proj.Apply(nil, b.Build(), -1)
	if err != nil {
		return false
	}
	v, err := bsoncore.Document(out).LookupErr(parts...)
	return err == nil && v.Type == bsoncore.TypeInt32
}

// WildcardDescending reports whether a wildcard index keeps its values in
// descending order ({"$**": -1}).
func (s *Spec) WildcardDescending() bool { return s.gen == genWildcard && s.valDesc }

// isOperatorDoc reports whether a projection value is an operator document
// ({$slice: 1}) rather than a sub-projection: its first field starts with
// '$' and is not part of a DBRef.
func isOperatorDoc(d bsoncore.Document) bool {
	elems, _ := d.Elements()
	if len(elems) == 0 {
		return false
	}
	k := elems[0].Key()
	return strings.HasPrefix(k, "$") && k != "$ref" && k != "$id" && k != "$db"
}
