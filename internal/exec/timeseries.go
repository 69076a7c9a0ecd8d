package exec

import (
	"context"
	"slices"
	"sync"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/opctx"
	"github.com/cairndb/cairn/internal/query"
	"github.com/cairndb/cairn/internal/storage"
	"github.com/cairndb/cairn/internal/timeseries"
	"github.com/cairndb/cairn/internal/update"
)

// Writes to a time series collection are writes to its buckets
// (package timeseries owns their shape). Each statement chooses its
// buckets from a snapshot, then changes them through engine.ModifyWith,
// which re-reads each bucket inside the commit pipeline, so a bucket's
// read-modify-write is atomic. The writes of one time series collection
// are serialised by a lock of its own (tsLock), so two inserts do not both
// open a bucket for the same meta and time.

// Timeseries names a time series collection's buckets and options.
type Timeseries struct {
	Buckets engine.Namespace
	Opts    timeseries.Options
}

var tsLocks sync.Map // buckets namespace -> *sync.Mutex

func tsLock(ns engine.Namespace) *sync.Mutex {
	m, _ := tsLocks.LoadOrStore(ns, new(sync.Mutex))
	return m.(*sync.Mutex)
}

// pendingBucket is a bucket one insert statement adds measurements to.
type pendingBucket struct {
	b       *timeseries.Bucket
	stored  bool // the bucket exists: it is rewritten, not inserted
	added   []bsoncore.Document
	size    int
	metaKey string
}

// TimeseriesInsert is one insert command's measurements for a time
// series collection.
type TimeseriesInsert struct {
	Docs    []bsoncore.Document
	Ordered bool
	// Rider, when set, runs in the commit of the buckets with the
	// positions in Docs of the measurements stored (a retryable write's
	// record, see Rider).
	Rider func(tx *storage.Txn, stored []int) error
	// Session, when set, goes into the changes' oplog entries.
	Session *engine.OplogSession
}

// InsertTimeseries inserts measurements into ts's buckets in one commit.
// A measurement that is not valid (no date in the time field, an array
// meta) is a write error; with ordered the ones after it are not
// inserted, as MongoDB does.
func (e *Env) InsertTimeseries(ctx context.Context, ts Timeseries, in TimeseriesInsert) (engine.InsertResult, error) {
	var res engine.InsertResult
	docs, ordered := in.Docs, in.Ordered
	ms := make([]timeseries.Measurement, 0, len(docs))
	stored := make([]int, 0, len(docs))
	for i, d := range docs {
		m, err := ts.Opts.Prepare(d)
		if err != nil {
			res.WriteErrors = append(res.WriteErrors, engine.WriteError{Index: i, Err: err})
			if ordered {
				break
			}
			continue
		}
		ms = append(ms, m)
		stored = append(stored, i)
	}
	if len(ms) == 0 {
		if in.Rider != nil {
			return res, e.eng.WriteRider(func(tx *storage.Txn) error { return in.Rider(tx, nil) })
		}
		return res, nil
	}
	mu := tsLock(ts.Buckets)
	mu.Lock()
	defer mu.Unlock()
	var pending []*pendingBucket
	byMeta := map[string][]*pendingBucket{}
	for _, m := range ms {
		key := string(rune(m.Meta.Type)) + string(m.Meta.Data)
		var target *pendingBucket
		for _, p := range byMeta[key] {
			if ts.Opts.Fits(p.b, m, p.size) {
				target = p
				break
			}
		}
		if target == nil {
			b, err := e.openBucket(ctx, ts, m, pending)
			if err != nil {
				return res, err
			}
			if b != nil {
				target = &pendingBucket{b: b, stored: true, size: b.Size(), metaKey: key}
			} else {
				target = &pendingBucket{b: ts.Opts.Open(m), metaKey: key}
				target.b.Measurements = nil
			}
			pending = append(pending, target)
			byMeta[key] = append(byMeta[key], target)
		}
		target.b.Measurements = append(target.b.Measurements, m.Doc)
		target.added = append(target.added, m.Doc)
		target.size += len(m.Doc)
	}
	ids := make([]bsoncore.Value, len(pending))
	for i, p := range pending {
		ids[i] = bsoncore.Value{Type: bsoncore.TypeObjectID, Data: p.b.ID[:]}
	}
	opts := engine.ModifyOptions{Ordered: true, Session: in.Session}
	if in.Rider != nil {
		opts.Rider = func(tx *storage.Txn, _ engine.ModifyResult) error { return in.Rider(tx, stored) }
	}
	_, err := e.eng.ModifyWith(ts.Buckets, ids, opts, func(i int, cur bsoncore.Document) (engine.Action, error) {
		p := pending[i]
		if cur == nil {
			// New, or gone since it was chosen (TTL, a drop of the
			// measurements): what this statement adds is the bucket.
			p.b.Measurements = p.added
			return engine.Action{Insert: ts.Opts.Encode(p.b)}, nil
		}
		now, err := ts.Opts.Decode(cur)
		if err != nil {
			return engine.Action{}, err
		}
		now.Measurements = append(now.Measurements, p.added...)
		return engine.Action{Replace: ts.Opts.Encode(now), Replacement: true}, nil
	})
	if err != nil {
		return res, err
	}
	res.Inserted = len(ms)
	return res, nil
}

