package commands

import (
	"context"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/catalog"
	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// This file holds the commands that create, drop, rename and list
// collections and databases.

// createOptions returns the create command's options: capped, size and
// max normalized (parseCapped), then every other field but the command
// name and generic arguments, in the order sent.
func createOptions(req *Request) (bson.Raw, error) {
	elems, err := req.Body.Elements()
	if err != nil {
		return nil, err
	}
	capped, err := parseCapped(req.Arg, "create")
	if err != nil {
		return nil, err
	}
	r := NewReply(nil)
	capped.appendOptions(r) // normalized, first, as MongoDB lists them
	n := len(*r.Raw())
	for _, el := range elems[1:] {
		switch key := el.Key(); {
		case isGeneric(key):
			continue // Run checked the rest against the registry
		case key == "capped" || key == "size" || key == "max":
			continue // written normalized, first
		case key == "idIndex" || key == "autoIndexId":
			continue // see createIDIndex
		case key == "clusteredIndex":
			ci, err := parseClusteredIndex(el.Value()) // clustered.go
			if err != nil {
				return nil, err
			}
			r.Doc("clusteredIndex", ci)
			continue
		case key == "expireAfterSeconds":
			n, err := expireAfterSeconds(req)
			if err != nil {
				return nil, err
			}
			r.Int64("expireAfterSeconds", *n)
			continue
		case key == "changeStreamPreAndPostImages":
			el, err := preImagesOption("create", el.Value())
			if err != nil {
				return nil, err
			}
			*r.Raw() = append(*r.Raw(), el...)
			continue
		case key == "collation":
			// Kept normalized, every option filled in, as MongoDB lists a
			// collection's default collation; a simple one is no default.
			c, err := parseCollationValue("create.collation", el.Value())
			if err != nil {
				return nil, err
			}
			if c != nil {
				r.Doc("collation", c.Document())
			}
			continue
		}
		*r.Raw() = append(*r.Raw(), el...)
	}
	if len(*r.Raw()) == n && !capped.capped {
		return nil, nil
	}
	return bson.Raw(r.End()), nil
}

func cmdCreate(ctx context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	name, err := req.Collection()
	if err != nil {
		return nil, err
	}
	tx, err := txnDDL(s, req.Name)
	if err != nil {
		return nil, err
	}
	if tx != nil {
		for _, kind := range []string{"timeseries", "viewOn", "pipeline"} {
			if _, ok := req.Arg(kind); ok {
				return nil, mongoerr.New(mongoerr.OperationNotSupportedInTransaction, "Cannot create a view or a time-series collection (%s) in a multi-document transaction.", kind)
			}
		}
	}
	if _, ok := req.Arg("timeseries"); ok {
		if _, isView := req.Arg("viewOn"); isView {
			return nil, mongoerr.New(mongoerr.InvalidOptions, "%s.%s: 'timeseries' is not allowed with 'viewOn'", req.DB, name)
		}
		return OK(dst), createTimeseries(ctx, s, req, name) // timeseries.go
	}
	_, clustered := req.Arg("clusteredIndex")
	if _, ok := req.Arg("expireAfterSeconds"); ok && !clustered {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "'expireAfterSeconds' is only supported on time-series collections or when the 'clusteredIndex' option is specified")
	}
	if _, ok := req.Arg("viewOn"); ok {
		return OK(dst), createView(s, req, name)
	}
	if _, ok := req.Arg("pipeline"); ok {
		return OK(dst), createView(s, req, name) // refused: pipeline needs viewOn
	}
	opts, err := createOptions(req)
	if err != nil {
		return nil, err
	}
	if err := createIDIndex(req); err != nil {
		return nil, err
	}
	if _, hasID := req.Arg("idIndex"); hasID && clustered {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "The 'clusteredIndex' option is not supported with the 'idIndex' option")
	}
	if capped, _ := req.Bool("capped", false); capped && clustered {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "a capped clustered collection is not supported by Cairn yet")
	}
	if tx != nil {
		if err := s.Env.Engine.CreateCollectionIn(tx, engine.Namespace{DB: req.DB, Coll: name}, opts); err != nil {
			return nil, err
		}
		return OK(dst), nil
	}
	if err := s.Env.Engine.CreateCollection(engine.Namespace{DB: req.DB, Coll: name}, opts); err != nil {
		return nil, err
	}
	return OK(dst), nil
}

