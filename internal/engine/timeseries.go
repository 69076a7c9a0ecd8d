package engine

import (
	"bytes"
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/catalog"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/storage"
	"github.com/cairndb/cairn/internal/timeseries"
)

// CreateTimeseries creates the time series collection v describes (its
// Timeseries options set): the buckets collection system.buckets.<name>
// and the view over it, in one commit, then, with a metaField, the buckets
// index MongoDB 6.3+ creates by default ({meta: 1, control.min.<time>: 1,
// control.max.<time>: 1}, listed as <meta>_1_<time>_1). Creating one that
// exists with the same options succeeds.
func (e *Engine) CreateTimeseries(ctx context.Context, v catalog.View, o timeseries.Options) error {
	db, name := v.DB(), v.Name()
	if err := checkViewName(db, name); err != nil {
		return err
	}
	buckets := Namespace{DB: db, Coll: timeseries.BucketsCollection(name)}
	if err := catalog.ValidateCollectionName(db, buckets.Coll); err != nil {
		return err
	}
	bopts := bsoncore.NewDocumentBuilder().AppendDocument("timeseries", bsoncore.Document(v.Timeseries))
	if v.ExpireAfterSeconds != nil {
		bopts.AppendInt64("expireAfterSeconds", *v.ExpireAfterSeconds)
	}
	bucketOpts := bson.Raw(bopts.Build())
	created := false
	err := e.db.Write(func(tx *storage.Txn) error {
		st := e.cat.Working()
		if old := st.View(db, name); old != nil {
			if old.IsTimeseries() && bytes.Equal(old.Timeseries, v.Timeseries) && sameTTL(old.ExpireAfterSeconds, v.ExpireAfterSeconds) {
				return nil
			}
			return mongoerr.New(mongoerr.NamespaceExists, "namespace %s already exists, but with different options", v.ID)
		}
		if st.Collection(db, name) != nil || st.Collection(db, buckets.Coll) != nil {
			return mongoerr.New(mongoerr.NamespaceExists, "namespace %s already exists, but with different options", v.ID)
		}
		c, err := e.cat.CreateCollection(tx, db, buckets.Coll, bucketOpts)
		if err != nil {
			return err
		}
		e.logCommand(tx, db, c.UUID.Data, cmdDoc("create", strVal(buckets.Coll), bsoncore.Document(bucketOpts)))
		created = true
		return e.cat.CreateView(tx, v)
	})
	if err != nil || !created || o.MetaField == "" {
		return err
	}
	_, err = e.CreateIndexes(ctx, buckets, []bsoncore.Document{bsoncore.NewDocumentBuilder().
		AppendDocument("key", bsoncore.NewDocumentBuilder().AppendInt32("meta", 1).
			AppendInt32("control.min."+o.TimeField, 1).AppendInt32("control.max."+o.TimeField, 1).Build()).
		AppendString("name", o.MetaField+"_1_"+o.TimeField+"_1").Build()})
	return err
}

// SetTimeseriesExpiry sets (nil: removes) the expireAfterSeconds of the
// time series collection db.name (collMod), on its view, which the TTL
// monitor reads (TimeseriesTTLs), and on its buckets collection's options,
// which listCollections of system.buckets shows, in one commit.
func (e *Engine) SetTimeseriesExpiry(db, name string, secs *int64) error {
	return e.db.Write(func(tx *storage.Txn) error {
		st := e.cat.Working()
		cur := st.View(db, name)
		if cur == nil || !cur.IsTimeseries() {
			return mongoerr.New(mongoerr.NamespaceNotFound, "ns does not exist: %s.%s", db, name)
		}
		v := *cur
		v.ExpireAfterSeconds = secs
		if err := e.cat.ModifyView(tx, v); err != nil {
			return err
		}
		var el bsoncore.Element
		if secs == nil {
			el = bsoncore.Element(bsoncore.AppendStringElement(nil, "expireAfterSeconds", "off"))
		} else {
			el = bsoncore.Element(bsoncore.AppendInt64Element(nil, "expireAfterSeconds", *secs))
		}
		buckets := Namespace{DB: db, Coll: timeseries.BucketsCollection(name)}
		if err := e.setOptions(tx, buckets, []bsoncore.Element{el}); err != nil {
			return err
		}
		if c := e.cat.Working().Collection(buckets.DB, buckets.Coll); c != nil {
			e.logCommand(tx, db, c.UUID.Data, cmdDoc("collMod", strVal(name), nil, el))
		}
		return nil
	})
}

func sameTTL(a, b *int64) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

// dropTimeseriesBuckets drops the buckets of the time series collection
// db.name inside tx, with its view (DropCollection of a time series
// collection).
func (e *Engine) dropTimeseriesBuckets(tx *storage.Txn, db, name string) {
	bc := timeseries.BucketsCollection(name)
	if c := e.cat.Working().Collection(db, bc); c != nil && e.cat.DropCollection(tx, db, bc) {
		e.logCommand(tx, db, c.UUID.Data, cmdDoc("drop", strVal(bc), nil))
	}
}

// TimeseriesTTL is a time series collection with expireAfterSeconds: its
// buckets expire once all their measurements have.
type TimeseriesTTL struct {
	Buckets     Namespace
	ExpireAfter time.Duration
	MaxSpan     time.Duration
}

// TimeseriesTTLs lists the time series collections with an
// expireAfterSeconds.
func (e *Engine) TimeseriesTTLs() []TimeseriesTTL {
	var out []TimeseriesTTL
	for _, v := range e.cat.Current().Views("") {
		if !v.IsTimeseries() || v.ExpireAfterSeconds == nil {
			continue
		}
		o, err := timeseries.ParseOptions(bsoncore.Document(v.Timeseries), "timeseries")
		if err != nil {
			continue
		}
		out = append(out, TimeseriesTTL{
			Buckets:     Namespace{DB: v.DB(), Coll: timeseries.BucketsCollection(v.Name())},
			ExpireAfter: time.Duration(*v.ExpireAfterSeconds) * time.Second,
			MaxSpan:     time.Duration(o.BucketMaxSpanSeconds) * time.Second,
		})
	}
	return out
}

// DeleteExpiredBuckets deletes the buckets of t whose every measurement is
// older than cutoff: those whose _id (an ObjectId whose time is
// control.min.<time>, "Bucket bounds") is before cutoff less the bucket
// span, as MongoDB's TTL monitor does for time series. Buckets are stored
// in _id order, so this is one range of the collection's keyspace.
// Measurements before 1970 or after 2106 (outside an ObjectId's seconds)
// never expire.
func (e *Engine) DeleteExpiredBuckets(t TimeseriesTTL, cutoff time.Time) (int, error) {
	last := cutoff.Add(-t.MaxSpan)
	if last.Unix() <= 0 {
		return 0, nil
	}
	var lo, hi bson.ObjectID // lo: every ObjectId from 1970 on
	hi = bson.NewObjectIDFromTimestamp(last)
	for i := 4; i < len(hi); i++ {
		hi[i] = 0
	}
	return e.deleteIDRange(t.Buckets, bsoncore.Value{Type: bsoncore.TypeObjectID, Data: lo[:]}, bsoncore.Value{Type: bsoncore.TypeObjectID, Data: hi[:]})
}
