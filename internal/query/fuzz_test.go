package query_test

import (
	"testing"

	"github.com/cairndb/cairn/internal/query"
	"github.com/cairndb/cairn/internal/query/querytest"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// FuzzFilter parses arbitrary bytes as a filter (and as a projection and a
// sort) and matches and explains arbitrary bytes as a document: nothing may panic,
// whatever the input. The seed corpus is every filter and document of the
// testdata corpus, so it runs as part of go test.
func FuzzFilter(f *testing.F) {
	cases, err := querytest.Load("testdata")
	if err != nil {
		f.Fatal(err)
	}
	for _, c := range cases {
		for i, d := range c.Docs {
			if i > 2 {
				break
			}
			f.Add([]byte(c.Filter), []byte(d))
			if c.Projection != nil {
				f.Add([]byte(c.Projection), []byte(d))
			}
		}
	}
	f.Fuzz(func(t *testing.T, filter, docBytes []byte) {
		d := bsoncore.Document(docBytes)
		if flt, err := query.Parse(filter); err == nil {
			flt.Match(d)
			flt.Explain(filter, d) // documents that fail a validator are explained
			_, pos := flt.MatchDetails(d)
			if p, err := query.ParseProjection(filter, flt); err == nil {
				_, _ = p.Apply(nil, d, pos)
			}
		}
		if p, err := query.ParseProjection(filter, nil); err == nil {
			_, _ = p.Apply(nil, d, -1)
		}
		if s, err := query.ParseSort(filter); err == nil {
			s.Key(d)
		}
	})
}
