package exec

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"slices"
	"sort"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/agg"
	"github.com/cairndb/cairn/internal/catalog"
	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/index"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/update"
)

// $out and $merge: Aggregate runs the pipeline without its final write
// stage (agg.Pipeline.Output) and drains the results into the target here, through the engine's ordinary insert and replace paths, so
// every index of the target stays consistent. The pipeline's input is a
// snapshot iterator, so writing to the collection being read is safe: the
// reader never sees the writes ($out to its own source, $merge into it).
//
// $out fills a temporary collection that carries the target's options and
// indexes, then renames it over the target in one commit; on any failure
// (a duplicate _id among the results) the temporary collection is dropped
// and the target is untouched. $merge writes in batches of one commit each
// and, like MongoDB's, leaves what it wrote when a later document fails.

// Local names for the codes of $out and $merge (numbers in mongoerr).
const (
	codeOutSpecialColl   = mongoerr.OutSpecialColl // "Can't $out to special collection"
	codeOutInternalDB    = mongoerr.OutInternalDB
	codeOutCapped        = mongoerr.OutCapped
	codeMergeSpecialColl = mongoerr.MergeSpecialColl
	codeMergeInternalDB  = mongoerr.MergeInternalDB
	codeMergeNoUniqueIdx = mongoerr.MergeNoUniqueIdx
	codeMergeOnNullish   = mongoerr.MergeOnNullish
	codeMergeOnArray     = mongoerr.MergeOnArray
)

const (
	// outputBatchDocs and outputBatchBytes bound one commit of results.
	outputBatchDocs  = 1000
	outputBatchBytes = 8 << 20
	// tempOutPrefix names $out's temporary collections, which the engine
	// drops when it opens (a crash mid-$out leaves one behind).
	tempOutPrefix = engine.TempOutPrefix
)

// outputWriter carries out a pipeline's $out or $merge.
type outputWriter struct {
	eng    *engine.Engine
	out    *agg.Output
	target engine.Namespace
	// $out: the target as it was when the aggregate started.
	origOptions  bson.Raw
	origIndexes  []bsoncore.Document
	origIndexIDs []string
	// $merge: the unique index matched on ("" for _id) and the on paths.
	by     string
	onPath [][]string
	onID   bool // _id is one of the on fields
	now    time.Time
	bypass bool // bypassDocumentValidation
}

// prepareOutput checks an output stage against the catalog before the
// pipeline runs, as MongoDB does when it parses the stage: the target's
// name, capped targets for $out, and a unique index for $merge's on.
func prepareOutput(eng *engine.Engine, o *agg.Output) (*outputWriter, error) {
	w := &outputWriter{eng: eng, out: o, target: engine.Namespace{DB: o.DB, Coll: o.Coll}, now: time.Now()}
	if err := checkOutputTarget(o); err != nil {
		return nil, err
	}
	coll := eng.Catalog().Collection(o.DB, o.Coll)
	if o.Stage == "$out" {
		if coll != nil {
			if capped, ok := coll.Options.Lookup("capped").BooleanOK(); ok && capped {
				return nil, mongoerr.New(codeOutCapped, "namespace '%s' is capped so it can't be used for $out", w.target)
			}
			w.origOptions = coll.Options
			specs, err := eng.IndexSpecs(w.target)
			if err != nil {
				return nil, err
			}
			w.origIndexes = specs
			w.origIndexIDs = indexIdentities(coll)
		}
		return w, nil
	}
	return w, w.chooseMergeIndex(coll)
}

// checkOutputTarget applies the namespace rules of both stages.
func checkOutputTarget(o *agg.Output) error {
	if catalog.ValidateCollectionName(o.DB, o.Coll) != nil {
		return mongoerr.New(mongoerr.InvalidNamespace, "Invalid %s target namespace, %s.%s", o.Stage, o.DB, o.Coll)
	}
	special, internal := codeOutSpecialColl, codeOutInternalDB
	verb := "Can't"
	if o.Stage == "$merge" {
		special, internal, verb = codeMergeSpecialColl, codeMergeInternalDB, "Cannot"
	}
	if strings.HasPrefix(o.Coll, "system.") {
		return mongoerr.New(special, "%s %s to special collection: %s", verb, o.Stage, o.Coll)
	}
	switch o.DB {
	case "admin", "config", "local":
		return mongoerr.New(internal, "%s %s to internal database: %s", verb, o.Stage, o.DB)
	}
	return nil
}

// chooseMergeIndex finds what $merge matches on: _id, or a unique,
// non-partial index whose fields are exactly the on fields (MongoDB's
// rule; the index may be sparse, and field order and direction do not
// matter). A missing target has only _id.
func (w *outputWriter) chooseMergeIndex(coll *catalog.Collection) error {
	on := w.out.On
	if on == nil {
		on = []string{"_id"}
	}
	paths := append([]string(nil), on...)
	sort.Strings(paths)
	for _, p := range paths {
		w.onPath = append(w.onPath, strings.Split(p, "."))
		w.onID = w.onID || p == "_id"
	}
	if len(paths) == 1 && paths[0] == "_id" {
		return nil
	}
	if coll != nil {
		names, specs, err := w.eng.Indexes(w.target)
		if err != nil {
			return err
		}
		for i, s := range specs {
			if s.Unique && s.PartialFilterExpression == nil && samePaths(s, paths) {
				w.by = names[i].Name
				return nil
			}
		}
	}
	return mongoerr.New(codeMergeNoUniqueIdx, "Cannot find index to verify that join fields will be unique")
}

