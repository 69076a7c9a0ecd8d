package agg_test

import (
	"context"
	"strings"
	"testing"

	"github.com/cairndb/cairn/internal/agg"
	"github.com/cairndb/cairn/internal/agg/aggtest"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// FuzzPipeline parses and runs random pipelines over small inputs, both
// given as extended JSON ({"p": [stages…]} and {"d": [documents…]}), and
// checks that nothing panics and that every output is a valid document.
// The corpus cases are its seeds, so `go test` runs them all.
func FuzzPipeline(f *testing.F) {
	cases, err := aggtest.Load("testdata")
	if err != nil {
		f.Fatal(err)
	}
	for _, c := range cases {
		f.Add(pipelineJSON(f, c.Pipeline), docsJSON(f, c.Docs))
	}
	f.Add(`{"p": [{"$unwind": "$a"}, {"$group": {"_id": "$a", "x": {"$push": "$$ROOT"}}}]}`, `{"d": [{"a": [1, [2], {"b": 3}]}, {"a": null}]}`)
	f.Fuzz(func(t *testing.T, pipeline, docs string) {
		var p, d bson.Raw
		if bson.UnmarshalExtJSON([]byte(pipeline), false, &p) != nil || bson.UnmarshalExtJSON([]byte(docs), false, &d) != nil {
			return
		}
		var stages []bsoncore.Document
		if arr, ok := bsoncore.Document(p).Lookup("p").ArrayOK(); ok {
			vals, _ := arr.Values()
			for _, v := range vals {
				if doc, ok := v.DocumentOK(); ok {
					stages = append(stages, doc)
				}
			}
		}
		var input []bsoncore.Document
		if arr, ok := bsoncore.Document(d).Lookup("d").ArrayOK(); ok {
			vals, _ := arr.Values()
			for _, v := range vals {
				if doc, ok := v.DocumentOK(); ok {
					input = append(input, doc)
				}
			}
		}
		pl, err := agg.Parse(stages, agg.Options{MaxMemory: 1 << 20, Catalog: mapCatalog{"c": input}, Seed: 1})
		if err != nil {
			return
		}
		src, err := pl.Run(context.Background(), agg.SliceSource(input))
		if err != nil {
			return
		}
		defer src.Close()
		for n := 0; n < 10000; n++ {
			doc, err := src.Next()
			if err != nil || doc == nil {
				return
			}
			if err := doc.Validate(); err != nil {
				t.Fatalf("invalid output document %x: %v", []byte(doc), err)
			}
		}
	})
}

func pipelineJSON(f *testing.F, stages []bsoncore.Document) string {
	parts := make([]string, len(stages))
	for i, s := range stages {
		b, err := bson.MarshalExtJSON(bson.Raw(s), true, false)
		if err != nil {
			f.Fatal(err)
		}
		parts[i] = string(b)
	}
	return `{"p": [` + strings.Join(parts, ", ") + `]}`
}

func docsJSON(f *testing.F, docs []bsoncore.Document) string {
	parts := make([]string, len(docs))
	for i, d := range docs {
		b, err := bson.MarshalExtJSON(bson.Raw(d), true, false)
		if err != nil {
			f.Fatal(err)
		}
		parts[i] = string(b)
	}
	return `{"d": [` + strings.Join(parts, ", ") + `]}`
}
