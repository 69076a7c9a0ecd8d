package bench

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// driverDB drives a server through the official Go driver, as YCSB's
// MongoDB binding does: reads are FindOne by _id, scans are
// find({_id: {$gte: k}}).sort({_id: 1}).limit(n), inserts are insertMany
// in the load phase and insertOne after. Documents go to the driver as
// raw BSON and come back as raw BSON, so the client spends nothing on
// decoding into Go values.
type driverDB struct {
	client *mongo.Client
	coll   *mongo.Collection
}

// dialDriver connects to uri and checks the server answers. monitoring is
// the driver's serverMonitoringMode ("" keeps the driver's default).
func dialDriver(ctx context.Context, uri, monitoring, dbName, collName string) (*driverDB, error) {
	opts := options.Client().ApplyURI(uri).
		SetAppName("cairn bench").
		SetServerSelectionTimeout(15 * time.Second)
	if monitoring != "" {
		opts.SetServerMonitoringMode(monitoring)
	}
	client, err := mongo.Connect(opts)
	if err != nil {
		return nil, err
	}
	pctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	if err := client.Ping(pctx, nil); err != nil {
		_ = client.Disconnect(context.Background())
		return nil, fmt.Errorf("cannot reach %s: %w", uri, err)
	}
	return &driverDB{client: client, coll: client.Database(dbName).Collection(collName)}, nil
}

func idFilter(k string) bson.Raw {
	return bson.Raw(bsoncore.NewDocumentBuilder().AppendString("_id", k).Build())
}

func (d *driverDB) reset(ctx context.Context) error { return d.coll.Drop(ctx) }

// shardHashed shards the (empty) collection on {_id: "hashed"} through a
// router (Config.ShardHashed).
func (d *driverDB) shardHashed(ctx context.Context) error {
	ns := d.coll.Database().Name() + "." + d.coll.Name()
	return d.client.Database("admin").RunCommand(ctx, bson.D{{Key: "shardCollection", Value: ns}, {Key: "key", Value: bson.D{{Key: "_id", Value: "hashed"}}}}).Err()
}

func (d *driverDB) insert(ctx context.Context, docs []bsoncore.Document) error {
	if len(docs) == 1 {
		_, err := d.coll.InsertOne(ctx, bson.Raw(docs[0]))
		return err
	}
	all := make([]any, len(docs))
	for i, doc := range docs {
		all[i] = bson.Raw(doc)
	}
	_, err := d.coll.InsertMany(ctx, all)
	return err
}

func (d *driverDB) read(ctx context.Context, k string) error {
	_, err := d.find(ctx, k)
	return err
}

func (d *driverDB) find(ctx context.Context, k string) (bson.Raw, error) {
	doc, err := d.coll.FindOne(ctx, idFilter(k)).Raw()
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil, fmt.Errorf("%w: _id %q", errNotFound, k)
	}
	return doc, err
}

func (d *driverDB) update(ctx context.Context, u *update) error {
	var res *mongo.UpdateResult
	var err error
	switch u.style {
	case UpdateSet:
		set := bsoncore.NewDocumentBuilder().AppendDocument("$set",
			appendStringElementDoc(u.field, u.value)).Build()
		res, err = d.coll.UpdateOne(ctx, idFilter(u.key), bson.Raw(set))
	default:
		res, err = d.coll.ReplaceOne(ctx, idFilter(u.key), bson.Raw(u.record))
	}
	if err != nil {
		return err
	}
	if res.MatchedCount != 1 {
		return fmt.Errorf("%w: update of _id %q matched %d documents", errNotFound, u.key, res.MatchedCount)
	}
	return nil
}

func (d *driverDB) readModifyWrite(ctx context.Context, u *update) error {
	doc, err := d.find(ctx, u.key)
	if err != nil {
		return err
	}
	if u.style == UpdateSet {
		return d.update(ctx, u)
	}
	modified, err := withField(nil, bsoncore.Document(doc), u.field, u.value)
	if err != nil {
		return err
	}
	w := *u
	w.record = modified
	return d.update(ctx, &w)
}

func (d *driverDB) scan(ctx context.Context, k string, n int) (int, error) {
	filter := bsoncore.NewDocumentBuilder().AppendDocument("_id",
		bsoncore.NewDocumentBuilder().AppendString("$gte", k).Build()).Build()
	sort := bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).Build()
	cur, err := d.coll.Find(ctx, bson.Raw(filter), options.Find().SetSort(bson.Raw(sort)).SetLimit(int64(n)))
	if err != nil {
		return 0, err
	}
	got := 0
	for cur.Next(ctx) {
		got++
	}
	err = cur.Err()
	if cerr := cur.Close(ctx); err == nil {
		err = cerr
	}
	return got, err
}

func (d *driverDB) close(ctx context.Context) error { return d.client.Disconnect(ctx) }

// appendStringElementDoc is the document {name: value}.
func appendStringElementDoc(name string, value []byte) bsoncore.Document {
	start, dst := bsoncore.AppendDocumentStart(nil)
	dst = appendStringElement(dst, name, value)
	dst, _ = bsoncore.AppendDocumentEnd(dst, start)
	return dst
}

// warm establishes n pooled connections (n concurrent pings) so that a
// measured phase does not pay for connection handshakes.
func (d *driverDB) warm(ctx context.Context, n int) error {
	errs := make(chan error, n)
	for range n {
		go func() {
			var err error
			for range 3 {
				if err = d.client.Ping(ctx, nil); err != nil {
					break
				}
			}
			errs <- err
		}()
	}
	var first error
	for range n {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}