// cmdDrop drops a collection. Since MongoDB 7.0 dropping a collection that
// does not exist succeeds.
func cmdDrop(ctx context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	name, err := req.Collection()
	if err != nil {
		return nil, err
	}
	ns := engine.Namespace{DB: req.DB, Coll: name}
	if s.Env.Sharding != nil {
		s.Env.Sharding.Dropped(ctx, ns.DB, ns.Coll)
	}
	coll := s.Env.Engine.Catalog().Collection(ns.DB, ns.Coll)
	var existed bool
	err = s.Env.Engine.AwaitPrepared(ctx, []engine.Namespace{ns}, func() (err error) {
		existed, err = s.Env.Engine.DropCollection(ns)
		return err
	})
	if err != nil {
		return nil, err
	}
	r := NewReply(dst)
	if existed && coll != nil {
		r.Int32("nIndexesWas", int32(1+len(coll.Indexes)))
		r.String("ns", ns.String())
	}
	return r.Finish(), nil
}

func cmdDropDatabase(ctx context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	if s.Env.Sharding != nil {
		s.Env.Sharding.Dropped(ctx, req.DB, "")
	}
	var n int
	err := s.Env.Engine.AwaitPrepared(ctx, []engine.Namespace{{DB: req.DB}}, func() (err error) {
		n, err = s.Env.Engine.DropDatabase(req.DB)
		return err
	})
	if err != nil {
		return nil, err
	}
	r := NewReply(dst)
	if n > 0 {
		r.String("dropped", req.DB)
	}
	return r.Finish(), nil
}

func cmdRenameCollection(ctx context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	from, ok := req.First().StringValueOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "'renameCollection' must be of type String")
	}
	to, err := req.String("to", "")
	if err != nil {
		return nil, err
	}
	dropTarget, err := req.Bool("dropTarget", false)
	if err != nil {
		return nil, err
	}
	fromNS, err := splitNamespace(from)
	if err != nil {
		return nil, err
	}
	toNS, err := splitNamespace(to)
	if err != nil {
		return nil, err
	}
	if err := s.Env.Engine.AwaitPrepared(ctx, []engine.Namespace{fromNS, toNS}, func() error {
		return s.Env.Engine.RenameCollection(fromNS, toNS, dropTarget)
	}); err != nil {
		return nil, err
	}
	return OK(dst), nil
}

func splitNamespace(ns string) (engine.Namespace, error) {
	db, coll, ok := strings.Cut(ns, ".")
	if !ok || db == "" || coll == "" {
		return engine.Namespace{}, mongoerr.New(mongoerr.InvalidNamespace, "Invalid namespace specified '%s'", ns)
	}
	return engine.Namespace{DB: db, Coll: coll}, nil
}

// idIndexSpec is the _id index as listIndexes and listCollections show it.
func idIndexSpec() bsoncore.Document {
	return doc("v", int32(2), "key", bson.D{{Key: "_id", Value: int32(1)}}, "name", catalog.IDIndexName)
}

func cmdListCollections(_ context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	if err := catalog.ValidateDBName(req.DB); err != nil {
		return nil, err
	}
	nameOnly, err := req.Bool("nameOnly", false)
	if err != nil {
		return nil, err
	}
	filter, err := req.Document("filter")
	if err != nil {
		return nil, err
	}
	match, err := compileFilter(filter)
	if err != nil {
		return nil, err
	}
	var docs []bsoncore.Document
	for _, c := range s.Env.Engine.Catalog().Collections(req.DB) {
		var d bsoncore.Document
		if nameOnly {
			d = doc("name", c.Name, "type", "collection")
		} else {
			opts := c.Options
			if len(opts) == 0 {
				opts = bson.Raw(doc())
			}
			d = doc("name", c.Name, "type", "collection", "options", opts,
				"info", doc("readOnly", false, "uuid", c.UUID), "idIndex", idIndexSpec())
			if _, clustered := engine.ClusteredOf(c); clustered {
				d = doc("name", c.Name, "type", "collection", "options", opts,
					"info", doc("readOnly", false, "uuid", c.UUID)) // no idIndex, as in MongoDB
			}
		}
		if match(d) {
			docs = append(docs, d)
		}
	}
	for _, v := range s.Env.Engine.Catalog().Views(req.DB) {
		d := viewListing(v, nameOnly)
		if v.IsTimeseries() {
			d = timeseriesListing(v, nameOnly)
		}
		if match(d) {
			docs = append(docs, d)
		}
	}
	return listCursor(s, req, dst, req.DB+".$cmd.listCollections", docs)
}