// openBucket finds a stored bucket m fits in ("Bucket bounds"), or nil;
// not one the statement already adds to (pending), which was full.
func (e *Env) openBucket(ctx context.Context, ts Timeseries, m timeseries.Measurement, pending []*pendingBucket) (*timeseries.Bucket, error) {
	tf := ts.Opts.TimeField
	b := bsoncore.NewDocumentBuilder()
	if m.Meta.Type != 0 {
		b.AppendValue("meta", m.Meta)
	} else {
		b.AppendDocument("meta", bsoncore.NewDocumentBuilder().AppendBoolean("$exists", false).Build())
	}
	b.AppendDocument("control.min."+tf, bsoncore.NewDocumentBuilder().
		AppendDateTime("$lte", m.Time).
		AppendDateTime("$gt", m.Time-ts.Opts.BucketMaxSpanSeconds*1000).Build())
	sel, err := NewSelection(ts.Buckets, b.Build(), query.Options{})
	if err != nil {
		return nil, err
	}
	src, err := e.Open(ctx, sel, Run)
	if err != nil {
		return nil, err
	}
	defer src.Close()
	for tries := 0; tries < 8; tries++ {
		d, err := src.Next()
		if err != nil || d == nil {
			return nil, err
		}
		bk, err := ts.Opts.Decode(d)
		if err != nil {
			return nil, err
		}
		taken := slices.ContainsFunc(pending, func(p *pendingBucket) bool { return p.b.ID == bk.ID })
		if !taken && ts.Opts.Fits(bk, m, bk.Size()) {
			return bk, nil
		}
	}
	return nil, nil
}

// bucketIDs are the _ids of the buckets that may hold measurements filter
// matches (its bucket filter, timeseries.BucketFilter).
func (e *Env) bucketIDs(ctx context.Context, ts Timeseries, raw bsoncore.Document) ([]bsoncore.Value, error) {
	sel, err := NewSelection(ts.Buckets, ts.Opts.BucketFilter(raw), query.Options{})
	if err != nil {
		return nil, err
	}
	return e.matchingIDs(ctx, sel, 0)
}

// DeleteTimeseries deletes the measurements sel matches (at most limit,
// 0 for all) from ts's buckets: a bucket left empty is deleted, another
// rewritten without them. MongoDB 7.0 allows any filter.
func (e *Env) DeleteTimeseries(ctx context.Context, ts Timeseries, sel Selection, limit int64) (int64, error) {
	mu := tsLock(ts.Buckets)
	mu.Lock()
	defer mu.Unlock()
	ids, err := e.bucketIDs(ctx, ts, sel.RawFilter)
	if err != nil || len(ids) == 0 {
		return 0, err
	}
	var deleted int64
	res, err := e.eng.ModifyWith(ts.Buckets, ids, engine.ModifyOptions{Ordered: true}, func(_ int, cur bsoncore.Document) (engine.Action, error) {
		if err := opctx.Err(ctx); err != nil {
			return engine.Action{}, err
		}
		if cur == nil || (limit > 0 && deleted >= limit) {
			return engine.Action{}, nil
		}
		b, err := ts.Opts.Decode(cur)
		if err != nil {
			return engine.Action{}, err
		}
		keep := b.Measurements[:0:0]
		i := 0
		err = ts.Opts.Unpack(cur, func(m bsoncore.Document) error {
			if (limit == 0 || deleted < limit) && sel.Filter.Match(m) {
				deleted++
			} else {
				keep = append(keep, b.Measurements[i])
			}
			i++
			return nil
		})
		switch {
		case err != nil:
			return engine.Action{}, err
		case len(keep) == len(b.Measurements):
			return engine.Action{}, nil
		case len(keep) == 0:
			return engine.Action{Delete: true}, nil
		}
		b.Measurements = keep
		return engine.Action{Replace: ts.Opts.Encode(b), Replacement: true}, nil
	})
	if err == nil && len(res.Errors) > 0 {
		err = res.Errors[0].Err
	}
	return deleted, err
}

// UpdateTimeseries applies mod, whose paths are all in the meta field
// (the command layer checks MongoDB 7.0's restrictions), to the
// measurements sel matches, whose filter is on the meta field only: each
// matching bucket's meta changes for all its measurements. Matched and
// Modified count measurements.
func (e *Env) UpdateTimeseries(ctx context.Context, ts Timeseries, sel Selection, mod *update.Update) (UpdateResult, error) {
	mu := tsLock(ts.Buckets)
	mu.Lock()
	defer mu.Unlock()
	var out UpdateResult
	ids, err := e.bucketIDs(ctx, ts, sel.RawFilter)
	if err != nil || len(ids) == 0 {
		return out, err
	}
	mf := ts.Opts.MetaField
	res, err := e.eng.ModifyWith(ts.Buckets, ids, engine.ModifyOptions{Ordered: true}, func(_ int, cur bsoncore.Document) (engine.Action, error) {
		if err := opctx.Err(ctx); err != nil {
			return engine.Action{}, err
		}
		if cur == nil {
			return engine.Action{}, nil
		}
		b, err := ts.Opts.Decode(cur)
		if err != nil {
			return engine.Action{}, err
		}
		metaDoc := bsoncore.NewDocumentBuilder()
		if b.Meta.Type != 0 {
			metaDoc.AppendValue(mf, b.Meta)
		}
		md := metaDoc.Build()
		if !sel.Filter.Match(md) {
			return engine.Action{}, nil
		}
		out.Matched += int64(len(b.Measurements))
		next, err := apply(nil, mod, md, -1, false)
		if err != nil || next == nil {
			return engine.Action{}, err
		}
		b.Meta = bsoncore.Value{}
		if v, err := next.LookupErr(mf); err == nil {
			if v.Type == bsoncore.TypeArray {
				return engine.Action{}, timeseries.ErrMetaArray(mf)
			}
			b.Meta = copyValue(v)
		}
		out.Modified += int64(len(b.Measurements))
		return engine.Action{Replace: ts.Opts.Encode(b), Replacement: true}, nil
	})
	if err == nil && len(res.Errors) > 0 {
		err = res.Errors[0].Err
	}
	return out, err
}
