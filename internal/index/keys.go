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
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Keys returns the keys the index holds for doc, in index order and without
// duplicates, and which of the index's paths held arrays in doc. It applies
// the whole specification: a document outside a partial index's filter, or
// missing every field of a sparse index, has no keys. The engine appends
// keystring(_id) to each key of a non-unique index (see the package
// comment).
//
// The keys are appended to dst[:0], reusing the byte slices dst holds in
// its capacity, so a caller that passes the previous result back allocates
// nothing in the steady state.
//
// Errors are *mongoerr.Error: CannotIndexParallelArrays (171) when a
// compound key would need two arrays expanded at once, 16766 for an array
// on the path of a field of a hashed index, 16746 for an ambiguous numeric
// path component.
func (s *Spec) Keys(doc bsoncore.Document, dst [][]byte) ([][]byte, Multikey, error) {
	keys, _, mk, err := s.keys(doc, dst, nil)
	return keys, mk, err
}

// KeysAndTypeBits is Keys, and the type bits of the key (see
// keystring.TypeBitsWriter) when a btree index has exactly one key for doc
// made without expanding an array: what the key loses of the document's
// values, a missing field included. typeBits is appended to tb[:0]; it is
// nil for a document with several keys, for hashed and wildcard indexes (no
// covered plan reads those), and empty when the key loses nothing.
func (s *Spec) KeysAndTypeBits(doc bsoncore.Document, dst [][]byte, tb []byte) (keys [][]byte, typeBits []byte, mk Multikey, err error) {
	if tb == nil {
		tb = []byte{}
	}
	return s.keys(doc, dst, tb)
}

// keys generates the keys, and their type bits when tb is not nil.
func (s *Spec) keys(doc bsoncore.Document, dst [][]byte, tb []byte) ([][]byte, []byte, Multikey, error) {
	if s.filter != nil && !s.filter.Match(doc) {
		return dst[:0], nil, Multikey{}, nil
	}
	var (
		keys [][]byte
		mk   Multikey
		err  error
	)
	switch s.gen {
	case genHashed:
		keys, err = s.hashedKeys(doc, dst[:0])
		tb = nil
	case genWildcard:
		keys, mk, err = s.wildcardKeys(doc, dst[:0])
		tb = nil
	case genGeo:
		keys, mk, err = s.geoKeys(doc, dst[:0])
	case genText:
		keys, err = s.textKeys(doc, dst[:0])
		tb = nil
	default:
		keys, tb, mk, err = s.btreeKeys(doc, dst[:0], tb)
	}
	if err != nil {
		return keys[:0], nil, Multikey{}, err
	}
	ks := keySet{keys}
	ks.sortUnique()
	return ks.keys, tb, mk, nil
}

// Applies reports whether the index holds entries for doc: doc satisfies
// the partial filter, and, for a sparse index, some indexed field is
// present (a present null counts; an empty array counts when it is the
// field itself). For a document Keys accepts, Applies(doc) is exactly
// len(keys) > 0, except that a wildcard index has no keys for a document
// with no field under its root.
func (s *Spec) Applies(doc bsoncore.Document) bool {
	if s.filter != nil && !s.filter.Match(doc) {
		return false
	}
	if s.gen == genGeo {
		keys, _, err := s.geoKeys(doc, nil)
		return err == nil && len(keys) > 0
	}
	if s.gen == genText {
		// A text index is sparse by nature: it holds a document that has
		// at least one term.
		scores, err := s.text.spec.Scores(doc)
		return err == nil && len(scores) > 0
	}
	if !s.Sparse {
		return true
	}
	d := bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: doc}
	for _, f := range s.KeyPattern {
		if reaches(d, f.Parts, 1) {
			return true
		}
	}
	return false
}

