package commands

import (
	"context"
	"slices"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/catalog"
	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/exec"
	"github.com/cairndb/cairn/internal/index"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// cmdDataSize answers dataSize as MongoDB 7.0: the BSON bytes and count of
// a whole collection's documents, or, with min and max (and keyPattern,
// inferred from min when absent), of the documents whose keys in an index
// prefixed by keyPattern lie in [min, max) — the form the chunk splitter
// uses. The index must be single-key, not sparse, not partial, under the
// simple collation (MongoDB's shard-key-prefixed index); the bounds are
// extended to its fields with MinKey (MaxKey for descending fields).
// estimate counts each document at the collection's average size; maxSize
// and maxObjects stop the count once passed (maxReached).
func cmdDataSize(ctx context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	began := time.Now()
	full, ok := req.First().StringValueOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'dataSize.dataSize' is the wrong type '%s', expected type 'string'", typeName(req.First().Type))
	}
	db, coll, ok := strings.Cut(full, ".")
	if !ok || db == "" || coll == "" {
		return nil, mongoerr.New(mongoerr.InvalidNamespace, "Invalid namespace specified '%s'", full)
	}
	var keyPattern, minKey, maxKey bsoncore.Document
	for _, f := range []struct {
		name string
		dst  *bsoncore.Document
	}{{"keyPattern", &keyPattern}, {"min", &minKey}, {"max", &maxKey}} {
		d, err := req.Document(f.name)
		if err != nil {
			return nil, err
		}
		*f.dst = d
	}
	_, hasMin := req.Arg("min")
	_, hasMax := req.Arg("max")
	if hasMin != hasMax {
		neg := ""
		if !hasMin {
			neg = "not "
		}
		return nil, mongoerr.New(mongoerr.BadValue, "Max must %sbe set if min is %sset.", neg, neg)
	}
	estimate, err := req.Bool("estimate", false)
	if err != nil {
		return nil, err
	}
	maxSize, err := req.Int("maxSize", 0)
	if err != nil {
		return nil, err
	}
	maxObjects, err := req.Int("maxObjects", 0)
	if err != nil {
		return nil, err
	}
	ns := engine.Namespace{DB: db, Coll: coll}
	st, err := s.Env.Engine.CollectionStats(ctx, ns)
	if err != nil {
		return nil, err
	}
	r := NewReply(dst)
	if st.Count == 0 {
		r.Int64("size", 0).Int64("numObjects", 0).Int64("millis", time.Since(began).Milliseconds())
		return r.Finish(), nil
	}
	r.Bool("estimate", estimate)
	empty := func(d bsoncore.Document) bool { return len(d) <= 5 }
	if empty(minKey) != empty(maxKey) {
		return nil, mongoerr.New(mongoerr.BadValue, "Only one of min or max specified")
	}
	if empty(minKey) && (estimate || maxSize == 0 && maxObjects == 0) {
		r.Int64("size", st.DataSize).Int64("numObjects", st.Count).Int64("millis", time.Since(began).Milliseconds())
		return r.Finish(), nil
	}
	sel, err := newSelection(ns, nil)
	if err != nil {
		return nil, err
	}
	if !empty(minKey) {
		if empty(keyPattern) {
			keyPattern = inferKeyPattern(minKey)
		}
		ix := keyPrefixedIndex(s.Env.Engine.Catalog().Collection(db, coll), keyPattern)
		if ix == nil {
			return nil, mongoerr.New(mongoerr.OperationFailed, "Couldn't find valid index containing key pattern")
		}
		sel.Hint = bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, ix.Name)}
		sel.Min, sel.Max = extendBound(minKey, ix.KeyPattern), extendBound(maxKey, ix.KeyPattern)
	}
	src, err := s.x().Open(ctx, sel, exec.Run)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	avg := st.DataSize / st.Count
	var size, n int64
	for {
		d, err := src.Next()
		if err != nil {
			return nil, err
		}
		if d == nil {
			break
		}
		if estimate {
			size += avg
		} else {
			size += int64(len(d))
		}
		n++
		if maxSize > 0 && size > maxSize || maxObjects > 0 && n > maxObjects {
			r.Bool("maxReached", true)
			break
		}
	}
	r.Int64("size", size).Int64("numObjects", n).Int64("millis", time.Since(began).Milliseconds())
	return r.Finish(), nil
}

// inferKeyPattern is {f: 1} for each field f of bound (MongoDB's
// Helpers::inferKeyPattern).
func inferKeyPattern(bound bsoncore.Document) bsoncore.Document {
	elems, _ := bound.Elements()
	b := bsoncore.NewDocumentBuilder()
	for _, el := range elems {
		b.AppendInt32(el.Key(), 1)
	}
	return b.Build()
}

// keyPrefixedIndex is the first index of c (the _id index first) whose key
// pattern starts with keyPattern's fields and directions and that holds one
// key per document under the simple collation: not multikey, not sparse,
// not partial. Nil when there is none.
func keyPrefixedIndex(c *catalog.Collection, keyPattern bsoncore.Document) *index.Spec {
	if c == nil {
		return nil
	}
	want, _ := keyPattern.Elements()
	prefixOf := func(key bsoncore.Document) bool {
		have, _ := key.Elements()
		if len(want) == 0 || len(have) < len(want) {
			return false
		}
		for i, w := range want {
			if w.Key() != have[i].Key() || !bsonx.Equal(w.Value(), have[i].Value()) {
				return false
			}
		}
		return true
	}
	idKey := bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).Build()
	if prefixOf(idKey) {
		return &index.Spec{Name: catalog.IDIndexName, Key: idKey, KeyPattern: []index.Field{{Path: "_id", Kind: index.Ascending}}}
	}
	for _, ix := range c.Indexes {
		if ix.Multikey || ix.Building || !prefixOf(bsoncore.Document(ix.Key)) {
			continue
		}
		spec, err := index.ParseSpec(bsoncore.Document(ix.Spec))
		if err != nil || spec.Sparse || spec.PartialFilterExpression != nil || spec.Collation != nil {
			continue
		}
		return spec
	}
	return nil
}

// extendBound is bound with every field of pattern it lacks appended as
// MinKey (MaxKey for a descending field), so it bounds the whole index key
// (MongoDB's KeyPattern::extendRangeBound with an exclusive upper bound).
func extendBound(bound bsoncore.Document, pattern []index.Field) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder()
	elems, _ := bound.Elements()
	for _, f := range pattern {
		if i := slices.IndexFunc(elems, func(el bsoncore.Element) bool { return el.Key() == f.Path }); i >= 0 {
			b.AppendValue(f.Path, elems[i].Value()) // the field as named: "a.b" is one key
		} else if f.Kind == index.Descending {
			b.AppendMaxKey(f.Path)
		} else {
			b.AppendMinKey(f.Path)
		}
	}
	return b.Build()
}