// samePaths reports whether an index's key pattern names exactly paths
// (sorted).
func samePaths(s *index.Spec, paths []string) bool {
	if s.IsHashed() || s.IsWildcard() || len(s.KeyPattern) != len(paths) {
		return false
	}
	got := make([]string, len(s.KeyPattern))
	for i, f := range s.KeyPattern {
		got[i] = f.Path
	}
	sort.Strings(got)
	for i := range got {
		if got[i] != paths[i] {
			return false
		}
	}
	return true
}

// write drains src into the target and closes it.
func (w *outputWriter) write(src agg.Source) error {
	var err error
	if w.out.Stage == "$out" {
		err = w.writeOut(src)
	} else {
		err = w.writeMerge(src)
	}
	if cerr := src.Close(); err == nil && cerr != nil {
		err = cerr
	}
	return err
}

// batches calls flush with the documents of src in groups bounded by count
// and bytes; the documents are copies, src's buffers move on.
func batches(src agg.Source, flush func([]bsoncore.Document) error) error {
	var batch []bsoncore.Document
	size := 0
	for {
		d, err := src.Next()
		if err != nil {
			return err
		}
		if d == nil {
			break
		}
		batch = append(batch, append(bsoncore.Document(nil), d...))
		size += len(d)
		if len(batch) >= outputBatchDocs || size >= outputBatchBytes {
			if err := flush(batch); err != nil {
				return err
			}
			batch, size = nil, 0
		}
	}
	if len(batch) == 0 {
		return nil
	}
	return flush(batch)
}

// writeOut fills a temporary collection and renames it over the target.
func (w *outputWriter) writeOut(src agg.Source) (err error) {
	tmp := engine.Namespace{DB: w.target.DB, Coll: tempOutPrefix + randomHex()}
	if err := w.eng.CreateCollection(tmp, w.origOptions); err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_, _ = w.eng.DropCollection(tmp)
		}
	}()
	if len(w.origIndexes) > 0 {
		if _, err := w.eng.CreateIndexes(context.Background(), tmp, w.origIndexes); err != nil { // an empty collection: nothing to build
			return err
		}
	}
	err = batches(src, func(docs []bsoncore.Document) error {
		res, err := w.eng.InsertWith(tmp, docs, engine.InsertOptions{Ordered: true, BypassValidation: w.bypass})
		if err != nil {
			return err
		}
		if len(res.WriteErrors) > 0 {
			return res.WriteErrors[0].Err
		}
		return nil
	})
	if err != nil {
		return err
	}
	return w.eng.ReplaceCollection(tmp, w.target, w.unchanged)
}

// unchanged refuses the final rename when the target's options or indexes
// changed while the pipeline ran (MongoDB's check: the results were built
// for the target as it was). A target dropped, or created plain, meanwhile
// compares as it would in MongoDB: by options and index list only.
func (w *outputWriter) unchanged(cur *catalog.Collection) error {
	var opts bson.Raw
	var indexes []string
	if cur != nil {
		opts = cur.Options
		indexes = indexIdentities(cur)
	}
	if !bytes.Equal(nonEmpty(opts), nonEmpty(w.origOptions)) || !slices.Equal(indexes, w.origIndexIDs) {
		return mongoerr.New(mongoerr.CommandFailed, "collection or index options of target collection changed during processing")
	}
	return nil
}

// indexIdentities names a collection's indexes by name and key pattern.
func indexIdentities(c *catalog.Collection) []string {
	var out []string
	for _, ix := range c.Indexes {
		out = append(out, ix.Name+"\x00"+string(ix.Key))
	}
	return out
}

// nonEmpty maps an empty options document to nil.
func nonEmpty(r bson.Raw) bson.Raw {
	if len(r) <= 5 {
		return nil
	}
	return r
}

func randomHex() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on Linux
	return hex.EncodeToString(b[:])
}

// writeMerge matches and writes the results batch by batch.
func (w *outputWriter) writeMerge(src agg.Source) error {
	return batches(src, func(docs []bsoncore.Document) error {
		for i, d := range docs {
			prepared, err := w.prepareMergeDoc(d)
			if err != nil {
				return err
			}
			docs[i] = prepared
		}
		res, err := w.eng.Merge(w.target, w.by, docs, func(i int, doc, cur bsoncore.Document) (engine.MergeAction, error) {
			act, err := w.decide(i, doc, cur)
			act.BypassValidation = w.bypass
			return act, err
		})
		if err != nil {
			return err
		}
		return res.Err
	})
}