// reaches reports whether the path parts lead from v to a value, through
// documents, and through arrays by position or into their document
// elements, as btree key generation follows paths.
func reaches(v bsoncore.Value, parts []string, depth int) bool {
	if len(parts) == 0 {
		return true
	}
	if depth > bsonx.MaxDepth {
		return false
	}
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument:
		e := lookup(v.Data, parts[0])
		return e.v.Type != 0 && reaches(e.v, parts[1:], depth+1)
	case bsoncore.TypeArray:
		if e := lookup(v.Data, parts[0]); e.v.Type != 0 && reaches(e.v, parts[1:], depth+1) {
			return true
		}
		rest := elementsOf(v.Data)
		for {
			t, _, val, next, ok := bsonx.NextElement(rest)
			if !ok {
				return false
			}
			rest = next
			if t == bsoncore.TypeEmbeddedDocument && reaches(bsoncore.Value{Type: t, Data: val}, parts, depth+1) {
				return true
			}
		}
	}
	return false
}

// keySet collects the keys of one document.
type keySet struct{ keys [][]byte }

// start returns an empty buffer for the next key, reusing the one that sits
// in the slice's capacity if any.
func (k *keySet) start() []byte {
	n := len(k.keys)
	if n < cap(k.keys) {
		k.keys = k.keys[:n+1]
		return k.keys[n][:0]
	}
	k.keys = append(k.keys, nil)
	return nil
}

// finish stores the key started last.
func (k *keySet) finish(b []byte) { k.keys[len(k.keys)-1] = b }

// drop forgets the key started last, keeping its buffer for reuse.
func (k *keySet) drop(b []byte) {
	k.keys[len(k.keys)-1] = b
	k.keys = k.keys[:len(k.keys)-1]
}

// sortUnique puts the keys in index order and removes duplicates
// (invariant Dedup), moving the buffers of duplicates past the end so that
// they are reused.
func (k *keySet) sortUnique() {
	if len(k.keys) < 2 {
		return
	}
	if !slices.IsSortedFunc(k.keys, bytes.Compare) { // arrays are often stored in order
		slices.SortFunc(k.keys, bytes.Compare)
	}
	w := 1
	for r := 1; r < len(k.keys); r++ {
		if !bytes.Equal(k.keys[r], k.keys[w-1]) {
			k.keys[w], k.keys[r] = k.keys[r], k.keys[w]
			w++
		}
	}
	k.keys = k.keys[:w]
}

var (
	nullValue      = bsoncore.Value{Type: bsoncore.TypeNull}
	undefinedValue = bsoncore.Value{Type: bsoncore.TypeUndefined}
	emptyDocument  = []byte{5, 0, 0, 0, 0}
)

// elem is a value found along a path, with the name of its field (the
// parallel-arrays message names fields). A zero v.Type means nothing was
// found: MongoDB's EOO.
type elem struct {
	name []byte
	v    bsoncore.Value
}

// elementsOf returns the element bytes of a framed document or array, or
// nil if the framing is broken (a malformed document ends early, as bsonx
// reads it).
func elementsOf(doc []byte) []byte {
	if len(doc) < 5 {
		return nil
	}
	n := int(int32(binary.LittleEndian.Uint32(doc)))
	if n < 5 || n > len(doc) {
		return nil
	}
	return doc[4 : n-1]
}

// lookup returns the first field of the framed document (or array) doc
// named name.
func lookup(doc []byte, name string) elem {
	rest := elementsOf(doc)
	for {
		t, key, val, next, ok := bsonx.NextElement(rest)
		if !ok {
			return elem{}
		}
		if string(key) == name {
			return elem{name: key, v: bsoncore.Value{Type: t, Data: val}}
		}
		rest = next
	}
}

// extractAlong follows parts from the document obj through subdocuments and
// stops at the end of the path or at the first array, returning what it
// found and the parts left after it (MongoDB's
// extractElementAtPathOrArrayAlongPath). A path that ends early or runs
// into a scalar finds nothing.
func extractAlong(obj []byte, parts []string) (elem, []string) {
	return continueAlong(lookup(obj, parts[0]), parts[1:])
}

// continueAlong is extractAlong once the path's first component has been
// looked up: e is what it found, parts what follows it.
func continueAlong(e elem, parts []string) (elem, []string) {
	for {
		switch {
		case e.v.Type == 0:
			return elem{}, nil
		case e.v.Type == bsoncore.TypeArray || len(parts) == 0:
			return e, parts
		case e.v.Type == bsoncore.TypeEmbeddedDocument:
			e = lookup(e.v.Data, parts[0])
			parts = parts[1:]
		default:
			return elem{}, nil
		}
	}
}

