package timeseries

import (
	"strconv"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// Bucket is one bucket decoded: its measurements without the meta field
// (every one has the bucket's), in insertion order.
type Bucket struct {
	ID bson.ObjectID
	// MinTime is control.min.<time> in milliseconds: the first
	// measurement's time rounded down to bucketRoundingSeconds.
	MinTime int64
	// Meta is the measurements' meta value; Type 0 when they have none.
	Meta         bsoncore.Value
	Measurements []bsoncore.Document
}

// Measurement is one measurement ready for a bucket: its time in
// milliseconds, its meta value (Type 0: none) and its other fields.
type Measurement struct {
	Time int64
	Meta bsoncore.Value
	Doc  bsoncore.Document // without the meta field
}

// Prepare checks a measurement for insertion and splits off its meta
// value. A measurement without a date in timeField is BadValue, as in
// MongoDB; one without _id gets an ObjectId first.
func (o Options) Prepare(doc bsoncore.Document) (Measurement, error) {
	var m Measurement
	elems, err := doc.Elements()
	if err != nil {
		return m, mongoerr.New(mongoerr.BadValue, "invalid BSON document")
	}
	hasID, hasTime := false, false
	b := bsoncore.NewDocumentBuilder()
	for _, el := range elems {
		switch k := el.Key(); {
		case k == o.MetaField && o.MetaField != "":
			m.Meta = el.Value()
			if m.Meta.Type == bsoncore.TypeArray {
				return m, ErrMetaArray(o.MetaField)
			}
			continue
		case k == o.TimeField:
			if el.Value().Type != bsoncore.TypeDateTime {
				break
			}
			m.Time, hasTime = el.Value().DateTime(), true
		case k == "_id":
			hasID = true
		}
	}
	if !hasTime {
		return m, mongoerr.New(mongoerr.BadValue, "'%s' must be present and contain a valid BSON UTC datetime value", o.TimeField)
	}
	if !hasID {
		b.AppendObjectID("_id", bson.NewObjectID())
	}
	for _, el := range elems {
		if k := el.Key(); k == o.MetaField && o.MetaField != "" {
			continue
		}
		b.AppendValue(el.Key(), el.Value())
	}
	m.Doc = b.Build()
	return m, nil
}

// RoundDown is t (milliseconds) rounded down to the bucket rounding, the
// bucket's control.min.<time> when t opens it.
func (o Options) RoundDown(t int64) int64 {
	r := o.BucketRoundingSeconds * 1000
	q := t / r
	if t%r < 0 {
		q--
	}
	return q * r
}

// Fits reports whether m may join b: the same meta, a time inside b's span
// ("Bucket bounds"), and room left.
func (o Options) Fits(b *Bucket, m Measurement, bytes int) bool {
	if (b.Meta.Type == 0) != (m.Meta.Type == 0) || (b.Meta.Type != 0 && bsonx.Compare(b.Meta, m.Meta) != 0) {
		return false
	}
	if m.Time < b.MinTime || m.Time >= b.MinTime+o.BucketMaxSpanSeconds*1000 {
		return false
	}
	return len(b.Measurements) < MaxBucketCount && bytes+len(m.Doc) <= MaxBucketBytes
}

// Open starts a bucket with m as its first measurement.
func (o Options) Open(m Measurement) *Bucket {
	minTime := o.RoundDown(m.Time)
	return &Bucket{
		ID:           bson.NewObjectIDFromTimestamp(time.UnixMilli(minTime)),
		MinTime:      minTime,
		Meta:         m.Meta,
		Measurements: []bsoncore.Document{m.Doc},
	}
}

// column is one field's values across a bucket's measurements.
type column struct {
	name     string
	idx      []int
	vals     []bsoncore.Value
	min, max bsoncore.Value
}

// Encode writes b in the bucket shape (see the package comment).
func (o Options) Encode(b *Bucket) bsoncore.Document {
	var cols []*column
	byName := map[string]*column{}
	for i, m := range b.Measurements {
		elems, _ := m.Elements()
		for _, el := range elems {
			c := byName[el.Key()]
			if c == nil {
				c = &column{name: el.Key()}
				byName[c.name] = c
				cols = append(cols, c)
			}
			v := el.Value()
			c.idx = append(c.idx, i)
			c.vals = append(c.vals, v)
			if c.min.Type == 0 || bsonx.Compare(v, c.min) < 0 {
				c.min = v
			}
			if c.max.Type == 0 || bsonx.Compare(v, c.max) > 0 {
				c.max = v
			}
		}
	}
	if c := byName[o.TimeField]; c != nil {
		c.min = bsoncore.Value{Type: bsoncore.TypeDateTime, Data: bsoncore.AppendDateTime(nil, b.MinTime)}
	}
	minB, maxB := bsoncore.NewDocumentBuilder(), bsoncore.NewDocumentBuilder()
	data := bsoncore.NewDocumentBuilder()
	var key []byte
	for _, c := range cols {
		minB.AppendValue(c.name, c.min)
		maxB.AppendValue(c.name, c.max)
		cb := bsoncore.NewDocumentBuilder()
		for j, v := range c.vals {
			key = strconv.AppendInt(key[:0], int64(c.idx[j]), 10)
			cb.AppendValue(string(key), v)
		}
		data.AppendDocument(c.name, cb.Build())
	}
	control := bsoncore.NewDocumentBuilder().AppendInt32("version", 1).
		AppendDocument("min", minB.Build()).AppendDocument("max", maxB.Build()).Build()
	out := bsoncore.NewDocumentBuilder().AppendObjectID("_id", b.ID).AppendDocument("control", control)
	if b.Meta.Type != 0 {
		out.AppendValue("meta", b.Meta)
	}
	return out.AppendDocument("data", data.Build()).Build()
}

// Decode reads a bucket document back; measurements come out as Unpack
// would give them, without the meta field.
func (o Options) Decode(doc bsoncore.Document) (*Bucket, error) {
	b := &Bucket{}
	if id, ok := doc.Lookup("_id").ObjectIDOK(); ok {
		b.ID = id
	}
	if t, ok := doc.Lookup("control", "min", o.TimeField).DateTimeOK(); ok {
		b.MinTime = t
	}
	if v, err := doc.LookupErr("meta"); err == nil {
		b.Meta = v
	}
	err := o.unpack(doc, false, func(m bsoncore.Document) error {
		b.Measurements = append(b.Measurements, append(bsoncore.Document(nil), m...))
		return nil
	})
	return b, err
}

// Size is about how many bytes b's measurements take in its bucket.
func (b *Bucket) Size() int {
	n := 0
	for _, m := range b.Measurements {
		n += len(m)
	}
	return n
}

// Unpack calls emit with each measurement of the bucket doc, meta field
// included, in insertion order. A document emit receives is valid only
// during the call.
func (o Options) Unpack(doc bsoncore.Document, emit func(bsoncore.Document) error) error {
	return o.unpack(doc, true, emit)
}

func (o Options) unpack(doc bsoncore.Document, withMeta bool, emit func(bsoncore.Document) error) error {
	data, ok := doc.Lookup("data").DocumentOK()
	if !ok {
		return mongoerr.New(mongoerr.BadValue, "time series bucket has no data document")
	}
	colElems, err := data.Elements()
	if err != nil {
		return err
	}
	type col struct {
		name  string
		elems []bsoncore.Element
		next  int
	}
	cols := make([]col, 0, len(colElems))
	count := 0
	timeAt := -1
	for _, ce := range colElems {
		cd, ok := ce.Value().DocumentOK()
		if !ok {
			continue
		}
		els, err := cd.Elements()
		if err != nil {
			return err
		}
		if ce.Key() == o.TimeField {
			timeAt = len(cols)
			count = len(els)
		}
		cols = append(cols, col{name: ce.Key(), elems: els})
	}
	if timeAt < 0 {
		return nil
	}
	var meta bsoncore.Value
	if withMeta && o.MetaField != "" {
		if v, err := doc.LookupErr("meta"); err == nil {
			meta = v
		}
	}
	var buf []byte
	var key []byte
	for i := 0; i < count; i++ {
		key = strconv.AppendInt(key[:0], int64(i), 10)
		var idx int32
		idx, buf = bsoncore.AppendDocumentStart(buf[:0])
		take := func(c *col) {
			if c.next < len(c.elems) && c.elems[c.next].Key() == string(key) {
				buf = bsoncore.AppendValueElement(buf, c.name, c.elems[c.next].Value())
				c.next++
			}
		}
		take(&cols[timeAt])
		if meta.Type != 0 {
			buf = bsoncore.AppendValueElement(buf, o.MetaField, meta)
		}
		for j := range cols {
			if j != timeAt {
				take(&cols[j])
			}
		}
		buf, _ = bsoncore.AppendDocumentEnd(buf, idx)
		if err := emit(buf); err != nil {
			return err
		}
	}
	return nil
}

// ErrMetaArray is the refusal of an array as a measurement's meta value.
func ErrMetaArray(metaField string) error {
	return mongoerr.New(mongoerr.BadValue, "The metaField '%s' cannot be an array", metaField)
}
