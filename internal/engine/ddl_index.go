package engine

import (
	"bytes"
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/catalog"
	"github.com/cairndb/cairn/internal/index"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/opctx"
	"github.com/cairndb/cairn/internal/storage"
)

// CreateIndexesResult reports what CreateIndexes did, as createIndexes
// replies it.
type CreateIndexesResult struct {
	Before, After     int // index counts, the _id index included
	CreatedCollection bool
	AllExisted        bool
}

// CreateIndexes adds the indexes specs describes to ns (creating the
// collection if needed) and fills them from the existing documents. An
// index identical to an existing one is skipped.
//
// Over an empty collection the indexes are added ready, in one commit.
// Otherwise they are registered as building (from then on every write
// maintains them) and filled by a background build that reads the
// collection in batches, each one short commit (see indexbuild.go), so
// neither readers nor writers wait for the whole build. If the build fails
// (a unique index over duplicates: 11000), the indexes and every key they
// got are removed: nothing is left behind. The same happens when ctx ends
// during the build (maxTimeMS, killOp of the command or of the build's own
// operation): the error is ctx's cause. A request waiting for another's
// build of the same index stops waiting when its ctx ends.
func (e *Engine) CreateIndexes(ctx context.Context, ns Namespace, specs []bsoncore.Document) (CreateIndexesResult, error) {
	parsed, err := parseIndexSpecs(e.cat.Current().Collection(ns.DB, ns.Coll), specs)
	if err != nil {
		return CreateIndexesResult{}, err
	}
	var res CreateIndexesResult
	var build *indexBuild
	var pending []catalog.Index // the same indexes, already building
	err = e.db.Write(func(tx *storage.Txn) error {
		res, build = CreateIndexesResult{}, nil
		existed := e.cat.Working().Collection(ns.DB, ns.Coll) != nil
		coll, err := e.ensureCollection(tx, ns)
		if err != nil {
			return err
		}
		res.CreatedCollection = !existed
		res.Before = 1 + len(coll.Indexes)
		empty, err := collectionEmpty(tx, coll)
		if err != nil {
			return err
		}
		var added []catalog.Index
		pending = pending[:0]
		_, capped := CappedOf(coll)
		for _, spec := range parsed {
			if capped && spec.ExpireAfterSeconds != nil {
				// MongoDB 7.0's rule (7.1 lifts it behind a feature flag).
				return mongoerr.New(mongoerr.CannotCreateIndex, "Cannot create TTL index on a capped collection")
			}
			isNew, err := e.checkIndexConflict(e.cat.Working().Collection(ns.DB, ns.Coll), spec)
			if err != nil {
				return err
			}
			if !isNew {
				if cur := coll.Index(spec.Name); cur != nil && cur.Building {
					pending = append(pending, *cur)
				}
				continue
			}
			ix, err := e.cat.AddIndex(tx, ns.DB, ns.Coll, catalog.Index{Name: spec.Name, Key: bson.Raw(spec.Key), Spec: bson.Raw(spec.Original), Building: !empty, TypeBits: newIndexTypeBits})
			if err != nil {
				return err
			}
			e.logCommand(tx, ns.DB, coll.UUID.Data, cmdDoc("createIndexes", strVal(ns.Coll), bsoncore.Document(spec.Original)))
			added = append(added, ix)
		}
		res.After = res.Before + len(added)
		res.AllExisted = len(added) == 0
		if !empty && len(added) > 0 {
			build = &indexBuild{e: e, ctx: ctx, ns: ns, collID: coll.ID, indexes: added, command: createIndexesCommand(ns, parsed)}
		}
		return nil
	})
	if err != nil {
		return CreateIndexesResult{}, err
	}
	if build != nil {
		if err := build.run(); err != nil {
			return CreateIndexesResult{}, err
		}
	}
	if err := e.waitForBuilds(ctx, ns, pending); err != nil {
		return CreateIndexesResult{}, err
	}
	if coll := e.cat.Current().Collection(ns.DB, ns.Coll); coll != nil {
		for _, ix := range coll.Indexes {
			e.usage.counter(ix.ID, e.now) // accesses.since: now, for a new index
		}
	}
	return res, nil
}

// parseIndexSpecs parses createIndexes' specs for coll (nil: a new
// collection).
func parseIndexSpecs(coll *catalog.Collection, specs []bsoncore.Document) ([]*index.Spec, error) {
	parsed := make([]*index.Spec, len(specs))
	def := defaultCollation(coll)
	for i, raw := range specs {
		// The catalog keeps the spec for the index's lifetime, while the
		// caller's bytes may alias a connection buffer: parse a copy.
		own := append(bsoncore.Document(nil), raw...)
		if def != nil {
			if _, err := own.LookupErr("collation"); err != nil {
				own = withCollation(own, def) // an index inherits the collection's default, as in MongoDB
			}
		}
		s, err := index.ParseSpec(own)
		if err != nil {
			return nil, err
		}
		parsed[i] = s
	}
	return parsed, nil
}