// sameValue reports whether a and b are the same bytes of the document,
// not merely equal: two fields of a compound key may reach the same array
// (invariant One array per key).
func sameValue(a, b bsoncore.Value) bool {
	return len(a.Data) > 0 && len(b.Data) > 0 && &a.Data[0] == &b.Data[0] && len(a.Data) == len(b.Data)
}

func isEmptyContainer(data []byte) bool { return len(elementsOf(data)) == 0 }

// btreeGen is the state of one btree key generation: MongoDB's
// BtreeKeyGenerator::_getKeysWithArray, run on raw bytes with a stack of
// per-level copies of the field states instead of vectors copied per call.
type btreeGen struct {
	s     *Spec
	coll  keystring.Collator // s.Collation, or nil for the simple collation
	ks    keySet
	slots []slot    // field states; each recursion level owns n of them
	pos   []posInfo // positional lookups; each array level owns n of them
	comps []componentSet

	wantTB bool // record the type bits of the first key
	emits  int  // keys emitted, duplicates included
	tb     keystring.TypeBitsWriter
}

// slot is the state of one key pattern field at one level: the path still
// to follow (empty once the value is fixed) and the value.
type slot struct {
	rest    []string
	val     bsoncore.Value
	missing bool // val is null because the field is missing
}

// posInfo is MongoDB's PositionalPathInfo: when the array being expanded
// has an element whose position is the field's next path component
// ("a.0.b"), the value that path leads to, found once for all the
// elements.
type posInfo struct {
	has      bool
	eltName  string
	eltArray bool   // the positionally indexed element is itself an array
	arrayObj []byte // the array, for the ambiguity message
	rest     []string
	dotted   elem
}

var btreePool = sync.Pool{New: func() any { return new(btreeGen) }}

func (s *Spec) btreeKeys(doc bsoncore.Document, dst [][]byte, tb []byte) ([][]byte, []byte, Multikey, error) {
	g := btreePool.Get().(*btreeGen)
	defer func() {
		// Drop every reference into the document, beyond the lengths too:
		// the recursion leaves stale slots past them.
		g.s, g.ks = nil, keySet{}
		g.tb.Reset(nil)
		clear(g.slots[:cap(g.slots)])
		clear(g.pos[:cap(g.pos)])
		g.slots, g.pos = g.slots[:0], g.pos[:0]
		btreePool.Put(g)
	}()
	n := len(s.KeyPattern)
	g.s, g.ks = s, keySet{dst}
	g.coll = nil
	if s.Collation != nil { // a nil *Collator must not become a non-nil interface
		g.coll = s.Collation
	}
	g.wantTB, g.emits = tb != nil, 0
	if tb != nil {
		g.tb.Reset(tb)
	}
	ks := &g.ks
	for _, f := range s.KeyPattern {
		g.slots = append(g.slots, slot{rest: f.Parts})
	}
	g.comps = slices.Grow(g.comps[:0], n)[:n]
	clear(g.comps)
	if err := g.walk(doc, 0, 0, -1); err != nil {
		return g.ks.keys, nil, Multikey{}, err
	}
	if len(ks.keys) == 0 && !s.Sparse {
		// Unreachable with MongoDB's rules as implemented (every branch of
		// a non-sparse index emits a key), kept as MongoDB keeps it.
		b := ks.start()
		for range n {
			b = keystring.Append(b, nullValue)
		}
		ks.finish(b)
		g.emits = 2 // no type bits: no value stands behind these nulls
	}
	mk := g.multikey()
	if !g.wantTB || g.emits != 1 || mk.IsMultikey() {
		return g.ks.keys, nil, mk, nil
	}
	return g.ks.keys, g.tb.Bytes(), mk, nil
}

// multikey turns the component sets into a Multikey with two allocations
// at most, none when no field went through an array.
func (g *btreeGen) multikey() Multikey {
	total := 0
	for i := range g.comps {
		total += g.comps[i].count()
	}
	if total == 0 {
		return Multikey{}
	}
	mk := Multikey{Components: make([][]int, len(g.comps))}
	all := make([]int, 0, total)
	for i := range g.comps {
		start := len(all)
		all = g.comps[i].appendTo(all)
		if len(all) > start {
			mk.Components[i] = all[start:len(all):len(all)]
		}
	}
	return mk
}