// prepareMergeDoc gives a document an _id if it has none and _id is one of
// the on fields (MongoDB generates one) and checks its on fields: present, not null and
// not arrays.
func (w *outputWriter) prepareMergeDoc(d bsoncore.Document) (bsoncore.Document, error) {
	if w.onID {
		if _, err := d.LookupErr("_id"); err != nil {
			oid := bson.NewObjectID()
			d = prependID(d, bsoncore.Value{Type: bsoncore.TypeObjectID, Data: oid[:]})
		}
	}
	for _, p := range w.onPath {
		v := bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: d}
		for i, part := range p {
			inner, ok := v.DocumentOK()
			if !ok {
				v = bsoncore.Value{}
				break
			}
			v = inner.Lookup(part)
			if v.Type == bsoncore.TypeArray {
				return nil, mongoerr.New(codeMergeOnArray, "$merge write error: 'on' field '%s' is an array", strings.Join(p, "."))
			}
			if i+1 < len(p) && v.Type != bsoncore.TypeEmbeddedDocument {
				v = bsoncore.Value{}
				break
			}
		}
		if v.Type == 0 || v.Type == bsoncore.TypeNull || v.Type == bsoncore.TypeUndefined {
			return nil, mongoerr.New(codeMergeOnNullish, "$merge write error: 'on' field '%s' cannot be missing, null, undefined or an array", strings.Join(p, "."))
		}
	}
	return d, nil
}

// prependID returns d with id as its first field.
func prependID(d bsoncore.Document, id bsoncore.Value) bsoncore.Document {
	idx, out := bsoncore.AppendDocumentStart(make([]byte, 0, len(d)+len(id.Data)+8))
	out = bsoncore.AppendValueElement(out, "_id", id)
	elems, _ := d.Elements()
	for _, el := range elems {
		out = append(out, el...)
	}
	out, _ = bsoncore.AppendDocumentEnd(out, idx)
	return out
}

// decide is MongoDB's merge strategy for one document (see its table of
// whenMatched × whenNotMatched): replace and [pipeline] are replacement
// updates, merge is {$set: doc} and keepExisting {$setOnInsert: doc}, both
// upserting from the on fields; fail is a plain insert, so a match is the
// duplicate key error of the _id or on index.
func (w *outputWriter) decide(_ int, doc, cur bsoncore.Document) (engine.MergeAction, error) {
	o := w.out
	if o.WhenMatched == agg.WhenMatchedFail {
		return engine.MergeAction{Insert: doc}, nil
	}
	if cur == nil {
		switch o.WhenNotMatched {
		case agg.WhenNotMatchedDiscard:
			return engine.MergeAction{}, nil
		case agg.WhenNotMatchedFail:
			return engine.MergeAction{}, mongoerr.New(mongoerr.MergeStageNoMatchingDoc, "$merge could not find a matching document in the target collection for at least one document in the source collection")
		}
		switch o.WhenMatched {
		case agg.WhenMatchedMerge, agg.WhenMatchedKeepExisting:
			u, err := w.operatorUpdate(doc)
			if err != nil {
				return engine.MergeAction{}, err
			}
			ins, err := u.Upsert(w.onFilter(doc), update.ApplyContext{ArrayPos: -1, Now: w.now})
			return engine.MergeAction{Insert: ins}, err
		}
		return engine.MergeAction{Insert: doc}, nil
	}
	switch o.WhenMatched {
	case agg.WhenMatchedKeepExisting:
		return engine.MergeAction{}, nil
	case agg.WhenMatchedMerge:
		u, err := w.operatorUpdate(doc)
		if err != nil {
			return engine.MergeAction{}, err
		}
		next, modified, err := u.Apply(cur, update.ApplyContext{ArrayPos: -1, Now: w.now})
		if err != nil || !modified {
			return engine.MergeAction{}, err
		}
		return engine.MergeAction{Replace: next}, nil
	case agg.WhenMatchedPipeline:
		next, err := o.ApplyPipeline(cur, doc)
		if err != nil {
			return engine.MergeAction{}, err
		}
		return engine.MergeAction{Replace: next}, nil
	}
	return engine.MergeAction{Replace: doc}, nil
}

// operatorUpdate is {$set: doc} for merge, {$setOnInsert: doc} for
// keepExisting.
func (w *outputWriter) operatorUpdate(doc bsoncore.Document) (*update.Update, error) {
	op := "$set"
	if w.out.WhenMatched == agg.WhenMatchedKeepExisting {
		op = "$setOnInsert"
	}
	return update.ParseDocument(bsoncore.NewDocumentBuilder().AppendDocument(op, doc).Build(), update.Options{})
}

// onFilter is the equality query on the on fields that MongoDB's upsert
// seeds a new document from, fields in sorted order as MongoDB builds it.
func (w *outputWriter) onFilter(doc bsoncore.Document) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder()
	for _, p := range w.onPath {
		v, err := doc.LookupErr(p...)
		if err == nil {
			b.AppendValue(strings.Join(p, "."), v)
		}
	}
	return b.Build()
}
