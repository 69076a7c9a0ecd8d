package commands

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/catalog"
	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/index"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// This file holds createIndexes, listIndexes and dropIndexes.

func cmdCreateIndexes(ctx context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	coll, err := req.Collection()
	if err != nil {
		return nil, err
	}
	specs, err := req.Docs("indexes")
	if err != nil {
		return nil, err
	}
	if len(specs) == 0 {
		return nil, mongoerr.New(mongoerr.BadValue, "Must specify at least one index to create")
	}
	quorum, hasQuorum := req.Arg("commitQuorum")
	var members int64
	if hasQuorum {
		if members, err = commitQuorumMembers(s, quorum); err != nil {
			return nil, err
		}
	}
	ignoreUnknown, err := req.Bool("ignoreUnknownIndexOptions", false)
	if err != nil {
		return nil, err
	}
	if ignoreUnknown {
		for i, spec := range specs {
			specs[i] = index.WithoutUnknownOptions(spec)
		}
	}
	ns := engine.Namespace{DB: req.DB, Coll: coll}
	tx, err := txnDDL(s, req.Name)
	if err != nil {
		return nil, err
	}
	if tx != nil && hasQuorum {
		return nil, mongoerr.New(mongoerr.OperationNotSupportedInTransaction, "Cannot run createIndexes with commitQuorum in a multi-document transaction.")
	}
	if ts, ok := timeseriesOf(s.Env.Engine, ns.DB, ns.Coll); ok && tx != nil {
		return nil, errTimeseriesInTxn("create indexes on", ns)
	} else if ok {
		if specs, err = timeseriesIndexSpecs(ts, specs); err != nil { // timeseries.go
			return nil, err
		}
		ns = ts.Buckets
	}
	var res engine.CreateIndexesResult
	if tx != nil {
		res, err = s.Env.Engine.CreateIndexesIn(tx, ns, specs)
	} else {
		res, err = s.Env.Engine.CreateIndexes(ctx, ns, specs)
	}
	if err != nil {
		return nil, err
	}
	if members > 0 && !res.AllExisted {
		w := bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, members)}
		if wce := s.Env.Repl.WaitWriteConcern(ctx, w, 0); wce != nil {
			msg, _ := wce.Lookup("errmsg").StringValueOK()
			return nil, mongoerr.New(mongoerr.IndexBuildAborted, "index build interrupted while waiting for commitQuorum %s: %s", quorum, msg)
		}
	}
	r := NewReply(dst).Int32("numIndexesBefore", int32(res.Before)).Int32("numIndexesAfter", int32(res.After))
	if res.AllExisted {
		r.String("note", "all indexes already exist")
	} else {
		r.Bool("createdCollectionAutomatically", res.CreatedCollection)
	}
	if hasQuorum {
		r.Value("commitQuorum", quorum)
	}
	return r.Finish(), nil
}

// commitQuorumMembers reads createIndexes' commitQuorum: how many members
// must hold the index build before the reply, 0 for no wait. Cairn builds
// an index in one replicated step (the Raft entry every member applies),
// so "majority" is met when the build commits, and "votingMembers" or a
// number N waits, as w: N does, until that many members hold the entry
// (each builds the index as it applies it). A standalone refuses the
// option, as mongod does; a name other than the two modes is a tag, and
// Cairn has no tag sets.
func commitQuorumMembers(s *Session, quorum bsoncore.Value) (int64, error) {
	if s.Env.Repl == nil {
		return 0, mongoerr.New(mongoerr.BadValue, "Standalones can't specify commitQuorum")
	}
	voters, err := configVoters(s.Env.Repl)
	if err != nil {
		return 0, err
	}
	if mode, ok := quorum.StringValueOK(); ok {
		switch mode {
		case "majority":
			return 0, nil
		case "votingMembers":
			return voters, nil
		}
		return 0, mongoerr.New(mongoerr.UnsatisfiableCommitQuorum, "Commit quorum cannot be satisfied with the current replica set configuration: No write concern mode named '%s' found in replica set configuration", mode)
	}
	n, ok := numberAsInt(quorum)
	if !ok {
		return 0, mongoerr.New(mongoerr.TypeMismatch, "commitQuorum has to be a number or a string, not %s", typeName(quorum.Type))
	}
	if n < 0 || n > voters {
		return 0, mongoerr.New(mongoerr.UnsatisfiableCommitQuorum, "Commit quorum cannot be satisfied with the current replica set configuration: Not enough data-bearing voting nodes to satisfy %d", n)
	}
	return n, nil
}