// walk generates the keys of the fields at slots[base:base+n] within obj
// (a framed document; an empty one stands for an array element that is
// not a document). notFound counts the fields already found missing;
// posBase locates the positional lookups of the array being expanded, -1
// if none.
func (g *btreeGen) walk(obj []byte, base, notFound, posBase int) error {
	fields := g.s.KeyPattern
	n := len(fields)
	var (
		arr       elem
		arrFields uint64 // fields that reached arr
		mayExpand = true
	)
	for i := range n {
		sl := &g.slots[base+i]
		if len(sl.rest) == 0 {
			continue
		}
		var p *posInfo
		if posBase >= 0 && g.pos[posBase+i].has {
			p = &g.pos[posBase+i]
		}
		e, nested, err := g.next(obj, sl, p)
		if err != nil {
			return err
		}
		switch e.v.Type {
		case 0:
			sl.val, sl.rest, sl.missing = nullValue, nil, true
			notFound++
		case bsoncore.TypeArray:
			arrFields |= 1 << i
			if arr.v.Type == 0 {
				arr = e
			} else if !sameValue(e.v, arr.v) {
				return mongoerr.New(CodeCannotIndexParallelArrays, "cannot index parallel arrays [%s] [%s]", e.name, arr.name)
			}
			if nested {
				mayExpand = false
			}
		default:
			sl.val, sl.rest, sl.missing = e.v, nil, false
		}
	}
	if arr.v.Type == 0 {
		if g.s.Sparse && notFound == n {
			return nil
		}
		g.emit(base, 0, bsoncore.Value{})
		return nil
	}
	if isEmptyContainer(arr.v.Data) {
		// An empty array is indexed as undefined where it ends a path; a
		// path that would go on through it finds nothing.
		if mayExpand {
			for i := range n {
				if arrFields&(1<<i) != 0 {
					g.comps[i].add(len(fields[i].Parts) - len(g.slots[base+i].rest) - 1)
				}
			}
		}
		return g.expand(base, undefinedValue, arrFields, true, arr.v, -1, notFound, emptyDocument)
	}
	posB := len(g.pos)
	for range n {
		g.pos = append(g.pos, posInfo{})
	}
	for i := range n {
		rest := g.slots[base+i].rest
		if len(rest) == 0 {
			// The path ends at the array (or ended before it): each element
			// is a key, unless a positional path selected a nested array.
			if arrFields&(1<<i) != 0 && mayExpand {
				g.comps[i].add(len(fields[i].Parts) - 1)
			}
			continue
		}
		// The path goes on through the array. A component that is one of
		// its positions ("a.0.b") selects that element for every key;
		// otherwise every element is followed, and the array makes the
		// field multikey.
		pe := lookup(arr.v.Data, rest[0])
		if pe.v.Type == 0 {
			g.comps[i].add(len(fields[i].Parts) - len(rest) - 1)
			continue
		}
		dotted, after := extractAlong(arr.v.Data, rest)
		g.pos[posB+i] = posInfo{has: true, eltName: rest[0], eltArray: pe.v.Type == bsoncore.TypeArray, arrayObj: arr.v.Data, rest: after, dotted: dotted}
	}
	elems := elementsOf(arr.v.Data)
	for {
		t, _, val, next, ok := bsonx.NextElement(elems)
		if !ok {
			break
		}
		elems = next
		v := bsoncore.Value{Type: t, Data: val}
		obj := emptyDocument
		if t == bsoncore.TypeEmbeddedDocument {
			obj = val
		}
		if err := g.expand(base, v, arrFields, mayExpand, arr.v, posB, notFound, obj); err != nil {
			return err
		}
	}
	g.pos = g.pos[:posB]
	return nil
}

