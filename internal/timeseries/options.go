package timeseries

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// Options are a time series collection's settings, create's timeseries
// document after MongoDB's validateAndSetBucketingParameters: either a
// granularity (with its span and rounding) or a custom span equal to its
// rounding.
type Options struct {
	TimeField string
	MetaField string // "": the collection has none
	// Granularity is "seconds", "minutes" or "hours"; "" with custom
	// bucketing (bucketMaxSpanSeconds and bucketRoundingSeconds given).
	Granularity           string
	BucketMaxSpanSeconds  int64
	BucketRoundingSeconds int64
}

// MaxBucketCount is how many measurements a bucket holds before another
// opens (MongoDB's timeseriesBucketMaxCount).
const MaxBucketCount = 1000

// MaxBucketBytes bounds a bucket's data (MongoDB's timeseriesBucketMaxSize).
const MaxBucketBytes = 125 * 1024

// maxSpanLimit is the largest bucketMaxSpanSeconds and
// bucketRoundingSeconds MongoDB accepts (a year).
const maxSpanLimit = 31536000

var granularities = map[string][2]int64{ // span, rounding
	"seconds": {60 * 60, 60},
	"minutes": {60 * 60 * 24, 60 * 60},
	"hours":   {60 * 60 * 24 * 30, 60 * 60 * 24},
}

// ParseOptions reads create's timeseries document (field is the option's
// name in errors, "create.timeseries"), checks it with MongoDB's codes and
// fills in the bucketing parameters.
func ParseOptions(d bsoncore.Document, field string) (Options, error) {
	var o Options
	elems, err := d.Elements()
	if err != nil {
		return o, mongoerr.New(mongoerr.BadValue, "%s is not a valid document", field)
	}
	hasTime := false
	for _, el := range elems {
		k, v := el.Key(), el.Value()
		switch k {
		case "timeField", "metaField", "granularity":
			s, ok := v.StringValueOK()
			if !ok {
				return o, mongoerr.New(mongoerr.TypeMismatch, "BSON field '%s.%s' is the wrong type '%s', expected type 'string'", field, k, typeName(v.Type))
			}
			if strings.IndexByte(s, 0) >= 0 {
				return o, mongoerr.New(mongoerr.BadValue, "The 'timeField' or the 'metaField' cannot contain embedded null bytes")
			}
			switch k {
			case "timeField":
				o.TimeField, hasTime = s, true
			case "metaField":
				o.MetaField = s
			default:
				if _, ok := granularities[s]; !ok {
					return o, mongoerr.New(mongoerr.BadValue, "Enumeration value '%s' for field '%s.granularity' is not a valid value.", s, field)
				}
				o.Granularity = s
			}
		case "bucketMaxSpanSeconds", "bucketRoundingSeconds":
			n, ok := v.AsInt64OK()
			if !ok || (v.Type == bsoncore.TypeDouble && float64(n) != v.Double()) {
				return o, mongoerr.New(mongoerr.TypeMismatch, "BSON field '%s.%s' is the wrong type '%s', expected type 'int'", field, k, typeName(v.Type))
			}
			if n < 1 || n > maxSpanLimit {
				return o, mongoerr.New(mongoerr.ValueOutOfRange, "BSON field '%s.%s' value must be >= 1 and <= %d, actual value '%d'", field, k, maxSpanLimit, n)
			}
			if k == "bucketMaxSpanSeconds" {
				o.BucketMaxSpanSeconds = n
			} else {
				o.BucketRoundingSeconds = n
			}
		default:
			return o, mongoerr.New(mongoerr.UnknownField, "BSON field '%s.%s' is an unknown field.", field, k)
		}
	}
	if !hasTime {
		return o, mongoerr.New(mongoerr.IDLMissingField, "BSON field '%s.timeField' is missing but a required field", field)
	}
	if strings.Contains(o.TimeField, ".") {
		return o, mongoerr.New(mongoerr.InvalidOptions, "'timeField' must be a top-level field and not contain a '.'")
	}
	if o.MetaField != "" {
		switch {
		case o.MetaField == "_id":
			return o, mongoerr.New(mongoerr.InvalidOptions, "'metaField' cannot be \"_id\"")
		case o.MetaField == o.TimeField:
			return o, mongoerr.New(mongoerr.InvalidOptions, "'metaField' cannot be the same as 'timeField'")
		case strings.Contains(o.MetaField, "."):
			return o, mongoerr.New(mongoerr.InvalidOptions, "'metaField' must be a top-level field and not contain a '.'")
		}
	}
	return o, o.setBucketing()
}

