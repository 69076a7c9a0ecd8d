package timeseries

import (
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
)

// Indexes of a time series collection are indexes of its buckets, as in
// MongoDB: a key on the meta field (or inside it) indexes the bucket's
// meta; a key on any other field indexes the bucket's control bounds,
// {f: 1} as {control.min.f: 1, control.max.f: 1} and {f: -1} as
// {control.max.f: -1, control.min.f: -1}. listIndexes turns them back.

// indexOptionsOK are the index options a time series index may carry;
// MongoDB 7.0 takes more (partial filters on the meta field, sparse,
// 2dsphere keys on measurements), which Cairn refuses rather than ignore.
var indexOptionsOK = map[string]bool{"key": true, "name": true, "v": true, "background": true, "hidden": true}

// BucketsIndexSpec rewrites a createIndexes spec on the time series
// collection into one on its buckets; the index keeps the name the user's
// key gives it.
func (o Options) BucketsIndexSpec(spec bsoncore.Document) (bsoncore.Document, error) {
	elems, err := spec.Elements()
	if err != nil {
		return nil, err
	}
	key, ok := spec.Lookup("key").DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.FailedToParse, "The 'key' field is a required property of an index specification")
	}
	for _, el := range elems {
		if !indexOptionsOK[el.Key()] {
			return nil, mongoerr.New(mongoerr.InvalidOptions, "Index option '%s' on a time-series collection is not supported by Cairn yet", el.Key())
		}
	}
	kb := bsoncore.NewDocumentBuilder()
	var name []string
	kelems, _ := key.Elements()
	if len(kelems) == 0 {
		return nil, mongoerr.New(mongoerr.CannotCreateIndex, "Index keys cannot be an empty field")
	}
	for _, el := range kelems {
		f, v := el.Key(), el.Value()
		dir, isNum := v.AsFloat64OK()
		if !isNum || dir == 0 {
			return nil, mongoerr.New(mongoerr.InvalidOptions, "Index type %s on a time-series collection is not supported by Cairn yet", v)
		}
		name = append(name, f, strconv.FormatFloat(dir, 'f', -1, 64))
		switch {
		case o.MetaField != "" && (f == o.MetaField || strings.HasPrefix(f, o.MetaField+".")):
			kb.AppendValue("meta"+f[len(o.MetaField):], v)
		case dir > 0:
			kb.AppendValue("control.min."+f, v).AppendValue("control.max."+f, v)
		default:
			kb.AppendValue("control.max."+f, v).AppendValue("control.min."+f, v)
		}
	}
	out := bsoncore.NewDocumentBuilder()
	for _, el := range elems {
		if el.Key() == "key" {
			out.AppendDocument("key", kb.Build())
		} else {
			out.AppendValue(el.Key(), el.Value())
		}
	}
	if _, err := spec.LookupErr("name"); err != nil {
		out.AppendString("name", strings.Join(name, "_"))
	}
	return out.Build(), nil
}

// UserIndexKey turns a buckets index key back into the key on the time
// series collection; ok is false for a key that no user key gives (made
// on the buckets collection directly).
func (o Options) UserIndexKey(key bsoncore.Document) (bsoncore.Document, bool) {
	elems, err := key.Elements()
	if err != nil {
		return nil, false
	}
	b := bsoncore.NewDocumentBuilder()
	for i := 0; i < len(elems); i++ {
		k := elems[i].Key()
		switch {
		case o.MetaField != "" && (k == "meta" || strings.HasPrefix(k, "meta.")):
			b.AppendValue(o.MetaField+k[len("meta"):], elems[i].Value())
		case i+1 < len(elems) && pairOf(k, elems[i+1].Key()):
			b.AppendValue(k[len("control.min."):], elems[i].Value())
			i++
		default:
			return nil, false
		}
	}
	return b.Build(), true
}

// pairOf reports whether a and b are the two control bounds of one field.
func pairOf(a, b string) bool {
	const lo, hi = "control.min.", "control.max."
	switch {
	case strings.HasPrefix(a, lo) && strings.HasPrefix(b, hi):
		return a[len(lo):] == b[len(hi):]
	case strings.HasPrefix(a, hi) && strings.HasPrefix(b, lo):
		return a[len(hi):] == b[len(lo):]
	}
	return false
}
