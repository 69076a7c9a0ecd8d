package agg

import "go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

// docOverhead approximates the bookkeeping bytes of one buffered document.
const docOverhead = 48

// bufferAll drains in into copies, failing with the stage's memory error
// when the copies exceed the budget.
func bufferAll(rc *runContext, in Source, stageName string) ([]bsoncore.Document, error) {
	var (
		out []bsoncore.Document
		mem int64
	)
	for {
		d, err := in.Next()
		if err != nil {
			return nil, err
		}
		if d == nil {
			return out, nil
		}
		mem += int64(len(d)) + docOverhead
		if mem > rc.opts.MaxMemory {
			return nil, rc.memoryError(stageName)
		}
		out = append(out, append(bsoncore.Document(nil), d...))
	}
}

// sliceNext returns a next function over docs.
func sliceNext(docs []bsoncore.Document) func() (bsoncore.Document, error) {
	return func() (bsoncore.Document, error) {
		if len(docs) == 0 {
			return nil, nil
		}
		d := docs[0]
		docs = docs[1:]
		return d, nil
	}
}

// blockingSource is the output of a stage that reads all of in before it
// emits anything ($bucketAuto, $densify, $setWindowFields): run computes the
// documents on the first Next, which then come out in order. After an
// error the source is empty.
func blockingSource(in Source, run func() ([]bsoncore.Document, error)) Source {
	var next func() (bsoncore.Document, error)
	return &funcSource{in: in, next: func() (bsoncore.Document, error) {
		if next == nil {
			out, err := run()
			next = sliceNext(out)
			if err != nil {
				return nil, err
			}
		}
		return next()
	}}
}