// waitForBuilds waits until the indexes another createIndexes is building
// are ready, as MongoDB makes a second identical request wait for the
// first's build; it fails if that build failed.
func (e *Engine) waitForBuilds(ctx context.Context, ns Namespace, pending []catalog.Index) error {
	for _, want := range pending {
		for {
			coll := e.cat.Current().Collection(ns.DB, ns.Coll)
			var cur *catalog.Index
			if coll != nil {
				cur = coll.Index(want.Name)
			}
			if cur == nil || cur.ID != want.ID {
				return mongoerr.New(mongoerr.IndexBuildAborted, "Index build of %s on %s, which this request waited for, failed", want.Name, ns)
			}
			if !cur.Building {
				break
			}
			if err := opctx.Err(ctx); err != nil {
				return err // this request stops waiting; the build goes on
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	return nil
}

// collectionEmpty reports whether coll has no documents, as tx sees it.
func collectionEmpty(tx *storage.Txn, coll *catalog.Collection) (bool, error) {
	prefix := storage.Prefix(nil, storage.SpaceDocument, coll.ID)
	it, err := tx.NewIter(prefix, storage.PrefixEnd(prefix))
	if err != nil {
		return false, err
	}
	empty := !it.First()
	return empty, it.Close()
}

// checkIndexConflict reports whether spec names a new index of coll, or
// MongoDB's error when it clashes with an existing one.
func (e *Engine) checkIndexConflict(coll *catalog.Collection, spec *index.Spec) (bool, error) {
	if spec.IsID() {
		return false, nil // the _id index always exists
	}
	for _, ix := range coll.Indexes {
		// Key patterns and specs compare as mongod's woCompare does:
		// numbers by value, so {a: 1} and {a: 1.0} are one index.
		sameKey := bsonx.CompareDocuments(bsoncore.Document(ix.Key), spec.Key) == 0
		switch {
		case ix.Name == spec.Name && sameKey:
			existing, err := e.specs.get(ix)
			if err != nil {
				return false, err
			}
			if bsonx.CompareDocuments(existing.Doc(), spec.Doc()) != 0 {
				return false, mongoerr.New(mongoerr.IndexOptionsConflict, "An existing index has the same name as the requested index. When index names are not specified, they are auto generated and can cause conflicts. Please refer to our documentation. Requested index: %s, existing index: %s", bson.Raw(spec.Doc()), bson.Raw(existing.Doc()))
			}
			return false, nil
		case ix.Name == spec.Name:
			return false, mongoerr.New(mongoerr.IndexKeySpecsConflict, "An existing index has the same name as the requested index. Requested index: %s, existing index key: %s", bson.Raw(spec.Doc()), ix.Key)
		case sameKey:
			existing, err := e.specs.get(ix)
			if err != nil {
				return false, err
			}
			if existing.Unique == spec.Unique && existing.Sparse == spec.Sparse && bytes.Equal(existing.PartialFilterExpression, spec.PartialFilterExpression) {
				return false, mongoerr.New(mongoerr.IndexOptionsConflict, "Index already exists with a different name: %s", ix.Name)
			}
		}
	}
	if spec.IsText() {
		for _, ix := range coll.Indexes {
			if existing, err := e.specs.get(ix); err == nil && existing.IsText() {
				return false, mongoerr.New(mongoerr.CannotCreateIndex, "only one text index per collection allowed, found existing text index \"%s\"", ix.Name)
			}
		}
	}
	return true, nil
}

// DropIndexes drops the named indexes of ns ("*" drops every secondary
// index); it returns how many indexes there were, _id included.
func (e *Engine) DropIndexes(ns Namespace, names []string) (was int, err error) {
	err = e.db.Write(func(tx *storage.Txn) error {
		coll := e.cat.Working().Collection(ns.DB, ns.Coll)
		if coll == nil {
			return mongoerr.New(mongoerr.NamespaceNotFound, "ns not found %s", ns)
		}
		was = 1 + len(coll.Indexes)
		if len(names) == 1 && names[0] == "*" {
			names = names[:0]
			for _, ix := range coll.Indexes {
				names = append(names, ix.Name)
			}
		}
		for _, name := range names {
			if name == catalog.IDIndexName {
				return mongoerr.New(mongoerr.InvalidOptions, "cannot drop _id index")
			}
			if err := e.cat.DropIndex(tx, ns.DB, ns.Coll, name); err != nil {
				return err
			}
			e.logCommand(tx, ns.DB, coll.UUID.Data, bsoncore.NewDocumentBuilder().
				AppendString("dropIndexes", ns.Coll).AppendString("index", name).Build())
		}
		return nil
	})
	return was, err
}

// IndexSpecs lists ns's secondary index specifications as listIndexes shows them.
func (e *Engine) IndexSpecs(ns Namespace) ([]bsoncore.Document, error) {
	coll := e.cat.Current().Collection(ns.DB, ns.Coll)
	if coll == nil {
		return nil, nil
	}
	out := make([]bsoncore.Document, 0, len(coll.Indexes))
	for _, ix := range coll.Indexes {
		s, err := e.specs.get(ix)
		if err != nil {
			return nil, err
		}
		out = append(out, s.Doc())
	}
	return out, nil
}

// newIndexTypeBits is whether new indexes store type bits in their entries
// (catalog.Index.TypeBits): always, but tests turn it off to make indexes
// as Cairn made them before type bits existed.
var newIndexTypeBits = true

// defaultCollation is coll's default collation document (create's
// collation option, kept normalized), nil when it has none.
func defaultCollation(coll *catalog.Collection) bsoncore.Document {
	if coll == nil || len(coll.Options) == 0 {
		return nil
	}
	d, ok := bsoncore.Document(coll.Options).Lookup("collation").DocumentOK()
	if !ok {
		return nil
	}
	return d
}

// withCollation is the index spec spec with a collation field added.
func withCollation(spec, coll bsoncore.Document) bsoncore.Document {
	elems, _ := spec.Elements()
	b := bsoncore.NewDocumentBuilder()
	for _, el := range elems {
		b.AppendValue(el.Key(), el.Value())
	}
	return b.AppendDocument("collation", coll).Build()
}
