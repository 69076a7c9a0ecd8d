package query_test

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/query"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// randomDocs makes n documents with _id i and a field v drawn from a small
// mix of types (numbers, strings, arrays, missing), so ties are frequent.
func randomDocs(r *rand.Rand, n int) []bsoncore.Document {
	docs := make([]bsoncore.Document, n)
	for i := range docs {
		b := bsoncore.NewDocumentBuilder().AppendInt32("_id", int32(i))
		switch r.IntN(6) {
		case 0:
			b.AppendInt32("v", int32(r.IntN(20)))
		case 1:
			b.AppendDouble("v", float64(r.IntN(40))/2)
		case 2:
			b.AppendString("v", fmt.Sprint(r.IntN(10)))
		case 3:
			b.AppendArray("v", bsoncore.NewArrayBuilder().AppendInt64(int64(r.IntN(20))).AppendInt32(int32(r.IntN(20))).Build())
		case 4:
			b.AppendNull("v")
		}
		b.AppendString("pad", string(make([]byte, r.IntN(50))))
		docs[i] = b.Build()
	}
	return docs
}

// referenceSort is the obvious stable sort over Sort.Compare.
func referenceSort(s *query.Sort, docs []bsoncore.Document) []bsoncore.Document {
	out := slices.Clone(docs)
	slices.SortStableFunc(out, s.Compare)
	return out
}

func drain(t *testing.T, it *query.SortIterator) []bsoncore.Document {
	t.Helper()
	var out []bsoncore.Document
	for it.Next() {
		out = append(out, it.Doc())
	}
	if err := it.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func idsOf(docs []bsoncore.Document) []int32 {
	var ids []int32
	for _, d := range docs {
		ids = append(ids, d.Lookup("_id").Int32())
	}
	return ids
}

// TestSorterDifferential checks in-memory, top-k and spilling sorts against
// the reference sort on random data. The seed is printed for replay.
func TestSorterDifferential(t *testing.T) {
	seed := rand.Uint64()
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 0))
	for round := range 20 {
		docs := randomDocs(r, 50+r.IntN(300))
		spec := `{"v": 1}`
		if round%2 == 1 {
			spec = `{"v": -1, "_id": 1}`
		}
		s, err := query.ParseSort(doc(t, spec))
		if err != nil {
			t.Fatal(err)
		}
		want := idsOf(referenceSort(s, docs))
		for _, opts := range []query.SorterOptions{
			{},
			{Limit: 7},
			{MaxMemory: 2000, AllowDiskUse: true, TempDir: t.TempDir()},
			{Limit: 30, MaxMemory: 1500, AllowDiskUse: true, TempDir: t.TempDir()},
		} {
			so := query.NewSorter(s, opts)
			for _, d := range docs {
				if err := so.Add(d); err != nil {
					t.Fatal(err)
				}
			}
			if opts.AllowDiskUse && so.Spilled() == 0 {
				t.Errorf("seed %d: expected spilling with MaxMemory %d", seed, opts.MaxMemory)
			}
			got := idsOf(drain(t, so.Iter()))
			exp := want
			if opts.Limit > 0 && int(opts.Limit) < len(exp) {
				exp = exp[:opts.Limit]
			}
			if !slices.Equal(got, exp) {
				t.Fatalf("seed %d round %d opts %+v:\ngot  %v\nwant %v", seed, round, opts, got, exp)
			}
			if err := so.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func TestSorterMemoryLimit(t *testing.T) {
	s, _ := query.ParseSort(doc(t, `{"v": 1}`))
	so := query.NewSorter(s, query.SorterOptions{MaxMemory: 1000})
	var err error
	for _, d := range randomDocs(rand.New(rand.NewPCG(1, 2)), 100) {
		if err = so.Add(d); err != nil {
			break
		}
	}
	if mongoerr.CodeOf(err) != 292 {
		t.Fatalf("err = %v, want code 292 (QueryExceededMemoryLimitNoDiskUseAllowed)", err)
	}
}

// TestSorterTopKBoundedMemory checks that a top-k sort holds only k
// documents: a budget that fits k but not all documents succeeds without
// disk.
func TestSorterTopKBoundedMemory(t *testing.T) {
	s, _ := query.ParseSort(doc(t, `{"v": -1}`))
	so := query.NewSorter(s, query.SorterOptions{Limit: 5, MaxMemory: 5 * 400})
	docs := randomDocs(rand.New(rand.NewPCG(3, 4)), 2000)
	for _, d := range docs {
		if err := so.Add(d); err != nil {
			t.Fatal(err)
		}
	}
	got := idsOf(drain(t, so.Iter()))
	want := idsOf(referenceSort(s, docs))[:5]
	if !slices.Equal(got, want) {
		t.Fatalf("got %v want %v", got, want)
	}
}

func TestSorterCloseRemovesRuns(t *testing.T) {
	dir := t.TempDir()
	s, _ := query.ParseSort(doc(t, `{"v": 1}`))
	so := query.NewSorter(s, query.SorterOptions{MaxMemory: 500, AllowDiskUse: true, TempDir: dir})
	for _, d := range randomDocs(rand.New(rand.NewPCG(5, 6)), 200) {
		if err := so.Add(d); err != nil {
			t.Fatal(err)
		}
	}
	drain(t, so.Iter())
	if err := so.Close(); err != nil {
		t.Fatal(err)
	}
	left, _ := os.ReadDir(dir)
	if len(left) != 0 {
		t.Fatalf("%d run files left after Close", len(left))
	}
}
