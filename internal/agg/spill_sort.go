package agg

import (
	"github.com/cairndb/cairn/internal/expr"
	"github.com/cairndb/cairn/internal/query"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Spilling $bucketAuto and $setWindowFields: with allowDiskUse, these
// stages hand their input to a query.Sorter, which keeps it in memory
// while it fits the budget and spills sorted runs to temporary files past
// it, then read it back in order. Each document travels wrapped as
// {k: {v: <key>}, d: <document>} and is sorted by {k: 1} followed by the
// stage's own sortBy on d: wrapping the key in a document makes the
// Sorter order it as one value (expr.Compare's order, arrays included)
// instead of by an array's smallest element, as a sort on the key itself
// would. The Sorter is stable, so equal keys keep their input order, as
// the in-memory path's stable sort does.

// keyedSorter sorts documents by a key, then by a sortBy on the document.
type keyedSorter struct {
	sorter *query.Sorter
}

// newKeyedSorter returns a sorter by key, then by sortBy (nil for none).
func newKeyedSorter(rc *runContext, sortBy bsoncore.Document) (*keyedSorter, error) {
	spec := bsoncore.NewDocumentBuilder().AppendInt32("k", 1)
	for _, f := range fieldsOf(docValue(sortBy)) {
		spec.AppendValue("d."+f.Name, f.Value)
	}
	srt, err := query.ParseSort(spec.Build())
	if err != nil {
		return nil, err
	}
	if rc.opts.Collation != nil {
		srt = srt.WithCollation(rc.opts.Collation) // keys and sortBy order strings by the pipeline's collation
	}
	return &keyedSorter{sorter: query.NewSorter(srt, query.SorterOptions{
		MaxMemory:    rc.opts.MaxMemory,
		AllowDiskUse: true,
		TempDir:      rc.opts.TempDir,
	})}, nil
}

// add buffers doc under key; the sorter copies both.
func (s *keyedSorter) add(key bsoncore.Value, doc bsoncore.Document) error {
	if key.Type == 0 {
		key = expr.Null
	}
	k := buildDoc([]field{{"v", key}})
	return s.sorter.Add(buildDoc([]field{{"k", docValue(k)}, {"d", docValue(doc)}}))
}

// iter finishes the sort; next yields the key and document of each entry
// in order, ok false at the end. Both stay valid until close.
func (s *keyedSorter) iter() func() (key bsoncore.Value, doc bsoncore.Document, ok bool, err error) {
	it := s.sorter.Iter()
	return func() (bsoncore.Value, bsoncore.Document, bool, error) {
		if !it.Next() {
			return bsoncore.Value{}, nil, false, it.Err()
		}
		w := it.Doc()
		return w.Lookup("k", "v"), w.Lookup("d").Document(), true, nil
	}
}

// close deletes the spilled runs.
func (s *keyedSorter) close() error { return s.sorter.Close() }