// configVoters counts the voting members of the set's configuration
// (votes defaults to 1).
func configVoters(rs ReplicaSet) (int64, error) {
	cfg, err := rs.ConfigDocument()
	if err != nil {
		return 0, err
	}
	members, _ := cfg.Lookup("members").ArrayOK()
	vals, _ := members.Values()
	var n int64
	for _, v := range vals {
		m, _ := v.DocumentOK()
		votes, ok := numberAsInt(m.Lookup("votes"))
		if !ok || votes > 0 {
			n++
		}
	}
	return n, nil
}

// cmdListIndexes lists the _id index and the secondary indexes.
func cmdListIndexes(_ context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	coll, err := req.Collection()
	if err != nil {
		return nil, err
	}
	ns := engine.Namespace{DB: req.DB, Coll: coll}
	if err := catalog.ValidateCollectionName(ns.DB, ns.Coll); err != nil {
		return nil, err
	}
	if ts, ok := timeseriesOf(s.Env.Engine, ns.DB, ns.Coll); ok {
		specs, err := s.Env.Engine.IndexSpecs(ts.Buckets)
		if err != nil {
			return nil, err
		}
		return listCursor(s, req, dst, ns.String(), timeseriesIndexListing(ts, specs))
	}
	if s.Env.Engine.Catalog().Collection(ns.DB, ns.Coll) == nil {
		return nil, mongoerr.New(mongoerr.NamespaceNotFound, "ns does not exist: %s", ns)
	}
	specs, err := s.Env.Engine.IndexSpecs(ns)
	if err != nil {
		return nil, err
	}
	id := idIndexSpec()
	if ci, ok := clusteredIDIndex(s.Env.Engine.Catalog().Collection(ns.DB, ns.Coll)); ok {
		id = ci // clustered.go
	}
	return listCursor(s, req, dst, ns.String(), append([]bsoncore.Document{id}, specs...))
}

// cmdDropIndexes drops indexes named by index: a name, a key pattern, an
// array of names, or "*" for every secondary index.
func cmdDropIndexes(ctx context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	coll, err := req.Collection()
	if err != nil {
		return nil, err
	}
	ns := engine.Namespace{DB: req.DB, Coll: coll}
	v, ok := req.Arg("index")
	if !ok {
		return nil, mongoerr.New(mongoerr.FailedToParse, "BSON field 'dropIndexes.index' is missing but a required field")
	}
	if ts, ok := timeseriesOf(s.Env.Engine, ns.DB, ns.Coll); ok {
		ns = ts.Buckets
		if v, err = timeseriesIndexKey(ts, v); err != nil {
			return nil, err
		}
	}
	names, err := indexNames(s, ns, v)
	if err != nil {
		return nil, err
	}
	var was int
	err = s.Env.Engine.AwaitPrepared(ctx, []engine.Namespace{ns}, func() (err error) {
		was, err = s.Env.Engine.DropIndexes(ns, names)
		return err
	})
	if err != nil {
		return nil, err
	}
	return NewReply(dst).Int32("nIndexesWas", int32(was)).Finish(), nil
}

