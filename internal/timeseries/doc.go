// Package timeseries owns the storage format of time series collections:
// their options (timeField, metaField, granularity or custom bucketing),
// the bucket documents measurements are stored in, unpacking buckets back
// into measurements, and rewriting a filter on measurements into a filter
// on buckets so the planner can use the buckets' indexes.
//
// A time series collection <db>.<name> is, as in MongoDB 7.0, a view whose
// pipeline is one $_internalUnpackBucket stage over <db>.system.buckets.<name>,
// which holds the buckets. The command layer routes writes to the buckets;
// reads go through the view and PushDown.
//
// Bucket shape (MongoDB's version 1, uncompressed bucket):
//
//	{_id: ObjectId(timestamp = control.min.<time>),
//	 control: {version: 1, min: {<field>: min, ...}, max: {<field>: max, ...}},
//	 meta: <the measurements' metaField value> (absent when they have none),
//	 data: {<field>: {"0": v0, "1": v1, ...}, ...}}
//
// Invariant "Bucket bounds": every measurement m in bucket b has
// b.control.min.<time> <= m.<time> <= b.control.max.<time> and
// m.<time> < b.control.min.<time> + bucketMaxSpanSeconds; control.min.<time>
// is the first measurement's time rounded down to bucketRoundingSeconds.
// Every measurement in a bucket has the bucket's meta. PushDown's bucket
// filters rely on both (a bucket a filter skips holds no measurement the
// filter matches); TestPushDownAgreesWithUnpack checks it.
//
// Deviations from MongoDB: buckets are never compressed (control.version
// is always 1; MongoDB 7.0 compresses closed buckets to version 2 with
// BSONColumn); control.min and control.max compare whole top-level values
// (MongoDB takes the minimum of each embedded field separately); buckets
// are not closed for size beyond MaxBucketCount measurements and
// MaxBucketBytes; an unpacked measurement lists the time field, then the
// meta field, then the others in the order the bucket's columns first saw
// them.
package timeseries
