package commands

import (
	"context"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/catalog"
	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/exec"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/session"
	"github.com/cairndb/cairn/internal/storage"
	"github.com/cairndb/cairn/internal/timeseries"
)

// This file holds time series collections at the command boundary:
// create's timeseries and expireAfterSeconds options, listCollections'
// shape, and the checks MongoDB 7.0 makes of updates on them. exec runs
// their writes (exec/timeseries.go); reads go through their view.

// tsCommands are the commands that reach a time series collection through
// its view's namespace (checkView lets them past); the rest are refused
// there as on any view.
var tsCommands = map[string]bool{"insert": true, "delete": true, "update": true,
	"createIndexes": true, "listIndexes": true, "dropIndexes": true, "collStats": true}

// timeseriesOf returns the time series collection db.name (ok false when
// it is not one).
func timeseriesOf(eng *engine.Engine, db, name string) (exec.Timeseries, bool) {
	v := eng.Catalog().View(db, name)
	if !v.IsTimeseries() {
		return exec.Timeseries{}, false
	}
	o, err := timeseries.ParseOptions(bsoncore.Document(v.Timeseries), "timeseries")
	if err != nil {
		return exec.Timeseries{}, false
	}
	return exec.Timeseries{Buckets: engine.Namespace{DB: db, Coll: timeseries.BucketsCollection(name)}, Opts: o}, true
}

// tsCreateOptionsOK are create's fields that may go with timeseries
// (MongoDB's kAllowedCollectionCreationOptions, less what Cairn refuses).
var tsCreateOptionsOK = map[string]bool{"timeseries": true, "expireAfterSeconds": true}

// createTimeseries runs create with timeseries: the view name over
// system.buckets.<name>.
func createTimeseries(ctx context.Context, s *Session, req *Request, name string) error {
	ns := req.DB + "." + name
	elems, _ := req.Body.Elements()
	for _, el := range elems[1:] {
		k := el.Key()
		switch {
		case tsCreateOptionsOK[k] || isGeneric(k):
		case k == "capped" && !el.Value().Boolean():
		case k == "collation":
			return mongoerr.New(mongoerr.InvalidOptions, "%s: a collation on a time series collection is not supported by Cairn yet", ns)
		default:
			return mongoerr.New(mongoerr.InvalidOptions, "%s: 'timeseries' is not allowed with '%s'", ns, k)
		}
	}
	d, err := req.Document("timeseries")
	if err != nil {
		return err
	}
	o, err := timeseries.ParseOptions(d, "create.timeseries")
	if err != nil {
		return err
	}
	v := catalog.View{ID: ns, ViewOn: timeseries.BucketsCollection(name),
		Pipeline:   bson.Raw(bsoncore.NewArrayBuilder().AppendDocument(o.UnpackStage()).Build()),
		Timeseries: bson.Raw(o.Document())}
	if v.ExpireAfterSeconds, err = expireAfterSeconds(req); err != nil {
		return err
	}
	return s.Env.Engine.CreateTimeseries(ctx, v, o)
}

// expireAfterSeconds reads create's expireAfterSeconds (nil when absent).
func expireAfterSeconds(req *Request) (*int64, error) {
	v, ok := req.Arg("expireAfterSeconds")
	if !ok {
		return nil, nil
	}
	return ttlSeconds("create", "[long, int, decimal, double]", v)
}

// ttlSeconds reads a collection's expireAfterSeconds for command cmd: a
// non-negative number (types names the types cmd takes, for the error).
func ttlSeconds(cmd, types string, v bsoncore.Value) (*int64, error) {
	n, isNum := numberAsInt(v)
	if !isNum {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '%s.expireAfterSeconds' is the wrong type '%s', expected types '%s'", cmd, typeName(v.Type), types)
	}
	if n < 0 {
		return nil, mongoerr.New(mongoerr.InvalidOptions, "TTL index 'expireAfterSeconds' option must be within an acceptable range, try a lower number")
	}
	return &n, nil
}

// timeseriesListing is a time series collection as listCollections shows
// it.
func timeseriesListing(v *catalog.View, nameOnly bool) bsoncore.Document {
	if nameOnly {
		return doc("name", v.Name(), "type", "timeseries")
	}
	opts := bsoncore.NewDocumentBuilder()
	if v.ExpireAfterSeconds != nil {
		opts.AppendInt64("expireAfterSeconds", *v.ExpireAfterSeconds)
	}
	opts.AppendDocument("timeseries", bsoncore.Document(v.Timeseries))
	return doc("name", v.Name(), "type", "timeseries", "options", opts.Build(), "info", doc("readOnly", false))
}

// checkTimeseriesUpdate applies MongoDB 7.0's restrictions on updates of a
// time series collection (InvalidOptions for each): a metaField is needed,
// the update is multi, not an upsert, made of operators, and both its
// filter and its operators touch the metaField only.
func checkTimeseriesUpdate(ts exec.Timeseries, spec exec.Update, st bsoncore.Document) error {
	mf := ts.Opts.MetaField
	if mf == "" {
		return mongoerr.New(mongoerr.InvalidOptions, "Cannot perform an update on a time-series collection that does not have a metaField")
	}
	if !spec.Multi {
		return mongoerr.New(mongoerr.InvalidOptions, "Cannot perform a non-multi update on a time-series collection")
	}
	if spec.Upsert {
		return mongoerr.New(mongoerr.InvalidOptions, "Cannot perform an upsert on a time-series collection")
	}
	u := st.Lookup("u")
	ud, isDoc := u.DocumentOK()
	if !isDoc || spec.Mod.IsReplacement() {
		return mongoerr.New(mongoerr.InvalidOptions, "Cannot perform an update on a time-series collection using a pipeline update or a replacement document")
	}
	if !onlyMeta(spec.Sel.RawFilter, mf) {
		return mongoerr.New(mongoerr.InvalidOptions, "Cannot perform an update on a time-series collection when querying on a field that is not the metaField '%s'", mf)
	}
	ops, _ := ud.Elements()
	for _, op := range ops {
		od, _ := op.Value().DocumentOK()
		fields, _ := od.Elements()
		for _, f := range fields {
			ok := isMetaPath(f.Key(), mf)
			if op.Key() == "$rename" {
				to, _ := f.Value().StringValueOK()
				ok = ok && isMetaPath(to, mf)
			}
			if !ok {
				return mongoerr.New(mongoerr.InvalidOptions, "Cannot perform an update on a time-series collection which updates a field that is not the metaField '%s'", mf)
			}
		}
	}
	return nil
}