// indexNames resolves dropIndexes' index argument to names.
func indexNames(s *Session, ns engine.Namespace, v bsoncore.Value) ([]string, error) {
	if ci, ok := engine.ClusteredOf(s.Env.Engine.Catalog().Collection(ns.DB, ns.Coll)); ok && v.Type == bsoncore.TypeString {
		if n, _ := ci.Lookup("name").StringValueOK(); n == v.StringValue() {
			return []string{catalog.IDIndexName}, nil // the clustered index is the _id index: not droppable
		}
	}
	switch v.Type {
	case bsoncore.TypeString:
		return []string{v.StringValue()}, nil
	case bsoncore.TypeArray:
		vals, _ := v.Array().Values()
		names := make([]string, 0, len(vals))
		for _, el := range vals {
			n, ok := el.StringValueOK()
			if !ok {
				return nil, mongoerr.New(mongoerr.TypeMismatch, "dropIndexes index names must be strings")
			}
			names = append(names, n)
		}
		return names, nil
	case bsoncore.TypeEmbeddedDocument:
		coll := s.Env.Engine.Catalog().Collection(ns.DB, ns.Coll)
		if coll == nil {
			return nil, mongoerr.New(mongoerr.NamespaceNotFound, "ns not found %s", ns)
		}
		// Key patterns compare as MongoDB compares them: field by field,
		// numbers by value ({a: 1} is {a: 1.0}).
		for _, ix := range coll.Indexes {
			if bsonx.Equal(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: ix.Key}, v) {
				return []string{ix.Name}, nil
			}
		}
		if bsonx.Equal(idIndexSpec().Lookup("key"), v) {
			return []string{catalog.IDIndexName}, nil
		}
		return nil, mongoerr.New(mongoerr.IndexNotFound, "can't find index with key: %s", v.Document())
	}
	return nil, mongoerr.New(mongoerr.TypeMismatch, "dropIndexes 'index' must be a string, an array of strings or a key pattern")
}

// cmdCollMod changes collection options: its index option
// (expireAfterSeconds of a TTL index, hidden), which is what the TTL
// monitor and the planner read, and the validation options (validator,
// validationLevel, validationAction), which the engine enforces from the
// commit that sets them. Other options are not supported yet.
func cmdCollMod(ctx context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	coll, err := req.Collection()
	if err != nil {
		return nil, err
	}
	if isView(s, req.DB, coll) {
		return OK(dst), collModView(s, req, coll)
	}
	if err := checkCollModTarget(req); err != nil {
		return nil, err
	}
	ns := engine.Namespace{DB: req.DB, Coll: coll}
	var ch *engine.IndexChange
	var validationSet []bsoncore.Element
	dryRun := false
	elems, _ := req.Body.Elements()
	for _, el := range elems[1:] {
		switch k := el.Key(); {
		case k == "index":
			if ch, err = parseIndexChange(el.Value()); err != nil {
				return nil, err
			}
		case k == "validator" || k == "validationLevel" || k == "validationAction" || k == "versioning":
			validationSet = append(validationSet, el)
		case k == "dryRun":
			if dryRun, err = req.Bool("dryRun", false); err != nil {
				return nil, err
			}
		case k == "changeStreamPreAndPostImages":
			set, err := preImagesOption("collMod", el.Value())
			if err != nil {
				return nil, err
			}
			validationSet = append(validationSet, set)
		case k == "expireAfterSeconds": // a clustered collection's TTL
			secs, err := collModExpiry(el.Value())
			if err != nil {
				return nil, err
			}
			validationSet = append(validationSet, expiryElement(secs))
		case k == "cappedSize" || k == "cappedMax":
			set, err := cappedResize(s, ns, el)
			if err != nil {
				return nil, err
			}
			validationSet = append(validationSet, set)
		case isGeneric(k):
		default:
			return nil, notYet("collMod option '" + k + "'")
		}
	}
	if dryRun {
		// MongoDB's dry run checks a unique conversion and nothing else.
		switch {
		case ch == nil:
			return nil, mongoerr.New(mongoerr.InvalidOptions, "dry run mode requires an valid index modification.")
		case ch.Unique == nil || !*ch.Unique:
			return nil, mongoerr.New(mongoerr.InvalidOptions, "dry run mode requires an index modification with unique: true.")
		case ch.Hidden != nil || ch.ExpireAfterSeconds != nil || ch.PrepareUnique != nil || len(validationSet) > 0:
			return nil, mongoerr.New(mongoerr.InvalidOptions, "unique: true cannot be combined with any other modification in dry run mode.")
		}
		ch.DryRun = true
	}
	r := NewReply(dst)
	if ch == nil && len(validationSet) == 0 {
		if s.Env.Engine.Catalog().Collection(ns.DB, ns.Coll) == nil {
			return nil, mongoerr.New(mongoerr.NamespaceNotFound, "ns does not exist: %s", ns)
		}
		return r.Finish(), nil
	}
	var res engine.IndexChangeResult
	err = s.Env.Engine.AwaitPrepared(ctx, []engine.Namespace{ns}, func() (err error) {
		res, err = s.Env.Engine.CollMod(ns, validationSet, ch)
		return err
	})
	if err != nil {
		return nil, err
	}
	if res.OldHidden != nil {
		r.Bool("hidden_old", *res.OldHidden).Bool("hidden_new", *res.NewHidden)
	}
	if res.OldExpire != nil {
		r.Int64("expireAfterSeconds_old", *res.OldExpire).Int64("expireAfterSeconds_new", *res.NewExpire)
	}
	if res.OldPrepareUnique != nil {
		r.Bool("prepareUnique_old", *res.OldPrepareUnique).Bool("prepareUnique_new", *res.NewPrepareUnique)
	}
	if res.NewUnique != nil {
		r.Bool("unique_new", *res.NewUnique)
	}
	return r.Finish(), nil
}