// emit stores the key made of the values of slots[base:base+n], the fields
// in override taking v instead.
func (g *btreeGen) emit(base int, override uint64, v bsoncore.Value) {
	b := g.ks.start()
	g.emits++
	typed := g.wantTB && g.emits == 1
	for i, f := range g.s.KeyPattern {
		val, missing := g.slots[base+i].val, g.slots[base+i].missing
		if override&(1<<i) != 0 {
			val, missing = v, false
		}
		if typed {
			if missing {
				g.tb.Missing()
			} else {
				g.tb.Value(val)
			}
		}
		if f.Kind == Descending {
			b = keystring.AppendDescCollated(b, val, g.coll)
		} else {
			b = keystring.AppendCollated(b, val, g.coll)
		}
	}
	g.ks.finish(b)
}

// expand recurses into one element (entry) of the array arr: the fields
// whose path ends at the array take the element as value (or the whole
// array when a positional path selected a nested array), the others go on
// from the element.
func (g *btreeGen) expand(base int, entry bsoncore.Value, arrFields uint64, mayExpand bool, arr bsoncore.Value, posB, notFound int, obj []byte) error {
	n := len(g.s.KeyPattern)
	v := entry
	if !mayExpand {
		v = arr
	}
	if g.allFixed(base) {
		// Every path ended at the array or before it (the usual multikey
		// index on a leaf array): the element completes the key, with no
		// need to copy the level. A field reaching the array is found, so
		// a sparse index keeps the key.
		g.emit(base, arrFields, v)
		return nil
	}
	nb := len(g.slots)
	g.slots = append(g.slots, g.slots[base:base+n]...)
	for i := range n {
		if arrFields&(1<<i) != 0 && len(g.slots[nb+i].rest) == 0 {
			g.slots[nb+i].val, g.slots[nb+i].missing = v, false
		}
	}
	err := g.walk(obj, nb, notFound, posB)
	g.slots = g.slots[:nb]
	return err
}

// allFixed reports whether no field of the level at base has path left.
func (g *btreeGen) allFixed(base int) bool {
	for i := range g.s.KeyPattern {
		if len(g.slots[base+i].rest) != 0 {
			return false
		}
	}
	return true
}

// next finds the next value of a field from obj (MongoDB's
// _extractNextElement): from obj itself if it has the path's next
// component, else from the positional lookup of the enclosing array. nested
// reports a positionally selected element that is an array.
func (g *btreeGen) next(obj []byte, sl *slot, p *posInfo) (e elem, nested bool, err error) {
	if first := lookup(obj, sl.rest[0]); first.v.Type != 0 {
		if p != nil {
			return elem{}, false, mongoerr.New(CodeAmbiguousFieldName,
				"Ambiguous field name found in array (do not use numeric field names in embedded elements in an array), field: '%s' for array: %s",
				p.eltName, bsoncore.Array(p.arrayObj))
		}
		e, sl.rest = continueAlong(first, sl.rest[1:])
		return e, false, nil
	}
	if p != nil {
		sl.rest = p.rest
		return p.dotted, p.eltArray, nil
	}
	return elem{}, false, nil
}

// hashedKeys generates the one key of a document for an index with a
// hashed field (MongoDB's ExpressionKeysPrivate::getHashKeys): no field of
// such an index may meet an array anywhere on its path.
func (s *Spec) hashedKeys(doc bsoncore.Document, dst [][]byte) ([][]byte, error) {
	ks := keySet{dst}
	b := ks.start()
	found := false
	var hb [8]byte
	for _, f := range s.KeyPattern {
		e, rest := extractAlong(doc, f.Parts)
		if e.v.Type == bsoncore.TypeArray {
			ks.drop(b)
			return ks.keys, mongoerr.New(CodeHashedArray,
				"Error: hashed indexes do not currently support array values. Found array at path: %s",
				strings.Join(f.Parts[:len(f.Parts)-len(rest)], "."))
		}
		v := e.v
		if v.Type == 0 {
			v = nullValue
		} else {
			found = true
		}
		switch f.Kind {
		case Hashed:
			binary.LittleEndian.PutUint64(hb[:], uint64(Hash(v)))
			b = keystring.Append(b, bsoncore.Value{Type: bsoncore.TypeInt64, Data: hb[:]})
		case Descending:
			b = keystring.AppendDesc(b, v)
		default:
			b = keystring.Append(b, v)
		}
	}
	if s.Sparse && !found {
		ks.drop(b)
		return ks.keys, nil
	}
	ks.finish(b)
	return ks.keys, nil
}
