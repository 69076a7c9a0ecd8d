package agg_test

import (
	"context"
	"testing"

	"github.com/cairndb/cairn/internal/agg"
	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/collation"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// countingCatalog is an IndexCatalog over one foreign collection that
// answers FindIn by brute force and counts how $lookup read it.
type countingCatalog struct {
	docs         []bsoncore.Document
	indexed      bool
	scans, finds int
}

func (c *countingCatalog) Scan(_ context.Context, _, _ string) (agg.Source, error) {
	c.scans++
	return agg.SliceSource(c.docs), nil
}

func (c *countingCatalog) FindIn(_ context.Context, _, _, path string, vals []bsoncore.Value, _ *collation.Collator) (agg.Source, bool, error) {
	if !c.indexed {
		return nil, false, nil
	}
	c.finds++
	var out []bsoncore.Document
	for _, d := range c.docs {
		v, err := d.LookupErr(path)
		if err != nil {
			continue
		}
		for _, want := range vals {
			if bsonx.Compare(v, want) == 0 {
				out = append(out, d)
				break
			}
		}
	}
	return agg.SliceSource(out), true, nil
}

func mustDocs(t *testing.T, ds ...bson.D) []bsoncore.Document {
	t.Helper()
	out := make([]bsoncore.Document, len(ds))
	for i, d := range ds {
		b, err := bson.Marshal(d)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = b
	}
	return out
}

// TestLookupUsesIndexCatalog checks $lookup asks an IndexCatalog once per
// input document instead of reading the whole foreign collection, falls
// back to one read when there is no index, and to the read for a local
// value an index cannot answer exactly (a regular expression).
func TestLookupUsesIndexCatalog(t *testing.T) {
	foreign := mustDocs(t, bson.D{{Key: "_id", Value: 1}, {Key: "f", Value: "a"}}, bson.D{{Key: "_id", Value: 2}, {Key: "f", Value: "b"}})
	stage := mustDocs(t, bson.D{{Key: "$lookup", Value: bson.D{{Key: "from", Value: "x"}, {Key: "localField", Value: "k"}, {Key: "foreignField", Value: "f"}, {Key: "as", Value: "j"}}}})
	input := mustDocs(t,
		bson.D{{Key: "_id", Value: 10}, {Key: "k", Value: "a"}},
		bson.D{{Key: "_id", Value: 11}, {Key: "k", Value: "b"}},
		bson.D{{Key: "_id", Value: 12}, {Key: "k", Value: "c"}},
	)
	for _, tc := range []struct {
		name         string
		indexed      bool
		extra        []bsoncore.Document
		scans, finds int
	}{
		{name: "indexed", indexed: true, finds: 3},
		{name: "not indexed", indexed: false, scans: 1},
		{name: "regex falls back", indexed: true, extra: mustDocs(t, bson.D{{Key: "_id", Value: 13}, {Key: "k", Value: bson.Regex{Pattern: "a"}}}), finds: 3, scans: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cat := &countingCatalog{docs: foreign, indexed: tc.indexed}
			p, err := agg.Parse(stage, agg.Options{DB: "test", Catalog: cat})
			if err != nil {
				t.Fatal(err)
			}
			out, err := p.Run(context.Background(), agg.SliceSource(append(append([]bsoncore.Document(nil), input...), tc.extra...)))
			if err != nil {
				t.Fatal(err)
			}
			docs, err := agg.ReadAll(out)
			if err != nil {
				t.Fatal(err)
			}
			if len(docs) != 3+len(tc.extra) {
				t.Fatalf("got %d documents", len(docs))
			}
			for i, want := range []int{1, 1, 0} {
				arr, _ := docs[i].Lookup("j").ArrayOK()
				vals, _ := arr.Values()
				if len(vals) != want {
					t.Errorf("document %d joined %d, want %d", i, len(vals), want)
				}
			}
			if cat.scans != tc.scans || cat.finds != tc.finds {
				t.Errorf("scans=%d finds=%d, want %d and %d", cat.scans, cat.finds, tc.scans, tc.finds)
			}
		})
	}
}
