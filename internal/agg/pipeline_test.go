package agg_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/cairndb/cairn/internal/agg"
	"github.com/cairndb/cairn/internal/mongoerr"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func doc(t testing.TB, s string) bsoncore.Document {
	t.Helper()
	var raw bson.Raw
	if err := bson.UnmarshalExtJSON([]byte(s), false, &raw); err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return bsoncore.Document(raw)
}

func stages(t testing.TB, ss ...string) []bsoncore.Document {
	out := make([]bsoncore.Document, len(ss))
	for i, s := range ss {
		out[i] = doc(t, s)
	}
	return out
}

func TestLeadingMatch(t *testing.T) {
	p, err := agg.Parse(stages(t, `{"$match": {"a": 1}}`, `{"$project": {"a": 1}}`), agg.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.LeadingMatch(); got == nil || got.Lookup("a").Int32() != 1 {
		t.Fatalf("LeadingMatch = %v", got)
	}
	q := p.WithoutLeadingMatch()
	if q.LeadingMatch() != nil {
		t.Fatal("WithoutLeadingMatch kept the $match")
	}
	// The caller's scan applied the filter: the rest runs unfiltered.
	out, err := q.Run(context.Background(), agg.SliceSource(stages(t, `{"_id": 1, "a": 2}`)))
	if err != nil {
		t.Fatal(err)
	}
	docs, err := agg.ReadAll(out)
	if err != nil || len(docs) != 1 {
		t.Fatalf("docs = %v, err = %v", docs, err)
	}
	p2, _ := agg.Parse(stages(t, `{"$project": {"a": 1}}`, `{"$match": {"a": 1}}`), agg.Options{})
	if p2.LeadingMatch() != nil || p2.WithoutLeadingMatch() != p2 {
		t.Fatal("a $match that is not first is not leading")
	}
}

func TestDocumentsWithoutInput(t *testing.T) {
	p, err := agg.Parse(stages(t, `{"$documents": [{"x": 1}, {"x": 2}]}`), agg.Options{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Run(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	docs, err := agg.ReadAll(out)
	if err != nil || len(docs) != 2 {
		t.Fatalf("docs = %v, err = %v", docs, err)
	}
}

// TestConcurrentRuns runs parsed pipelines from many goroutines (run with
// -race): a Pipeline holds no per-run state, and what its expressions
// share (a constant regex compiled once, the time zone cache) is safe for
// concurrent use. Every run must give the serial run's output.
func TestConcurrentRuns(t *testing.T) {
	pipelines := [][]string{
		{`{"$unwind": "$a"}`,
			`{"$group": {"_id": "$a", "n": {"$sum": 1}, "s": {"$addToSet": "$b"}}}`,
			`{"$sort": {"_id": 1}}`,
			`{"$project": {"n": 1, "m": {"$multiply": ["$n", 2]}}}`},
		{`{"$set": {"r": {"$regexFindAll": {"input": "$s", "regex": "b+", "options": "i"}},
				"d": {"$dateToString": {"date": "$d", "timezone": "America/New_York", "format": "%Y-%m-%d %H:%M %z"}},
				"p": {"$dateToParts": {"date": "$d", "timezone": "+05:30"}}}}`,
			`{"$setWindowFields": {"sortBy": {"b": 1}, "output": {"rank": {"$rank": {}},
				"last": {"$lastN": {"input": "$s", "n": 2}, "window": {"documents": ["unbounded", "current"]}}}}}`,
			`{"$bucketAuto": {"groupBy": "$b", "buckets": 2, "output": {"docs": {"$push": "$$ROOT"}}}}`},
	}
	input := stages(t,
		`{"a": [1, 2, 3], "b": 1, "s": "abBc", "d": {"$date": "2024-03-10T06:59:00Z"}}`,
		`{"a": [2, 3], "b": 2, "s": "bb", "d": {"$date": "2024-03-10T07:01:00Z"}}`,
		`{"a": [3], "b": 1, "s": "c", "d": {"$date": "2024-11-03T05:30:00Z"}}`)
	for _, ss := range pipelines {
		p, err := agg.Parse(stages(t, ss...), agg.Options{})
		if err != nil {
			t.Fatal(err)
		}
		run := func() (string, error) {
			out, err := p.Run(context.Background(), agg.SliceSource(input))
			if err != nil {
				return "", err
			}
			docs, err := agg.ReadAll(out)
			return fmt.Sprint(docs), err
		}
		want, err := run()
		if err != nil || want == "[]" {
			t.Fatalf("serial run: %s, err = %v", want, err)
		}
		var wg sync.WaitGroup
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 50 {
					if got, err := run(); err != nil || got != want {
						t.Errorf("got %s, err = %v; want %s", got, err, want)
						return
					}
				}
			}()
		}
		wg.Wait()
	}
}

// TestGroupMemoryLimit checks the 292 error without allowDiskUse on a
// budget that many groups exceed, and that with allowDiskUse the same
// $group spills and completes.
func TestGroupMemoryLimit(t *testing.T) {
	var input []bsoncore.Document
	for i := range 2000 {
		input = append(input, bsoncore.NewDocumentBuilder().AppendInt32("k", int32(i)).Build())
	}
	for _, allow := range []bool{false, true} {
		p, err := agg.Parse(stages(t, `{"$group": {"_id": "$k"}}`), agg.Options{MaxMemory: 64 << 10, AllowDiskUse: allow, TempDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		out, err := p.Run(context.Background(), agg.SliceSource(input))
		if err != nil {
			t.Fatal(err)
		}
		docs, err := agg.ReadAll(out)
		switch {
		case !allow && mongoerr.CodeOf(err) != mongoerr.QueryExceededMemory:
			t.Errorf("allowDiskUse=false: err = %v, want code 292", err)
		case allow && (err != nil || len(docs) != 2000):
			t.Errorf("allowDiskUse=true: %d groups, err = %v, want 2000 groups", len(docs), err)
		}
	}
}

// TestSortLimitIsTopK checks that $sort+$limit keeps only the top k: a
// budget that a full sort would exceed is enough.
func TestSortLimitIsTopK(t *testing.T) {
	var input []bsoncore.Document
	for i := range 5000 {
		input = append(input, bsoncore.NewDocumentBuilder().AppendInt32("k", int32(5000-i)).AppendString("pad", "xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx").Build())
	}
	p, err := agg.Parse(stages(t, `{"$sort": {"k": 1}}`, `{"$limit": 3}`), agg.Options{MaxMemory: 4 << 10})
	if err != nil {
		t.Fatal(err)
	}
	out, err := p.Run(context.Background(), agg.SliceSource(input))
	if err != nil {
		t.Fatal(err)
	}
	docs, err := agg.ReadAll(out)
	if err != nil || len(docs) != 3 || docs[0].Lookup("k").Int32() != 1 {
		t.Fatalf("docs = %d, err = %v", len(docs), err)
	}
}

func TestStageNames(t *testing.T) {
	want := []string{"$addFields", "$bucket", "$count", "$documents", "$facet", "$group", "$limit", "$lookup", "$match", "$merge", "$out", "$project", "$replaceRoot", "$replaceWith", "$sample", "$set", "$skip", "$sort", "$sortByCount", "$unionWith", "$unset", "$unwind"}
	// Later stages (several files add them), checked for inclusion.
	want = append(want, "$bucketAuto", "$redact", "$collStats", "$currentOp", "$indexStats")
	want = append(want, "$densify", "$fill", "$setWindowFields")
	got := agg.StageNames()
	if !slices.IsSorted(got) {
		t.Fatalf("StageNames not sorted: %v", got)
	}
	for _, w := range want {
		if !slices.Contains(got, w) {
			t.Fatalf("StageNames = %v, missing %s", got, w)
		}
	}
}