// parseIndexChange reads collMod's index document: keyPattern or name,
// then expireAfterSeconds, hidden, prepareUnique and/or unique.
func parseIndexChange(v bsoncore.Value) (*engine.IndexChange, error) {
	d, ok := v.DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'collMod.index' is the wrong type '%s', expected type 'object'", typeName(v.Type))
	}
	ch := &engine.IndexChange{}
	elems, _ := d.Elements()
	for _, el := range elems {
		val := el.Value()
		switch el.Key() {
		case "name":
			n, ok := val.StringValueOK()
			if !ok {
				return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'collMod.index.name' is the wrong type '%s', expected type 'string'", typeName(val.Type))
			}
			ch.Name = n
		case "keyPattern":
			k, ok := val.DocumentOK()
			if !ok {
				return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'collMod.index.keyPattern' is the wrong type '%s', expected type 'object'", typeName(val.Type))
			}
			ch.Key = append(bsoncore.Document(nil), k...)
		case "expireAfterSeconds":
			n, ok := numberAsInt(val)
			if !ok || n < 0 {
				return nil, mongoerr.New(mongoerr.BadValue, "expireAfterSeconds must be a number >= 0, got %s", val)
			}
			ch.ExpireAfterSeconds = &n
		case "hidden":
			b, ok := val.BooleanOK()
			if !ok {
				return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'collMod.index.hidden' is the wrong type '%s', expected type 'bool'", typeName(val.Type))
			}
			ch.Hidden = &b
		case "prepareUnique", "unique":
			b, ok := val.BooleanOK()
			if !ok {
				return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'collMod.index.%s' is the wrong type '%s', expected type 'bool'", el.Key(), typeName(val.Type))
			}
			if el.Key() == "unique" {
				ch.Unique = &b
			} else {
				ch.PrepareUnique = &b
			}
		default:
			return nil, mongoerr.New(mongoerr.UnknownField, "BSON field 'collMod.index.%s' is an unknown field.", el.Key())
		}
	}
	if (ch.Name == "") == (ch.Key == nil) {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "must specify either index name or key pattern")
	}
	if ch.ExpireAfterSeconds == nil && ch.Hidden == nil && ch.PrepareUnique == nil && ch.Unique == nil {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "no expireAfterSeconds, hidden, prepareUnique or unique field")
	}
	return ch, nil
}

// collModExpiry reads collMod's expireAfterSeconds for a clustered or time
// series collection: a non-negative number of seconds, or "off" (nil) to
// remove the TTL.
func collModExpiry(v bsoncore.Value) (*int64, error) {
	if str, ok := v.StringValueOK(); ok {
		if str != "off" {
			return nil, mongoerr.New(mongoerr.InvalidOptions, "Invalid value for 'expireAfterSeconds': %q (a number of seconds or \"off\")", str)
		}
		return nil, nil
	}
	return ttlSeconds("collMod", "[string, long, int, decimal, double]", v)
}

// expiryElement is the options element collMod sets for secs ("off" when
// nil, which engine.CollMod reads as a removal).
func expiryElement(secs *int64) bsoncore.Element {
	if secs == nil {
		return bsoncore.Element(bsoncore.AppendStringElement(nil, "expireAfterSeconds", "off"))
	}
	return bsoncore.Element(bsoncore.AppendInt64Element(nil, "expireAfterSeconds", *secs))
}
