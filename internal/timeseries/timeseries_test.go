package timeseries_test

import (
	"math/rand/v2"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/query"
	"github.com/cairndb/cairn/internal/timeseries"
)

func raw(t *testing.T, v any) bsoncore.Document {
	t.Helper()
	b, err := bson.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestParseOptions(t *testing.T) {
	for _, c := range []struct {
		in         bson.D
		code       mongoerr.Code
		span, rnd  int64
		granulariy string
	}{
		{in: bson.D{{Key: "timeField", Value: "t"}}, span: 3600, rnd: 60, granulariy: "seconds"},
		{in: bson.D{{Key: "timeField", Value: "t"}, {Key: "granularity", Value: "hours"}}, span: 2592000, rnd: 86400, granulariy: "hours"},
		{in: bson.D{{Key: "timeField", Value: "t"}, {Key: "granularity", Value: "minutes"}, {Key: "bucketMaxSpanSeconds", Value: 86400}}, span: 86400, rnd: 3600, granulariy: "minutes"},
		{in: bson.D{{Key: "timeField", Value: "t"}, {Key: "bucketMaxSpanSeconds", Value: 100}, {Key: "bucketRoundingSeconds", Value: 100}}, span: 100, rnd: 100},
		{in: bson.D{{Key: "timeField", Value: "t"}, {Key: "bucketMaxSpanSeconds", Value: 100}}, code: mongoerr.InvalidOptions},
		{in: bson.D{{Key: "timeField", Value: "t"}, {Key: "bucketMaxSpanSeconds", Value: 100}, {Key: "bucketRoundingSeconds", Value: 50}}, code: mongoerr.InvalidOptions},
		{in: bson.D{{Key: "timeField", Value: "t"}, {Key: "granularity", Value: "hours"}, {Key: "bucketRoundingSeconds", Value: 50}}, code: mongoerr.InvalidOptions},
		{in: bson.D{{Key: "timeField", Value: "t"}, {Key: "bucketMaxSpanSeconds", Value: -1}, {Key: "bucketRoundingSeconds", Value: -1}}, code: mongoerr.ValueOutOfRange},
		{in: bson.D{{Key: "timeField", Value: 1}}, code: mongoerr.TypeMismatch},
		{in: bson.D{{Key: "metaField", Value: "m"}}, code: mongoerr.IDLMissingField},
		{in: bson.D{{Key: "timeField", Value: "t"}, {Key: "x", Value: 1}}, code: mongoerr.UnknownField},
		{in: bson.D{{Key: "timeField", Value: "t"}, {Key: "metaField", Value: "t"}}, code: mongoerr.InvalidOptions},
		{in: bson.D{{Key: "timeField", Value: "t"}, {Key: "metaField", Value: "a.b"}}, code: mongoerr.InvalidOptions},
		{in: bson.D{{Key: "timeField", Value: "t"}, {Key: "granularity", Value: "days"}}, code: mongoerr.BadValue},
	} {
		o, err := timeseries.ParseOptions(raw(t, c.in), "create.timeseries")
		if c.code != 0 {
			if mongoerr.CodeOf(err) != c.code {
				t.Errorf("%v: got %v, want code %d", c.in, err, c.code)
			}
			continue
		}
		if err != nil || o.BucketMaxSpanSeconds != c.span || o.BucketRoundingSeconds != c.rnd || o.Granularity != c.granulariy {
			t.Errorf("%v: got %+v, %v", c.in, o, err)
		}
		// What listCollections shows parses back to the same options.
		if again, err := timeseries.ParseOptions(o.Document(), "x"); err != nil || again != o {
			t.Errorf("%v: listed options parse to %+v, %v", c.in, again, err)
		}
	}
}

// TestPushDownAgreesWithUnpack checks "Bucket bounds" as PushDown uses
// them: for random measurements bucketed as inserts bucket them and random
// filters on the meta and time fields, a bucket the bucket filter rejects
// holds no measurement the filter matches, and a bucket round-trips
// through Encode, Decode and Unpack.
func TestPushDownAgreesWithUnpack(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 1))
	o := timeseries.Options{TimeField: "t", MetaField: "m", BucketMaxSpanSeconds: 600, BucketRoundingSeconds: 600}
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func() bson.DateTime {
		return bson.NewDateTimeFromTime(base.Add(time.Duration(rng.IntN(7200)) * time.Second))
	}
	var buckets []*timeseries.Bucket
	for i := range 400 {
		doc := bson.D{{Key: "t", Value: at()}, {Key: "_id", Value: i}, {Key: "v", Value: rng.IntN(10)}}
		if rng.IntN(5) > 0 {
			doc = append(doc, bson.E{Key: "m", Value: bson.D{{Key: "s", Value: rng.IntN(3)}}})
		}
		m, err := o.Prepare(raw(t, doc))
		if err != nil {
			t.Fatal(err)
		}
		var b *timeseries.Bucket
		for _, x := range buckets {
			if o.Fits(x, m, x.Size()) {
				b = x
				break
			}
		}
		if b == nil {
			buckets = append(buckets, o.Open(m))
		} else {
			b.Measurements = append(b.Measurements, m.Doc)
		}
	}
	ops := []string{"$gt", "$gte", "$lt", "$lte", "$eq"}
	for range 300 {
		f := bson.D{}
		if rng.IntN(2) == 0 {
			f = append(f, bson.E{Key: "m.s", Value: rng.IntN(4)})
		}
		if rng.IntN(3) > 0 {
			f = append(f, bson.E{Key: "t", Value: bson.D{{Key: ops[rng.IntN(len(ops))], Value: at()}}})
		}
		if rng.IntN(4) == 0 {
			f = bson.D{{Key: "$or", Value: bson.A{f, bson.D{{Key: "m", Value: nil}}}}}
		}
		filter := raw(t, f)
		match, err := query.Parse(filter)
		if err != nil {
			t.Fatal(err)
		}
		bf := o.BucketFilter(filter)
		bmatch := func(bsoncore.Document) bool { return true }
		if bf != nil {
			q, err := query.Parse(bf)
			if err != nil {
				t.Fatalf("bucket filter %s of %s: %v", bf, filter, err)
			}
			bmatch = q.Match
		}
		for _, b := range buckets {
			enc := o.Encode(b)
			if bmatch(enc) {
				continue
			}
			_ = o.Unpack(enc, func(m bsoncore.Document) error {
				if match.Match(m) {
					t.Fatalf("filter %s matches %s, but its bucket filter %s rejects the bucket %s", filter, m, bf, enc)
				}
				return nil
			})
		}
	}
	for _, b := range buckets {
		enc := o.Encode(b)
		back, err := o.Decode(enc)
		if err != nil {
			t.Fatal(err)
		}
		if string(o.Encode(back)) != string(enc) {
			t.Fatalf("bucket %s decodes and encodes to %s", enc, o.Encode(back))
		}
		if b.MinTime > back.MinTime || len(back.Measurements) != len(b.Measurements) {
			t.Fatalf("bucket %s: decoded %+v", enc, back)
		}
	}
}