// setBucketing applies MongoDB 7.0's bucketing rules: a granularity fixes
// span and rounding (given values must equal its defaults); otherwise both
// must be given and equal, or neither (granularity "seconds").
func (o *Options) setBucketing() error {
	if o.Granularity != "" {
		g := granularities[o.Granularity]
		if o.BucketMaxSpanSeconds != 0 && o.BucketMaxSpanSeconds != g[0] {
			return mongoerr.New(mongoerr.InvalidOptions, "Timeseries 'bucketMaxSpanSeconds' is not configurable to a value other than the default of %d for the provided granularity", g[0])
		}
		if o.BucketRoundingSeconds != 0 && o.BucketRoundingSeconds != g[1] {
			return mongoerr.New(mongoerr.InvalidOptions, "Timeseries 'bucketRoundingSeconds' is not configurable to a value other than the default of %d for the provided granularity", g[1])
		}
		o.BucketMaxSpanSeconds, o.BucketRoundingSeconds = g[0], g[1]
		return nil
	}
	span, round := o.BucketMaxSpanSeconds, o.BucketRoundingSeconds
	if (span == 0) != (round == 0) {
		return mongoerr.New(mongoerr.InvalidOptions, "Timeseries 'bucketMaxSpanSeconds' and 'bucketRoundingSeconds' need to be set alongside each other")
	}
	if span != round {
		return mongoerr.New(mongoerr.InvalidOptions, "Timeseries 'bucketRoundingSeconds' needs to be equal to 'bucketMaxSpanSeconds'")
	}
	if span == 0 {
		o.Granularity = "seconds"
		g := granularities["seconds"]
		o.BucketMaxSpanSeconds, o.BucketRoundingSeconds = g[0], g[1]
	}
	return nil
}

// Document is the options as listCollections shows them: the granularity
// and its span, or the custom span and rounding.
func (o Options) Document() bsoncore.Document {
	b := bsoncore.NewDocumentBuilder().AppendString("timeField", o.TimeField)
	if o.MetaField != "" {
		b.AppendString("metaField", o.MetaField)
	}
	if o.Granularity != "" {
		b.AppendString("granularity", o.Granularity)
	} else {
		b.AppendInt32("bucketRoundingSeconds", int32(o.BucketRoundingSeconds))
	}
	return b.AppendInt32("bucketMaxSpanSeconds", int32(o.BucketMaxSpanSeconds)).Build()
}

// UnpackStage is the view's pipeline stage, MongoDB's
// {$_internalUnpackBucket: {timeField, metaField, bucketMaxSpanSeconds}}.
func (o Options) UnpackStage() bsoncore.Document {
	b := bsoncore.NewDocumentBuilder().AppendString("timeField", o.TimeField)
	if o.MetaField != "" {
		b.AppendString("metaField", o.MetaField)
	}
	b.AppendInt32("bucketMaxSpanSeconds", int32(o.BucketMaxSpanSeconds))
	return bsoncore.NewDocumentBuilder().AppendDocument(UnpackStageName, b.Build()).Build()
}

// UnpackStageName is the aggregation stage that turns buckets into
// measurements.
const UnpackStageName = "$_internalUnpackBucket"

// ParseUnpackStage reads the unpack stage's argument back into the
// options it needs (time and meta field, span).
func ParseUnpackStage(d bsoncore.Document) (Options, error) {
	var o Options
	elems, err := d.Elements()
	if err != nil {
		return o, mongoerr.New(mongoerr.BadValue, "$_internalUnpackBucket specification must be an object")
	}
	for _, el := range elems {
		v := el.Value()
		switch el.Key() {
		case "timeField", "metaField":
			s, ok := v.StringValueOK()
			if !ok {
				return o, mongoerr.New(mongoerr.FailedToParse, "%s field must be a single-element field path string", el.Key())
			}
			if el.Key() == "timeField" {
				o.TimeField = s
			} else {
				o.MetaField = s
			}
		case "bucketMaxSpanSeconds":
			n, ok := v.AsInt64OK()
			if !ok || n < 1 {
				return o, mongoerr.New(mongoerr.FailedToParse, "bucketMaxSpanSeconds field must be a positive integer")
			}
			o.BucketMaxSpanSeconds = n
		default:
			return o, mongoerr.New(mongoerr.FailedToParse, "Unrecognized option to $_internalUnpackBucket: %s.", el.Key())
		}
	}
	if o.TimeField == "" {
		return o, mongoerr.New(mongoerr.FailedToParse, "The $_internalUnpackBucket stage requires a timeField parameter")
	}
	if o.BucketMaxSpanSeconds == 0 {
		o.BucketMaxSpanSeconds = granularities["seconds"][0]
	}
	return o, nil
}

// BucketsCollection is the name of the collection holding name's buckets.
func BucketsCollection(name string) string { return BucketsPrefix + name }

// BucketsPrefix starts every buckets collection's name.
const BucketsPrefix = "system.buckets."

func typeName(t bsoncore.Type) string { return bsonx.TypeName(t) }
