package agg

import (
	"github.com/cairndb/cairn/internal/query"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func init() { registerStage("$sort", parseSort) }

// sortStage is $sort, a blocking stage over query.Sorter. Parse coalesces a
// following $limit into limit, which makes the sorter keep only the top
// limit documents (MongoDB's $sort+$limit coalescence).
type sortStage struct {
	spec  *query.Sort
	limit int64
}

func parseSort(arg bsoncore.Value, pc *parseContext) (stage, error) {
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		return nil, errorf(codeSortNotObject, "the $sort key specification must be an object")
	}
	if len(fieldsOf(arg)) == 0 {
		return nil, errorf(codeSortEmpty, "$sort stage must have at least one sort key")
	}
	s, err := query.ParseSort(arg.Data)
	if err != nil {
		return nil, err
	}
	if pc.opts.Collation != nil {
		s = s.WithCollation(pc.opts.Collation)
	}
	return &sortStage{spec: s}, nil
}

func (s *sortStage) open(rc *runContext, in Source) (Source, error) {
	return sortSource(rc, s.spec, s.limit, in), nil
}

// sortSource sorts in on its first Next.
func sortSource(rc *runContext, spec *query.Sort, limit int64, in Source) Source {
	sorter := query.NewSorter(spec, query.SorterOptions{
		Limit:        limit,
		MaxMemory:    rc.opts.MaxMemory,
		AllowDiskUse: rc.opts.AllowDiskUse,
		TempDir:      rc.opts.TempDir,
	})
	var it *query.SortIterator
	return &funcSource{in: in, done: sorter.Close, next: func() (bsoncore.Document, error) {
		if it == nil {
			for {
				d, err := in.Next()
				if err != nil {
					return nil, err
				}
				if d == nil {
					break
				}
				if err := sorter.Add(d); err != nil {
					return nil, err
				}
			}
			it = sorter.Iter()
		}
		if !it.Next() {
			return nil, it.Err()
		}
		return it.Doc(), nil
	}}
}