func isMetaPath(p, mf string) bool { return p == mf || strings.HasPrefix(p, mf+".") }

// onlyMeta reports whether filter's predicates are all on the meta field
// (through $and, $or and $nor).
func onlyMeta(filter bsoncore.Document, mf string) bool {
	elems, _ := filter.Elements()
	for _, el := range elems {
		switch k := el.Key(); k {
		case "$and", "$or", "$nor":
			arr, _ := el.Value().ArrayOK()
			vals, _ := arr.Values()
			for _, v := range vals {
				d, ok := v.DocumentOK()
				if !ok || !onlyMeta(d, mf) {
					return false
				}
			}
		default:
			if !isMetaPath(k, mf) {
				return false
			}
		}
	}
	return true
}

// timeseriesIndexSpecs are createIndexes' specs on a time series
// collection rewritten for its buckets.
func timeseriesIndexSpecs(ts exec.Timeseries, specs []bsoncore.Document) ([]bsoncore.Document, error) {
	out := make([]bsoncore.Document, len(specs))
	for i, sp := range specs {
		var err error
		if out[i], err = ts.Opts.BucketsIndexSpec(sp); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// timeseriesIndexListing is listIndexes of a time series collection: its
// buckets' indexes with the keys the user gave (MongoDB lists no _id
// index for one).
func timeseriesIndexListing(ts exec.Timeseries, specs []bsoncore.Document) []bsoncore.Document {
	out := make([]bsoncore.Document, 0, len(specs))
	for _, sp := range specs {
		key, ok := ts.Opts.UserIndexKey(sp.Lookup("key").Document())
		if !ok {
			out = append(out, sp)
			continue
		}
		b := bsoncore.NewDocumentBuilder()
		elems, _ := sp.Elements()
		for _, el := range elems {
			if el.Key() == "key" {
				b.AppendDocument("key", key)
			} else {
				b.AppendValue(el.Key(), el.Value())
			}
		}
		out = append(out, b.Build())
	}
	return out
}

// timeseriesIndexKey is dropIndexes' index argument on a time series
// collection: a key pattern becomes the buckets' one, a name stays.
func timeseriesIndexKey(ts exec.Timeseries, v bsoncore.Value) (bsoncore.Value, error) {
	d, ok := v.DocumentOK()
	if !ok {
		return v, nil
	}
	spec, err := ts.Opts.BucketsIndexSpec(bsoncore.NewDocumentBuilder().AppendDocument("key", d).Build())
	if err != nil {
		return v, err
	}
	return spec.Lookup("key"), nil
}

// timeseriesStats is collStats' timeseries section: the buckets
// collection and how many buckets it holds (MongoDB's bucket counters —
// inserts, closes by reason — are not kept).
func timeseriesStats(ts exec.Timeseries, st engine.CollectionStats) bsoncore.Document {
	r := NewReply(nil).String("bucketsNs", ts.Buckets.String()).Count("bucketCount", st.Count)
	if st.Count > 0 {
		r.Count("avgBucketSize", st.DataSize/st.Count)
	}
	return r.End()
}

// insertTimeseries inserts a batch of measurements; as a retryable write
// (retry set) the statements already done are skipped and the others'
// records commit with the buckets, as for any insert (retryable.go).
func insertTimeseries(ctx context.Context, x *exec.Env, ts exec.Timeseries, r *session.Retry, wb writeBatch) (engine.InsertResult, error) {
	if r == nil {
		return x.InsertTimeseries(ctx, ts, exec.TimeseriesInsert{Docs: wb.stmts, Ordered: wb.ordered})
	}
	var res engine.InsertResult
	todo := make([]bsoncore.Document, 0, len(wb.stmts))
	at := make([]int, 0, len(wb.stmts))
	for i, d := range wb.stmts {
		if _, done := r.Done(int32(i)); done {
			res.Inserted++
			continue
		}
		todo = append(todo, d)
		at = append(at, i)
	}
	if len(todo) == 0 {
		return res, nil
	}
	stmtIDs := make([]int32, len(at))
	for k, i := range at {
		stmtIDs[k] = int32(i)
	}
	more, err := x.InsertTimeseries(ctx, ts, exec.TimeseriesInsert{Docs: todo, Ordered: wb.ordered, Session: r.OplogSession(stmtIDs...),
		Rider: func(tx *storage.Txn, stored []int) error {
			stmts := make([]session.Stmt, len(stored))
			for k, j := range stored {
				stmts[k] = session.Stmt{ID: int32(at[j]), Result: stmtResult(exec.UpdateResult{}, bsoncore.Value{})}
			}
			return r.Record(tx, stmts...)
		}})
	if err != nil {
		return engine.InsertResult{}, err
	}
	res.Inserted += more.Inserted
	for _, we := range more.WriteErrors {
		res.WriteErrors = append(res.WriteErrors, engine.WriteError{Index: at[we.Index], Err: we.Err})
	}
	return res, nil
}
