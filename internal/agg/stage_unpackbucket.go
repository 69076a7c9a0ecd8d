package agg

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/timeseries"
)

func init() { registerStage(timeseries.UnpackStageName, parseUnpackBucket) }

// unpackBucketStage is $_internalUnpackBucket: each time series bucket in,
// its measurements out (package timeseries owns the format). It heads a
// time series collection's view pipeline.
type unpackBucketStage struct{ opts timeseries.Options }

func parseUnpackBucket(arg bsoncore.Value, _ *parseContext) (stage, error) {
	d, ok := arg.DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.FailedToParse, "$_internalUnpackBucket specification must be an object, got %s", arg.Type)
	}
	o, err := timeseries.ParseUnpackStage(d)
	if err != nil {
		return nil, err
	}
	return &unpackBucketStage{opts: o}, nil
}

func (u *unpackBucketStage) open(_ *runContext, in Source) (Source, error) {
	var buf []byte
	var ends []int
	pos := 0
	return &funcSource{in: in, next: func() (bsoncore.Document, error) {
		for pos >= len(ends) {
			b, err := in.Next()
			if b == nil || err != nil {
				return nil, err
			}
			buf, ends, pos = buf[:0], ends[:0], 0
			err = u.opts.Unpack(b, func(m bsoncore.Document) error {
				buf = append(buf, m...)
				ends = append(ends, len(buf))
				return nil
			})
			if err != nil {
				return nil, err
			}
		}
		start := 0
		if pos > 0 {
			start = ends[pos-1]
		}
		d := bsoncore.Document(buf[start:ends[pos]])
		pos++
		return d, nil
	}}, nil
}
