package timeseries

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// BucketFilter rewrites a filter on measurements into one on buckets that
// every bucket holding a matching measurement satisfies (a necessary
// condition, never a sufficient one: the unpacked measurements are matched
// again). Predicates on the meta field, at any depth, become the same
// predicates on the bucket's meta ("every measurement has its bucket's
// meta"); comparisons of the time field with a date become bounds on
// control.min and control.max ("Bucket bounds"); anything else is dropped.
// nil when nothing could be rewritten.
func (o Options) BucketFilter(filter bsoncore.Document) bsoncore.Document {
	elems, err := filter.Elements()
	if err != nil {
		return nil
	}
	b := bsoncore.NewDocumentBuilder()
	n := 0
	for _, el := range elems {
		k, v := el.Key(), el.Value()
		switch {
		case o.MetaField != "" && (k == o.MetaField || strings.HasPrefix(k, o.MetaField+".")):
			b.AppendValue("meta"+k[len(o.MetaField):], v)
			n++
		case k == o.TimeField:
			n += o.timeBounds(b, v)
		case k == "$and" || k == "$or":
			arr, ok := v.ArrayOK()
			if !ok {
				continue
			}
			vals, _ := arr.Values()
			out := bsoncore.NewArrayBuilder()
			kept := 0
			for _, x := range vals {
				d, ok := x.DocumentOK()
				if !ok {
					continue
				}
				if sub := o.BucketFilter(d); sub != nil {
					out.AppendDocument(sub)
					kept++
				} else if k == "$or" {
					kept = -1 // a branch with no bound: the $or bounds nothing
					break
				}
			}
			if kept > 0 {
				b.AppendArray(k, out.Build())
				n++
			}
		}
	}
	if n == 0 {
		return nil
	}
	return b.Build()
}

// timeBounds appends the control bounds a time predicate implies and
// returns how many: a measurement at or after t lies in a bucket whose
// max is at or after t and whose min is after t less the span; one before
// t in a bucket whose min is before t ("Bucket bounds").
func (o Options) timeBounds(b *bsoncore.DocumentBuilder, v bsoncore.Value) int {
	var minOps, maxOps []bsoncore.Element
	op := func(dst *[]bsoncore.Element, name string, ms int64) {
		*dst = append(*dst, bsoncore.AppendDateTimeElement(nil, name, ms))
	}
	span := o.BucketMaxSpanSeconds * 1000
	atLeast := func(name string, t int64) { // t <= measurement (name: $gt or $gte)
		op(&maxOps, name, t)
		op(&minOps, "$gt", t-span)
	}
	if v.Type == bsoncore.TypeDateTime {
		atLeast("$gte", v.DateTime())
		op(&minOps, "$lte", v.DateTime())
	} else if d, ok := v.DocumentOK(); ok {
		elems, _ := d.Elements()
		for _, el := range elems {
			x := el.Value()
			if x.Type != bsoncore.TypeDateTime {
				continue
			}
			switch el.Key() {
			case "$gt", "$gte":
				atLeast(el.Key(), x.DateTime())
			case "$lt", "$lte":
				op(&minOps, el.Key(), x.DateTime())
			case "$eq":
				atLeast("$gte", x.DateTime())
				op(&minOps, "$lte", x.DateTime())
			}
		}
	}
	for _, f := range []struct {
		name string
		ops  []bsoncore.Element
	}{{"control.min." + o.TimeField, minOps}, {"control.max." + o.TimeField, maxOps}} {
		if len(f.ops) == 0 {
			continue
		}
		d := bsoncore.NewDocumentBuilder()
		for _, e := range f.ops {
			d.AppendValue(e.Key(), e.Value())
		}
		b.AppendDocument(f.name, d.Build())
	}
	return len(minOps) + len(maxOps)
}

// PushDown rewrites a pipeline over a buckets collection that starts with
// the unpack stage and a $match: the $match's bucket filter goes ahead of
// the unpack stage, where the planner can use the buckets' indexes. Other
// pipelines come back unchanged.
func PushDown(stages []bsoncore.Document) []bsoncore.Document {
	if len(stages) < 2 {
		return stages
	}
	arg, ok := stages[0].Lookup(UnpackStageName).DocumentOK()
	if !ok {
		return stages
	}
	o, err := ParseUnpackStage(arg)
	if err != nil {
		return stages
	}
	filter, ok := stages[1].Lookup("$match").DocumentOK()
	if !ok {
		return stages
	}
	bf := o.BucketFilter(filter)
	if bf == nil {
		return stages
	}
	out := make([]bsoncore.Document, 0, len(stages)+1)
	out = append(out, bsoncore.NewDocumentBuilder().AppendDocument("$match", bf).Build())
	return append(out, stages...)
}