func cmdListDatabases(_ context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	nameOnly, err := req.Bool("nameOnly", false)
	if err != nil {
		return nil, err
	}
	filter, err := req.Document("filter")
	if err != nil {
		return nil, err
	}
	match, err := compileFilter(filter)
	if err != nil {
		return nil, err
	}
	var dbs []bsoncore.Document
	var total int64
	for _, name := range s.Env.Engine.Catalog().Databases() {
		size := s.Env.Engine.DatabaseSize(name)
		var d bsoncore.Document
		if nameOnly {
			d = doc("name", name)
		} else {
			d = doc("name", name, "sizeOnDisk", size, "empty", false)
		}
		if match(d) {
			dbs = append(dbs, d)
			total += size
		}
	}
	r := NewReply(dst).DocArray("databases", dbs)
	if !nameOnly {
		r.Int64("totalSize", total)
		r.Int64("totalSizeMb", total>>20)
	}
	return r.Finish(), nil
}

func cmdDBStats(ctx context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	if err := catalog.ValidateDBName(req.DB); err != nil {
		return nil, err
	}
	scale, err := parseScale(req)
	if err != nil {
		return nil, err
	}
	// freeStorage asks for the space the storage holds for reuse. Pebble
	// keeps none per collection (its files are immutable; deleted data is
	// reclaimed by compaction, not reused in place), so each figure is 0,
	// as collStats' freeStorageSize.
	freeStorage, err := req.Bool("freeStorage", false)
	if err != nil {
		return nil, err
	}
	var objects, dataSize, storage, indexSize int64
	var indexes int
	colls := s.Env.Engine.Catalog().Collections(req.DB)
	for _, c := range colls {
		st, err := s.Env.Engine.CollectionStats(ctx, engine.Namespace{DB: c.DB, Coll: c.Name})
		if err != nil {
			return nil, err
		}
		objects += st.Count
		dataSize += st.DataSize
		storage += st.StorageSize
		indexes += 1 + st.Indexes
		indexSize += st.TotalIndexSize()
	}
	r := NewReply(dst)
	r.String("db", req.DB)
	r.Int64("collections", int64(len(colls)))
	r.Int64("views", int64(len(s.Env.Engine.Catalog().Views(req.DB))))
	r.Int64("objects", objects)
	if objects > 0 {
		r.Double("avgObjSize", float64(dataSize)/float64(objects))
	} else {
		r.Double("avgObjSize", 0)
	}
	r.Double("dataSize", float64(dataSize/scale))
	r.Double("storageSize", float64(storage/scale))
	if freeStorage {
		r.Double("freeStorageSize", 0)
	}
	r.Int64("indexes", int64(indexes))
	r.Double("indexSize", float64(indexSize/scale))
	if freeStorage {
		r.Double("indexFreeStorageSize", 0)
	}
	r.Double("totalSize", float64((storage+indexSize)/scale))
	if freeStorage {
		r.Double("totalFreeStorageSize", 0)
	}
	r.Int64("scaleFactor", scale)
	if used, total, ok := fsSizes(s.Env.Config.DBPath); ok {
		r.Double("fsUsedSize", float64(used/scale))
		r.Double("fsTotalSize", float64(total/scale))
	}
	return r.Finish(), nil
}

// parseScale reads the stats commands' scale (bytes per reported unit).
func parseScale(req *Request) (int64, error) {
	scale, err := req.Int("scale", 1)
	if err != nil {
		return 0, err
	}
	if scale < 1 {
		return 0, mongoerr.New(mongoerr.BadValue, "scale has to be >= 1")
	}
	return scale, nil
}
