package agg

import (
	"container/heap"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/collation"
	"github.com/cairndb/cairn/internal/query"
)

// SplitPipeline is a pipeline divided for a sharded collection: Shards
// runs on every targeted shard (parsed with Options.NeedsMerge when
// NeedsMerge), Merge runs on the router over the shards' outputs, which
// are merge-sorted by SortKey when it is set and concatenated otherwise.
type SplitPipeline struct {
	Shards     []bsoncore.Document
	Merge      []bsoncore.Document
	SortKey    bsoncore.Document
	NeedsMerge bool
}

// streaming stages transform one document at a time, so each shard can
// run them on its own documents.
var streaming = map[string]bool{
	"$match": true, "$project": true, "$addFields": true, "$set": true, "$unset": true,
	"$replaceRoot": true, "$replaceWith": true, "$redact": true, "$unwind": true,
}

// Split divides pipeline as MongoDB's router does: the streaming prefix
// (with a leading $versions, Cairn's history scan) runs on the shards; the first stage that needs every document decides
// the split —
//
//   - $sort: the shards sort (keeping skip+limit documents when $skip and
//     $limit follow) and the router merge-sorts their streams;
//   - $limit: each shard stops at the limit and the router applies it
//     again;
//   - $group (and $count, $sortByCount, which are groups): each shard
//     groups its documents into partial states and the router's $group
//     merges them ($doingMerge);
//   - anything else ($skip, $lookup, $facet, $bucket, $out, …): the rest
//     runs on the router.
//
// Everything after the split point runs on the router; a malformed stage
// goes there too, so the router's parse reports it. The split is
// checked by TestSplitAgrees: over random pipelines and documents dealt to
// shards, the split pipeline answers what the whole one does.
func Split(pipeline []bsoncore.Document) (SplitPipeline, error) {
	var sp SplitPipeline
	for i, st := range pipeline {
		name, arg, err := stageNameArg(st)
		if err != nil {
			return SplitPipeline{}, err
		}
		rest := pipeline[i+1:]
		switch {
		case streaming[name], name == "$versions" && i == 0:
			// $versions reads the shard's history keyspace: each shard
			// emits the versions of its own documents.
			sp.Shards = append(sp.Shards, st)
			continue
		case name == "$sort" && arg.Type == bsoncore.TypeEmbeddedDocument:
			sp.Shards = append(sp.Shards, st)
			sp.SortKey = arg.Document()
			if skip, limit := leadingSkipLimit(rest); limit >= 0 {
				sp.Shards = append(sp.Shards, stageDoc("$limit", bsoncore.Value{Type: bsoncore.TypeInt64, Data: bsoncore.AppendInt64(nil, skip+limit)}))
			}
			sp.Merge = append(sp.Merge, rest...) // $skip and $limit again, over the merged stream
		case name == "$limit":
			sp.Shards = append(sp.Shards, st)
			sp.Merge = append(append(sp.Merge, st), rest...)
		case name == "$group" && arg.Type == bsoncore.TypeEmbeddedDocument:
			sp.Shards, sp.NeedsMerge = append(sp.Shards, st), true
			merge := bsoncore.NewDocumentBuilder().AppendBoolean("$doingMerge", true)
			for _, f := range fieldsOf(arg) {
				merge.AppendValue(f.Name, f.Value)
			}
			sp.Merge = append(append(sp.Merge, stageDoc("$group", docValue(merge.Build()))), rest...)
		case name == "$count" && arg.Type == bsoncore.TypeString:
			field := arg.StringValue()
			group := groupSpec(bsoncore.Value{Type: bsoncore.TypeNull}, field)
			sp.Shards, sp.NeedsMerge = append(sp.Shards, stageDoc("$group", group)), true
			project := bsoncore.NewDocumentBuilder().AppendInt32("_id", 0).AppendInt32(field, 1).Build()
			sp.Merge = append(append(sp.Merge, stageDoc("$group", withDoingMerge(group)), stageDoc("$project", docValue(project))), rest...)
		case name == "$sortByCount":
			group := groupSpec(arg, "count")
			sp.Shards, sp.NeedsMerge = append(sp.Shards, stageDoc("$group", group)), true
			sortBy := bsoncore.NewDocumentBuilder().AppendInt32("count", -1).Build()
			sp.Merge = append(append(sp.Merge, stageDoc("$group", withDoingMerge(group)), stageDoc("$sort", docValue(sortBy))), rest...)
		default:
			sp.Merge = append(sp.Merge, pipeline[i:]...)
		}
		return sp, nil
	}
	return sp, nil
}

// leadingSkipLimit reads a $skip then $limit, or a $limit, at the start of
// stages: the shards keep skip+limit documents. limit is -1 when there is
// no $limit there.
func leadingSkipLimit(stages []bsoncore.Document) (skip, limit int64) {
	for i, st := range stages {
		name, arg, err := stageNameArg(st)
		if err != nil {
			return 0, -1
		}
		v, ok := arg.AsInt64OK()
		switch {
		case name == "$skip" && ok && i == 0:
			skip = v
		case name == "$limit" && ok && i <= 1:
			return skip, v
		default:
			return 0, -1
		}
	}
	return 0, -1
}

func stageDoc(name string, arg bsoncore.Value) bsoncore.Document {
	return bsoncore.NewDocumentBuilder().AppendValue(name, arg).Build()
}

// groupSpec is {_id: id, <field>: {$sum: 1}}.
func groupSpec(id bsoncore.Value, field string) bsoncore.Value {
	sum := bsoncore.NewDocumentBuilder().AppendInt32("$sum", 1).Build()
	return docValue(bsoncore.NewDocumentBuilder().AppendValue("_id", id).AppendDocument(field, sum).Build())
}

func withDoingMerge(group bsoncore.Value) bsoncore.Value {
	b := bsoncore.NewDocumentBuilder().AppendBoolean("$doingMerge", true)
	for _, f := range fieldsOf(group) {
		b.AppendValue(f.Name, f.Value)
	}
	return docValue(b.Build())
}

// MergeSorted returns the documents of sources, each already sorted by
// sortKey, in sortKey order (a k-way merge: the router's half of a split
// $sort). It closes the sources when closed.
func MergeSorted(sources []Source, sortKey bsoncore.Document) (Source, error) {
	return MergeSortedWith(sources, sortKey, nil)
}

// MergeSortedWith is MergeSorted for sources sorted under a collation
// (nil: simple), the aggregate's.
func MergeSortedWith(sources []Source, sortKey bsoncore.Document, coll *collation.Collator) (Source, error) {
	spec, err := query.ParseSort(sortKey)
	if err != nil {
		return nil, err
	}
	if coll != nil {
		spec = spec.WithCollation(coll)
	}
	h := &mergeHeap{spec: spec, last: -1}
	started := false
	return &funcSource{done: func() error {
		var first error
		for _, s := range sources {
			if err := s.Close(); err != nil && first == nil {
				first = err
			}
		}
		return first
	}, next: func() (bsoncore.Document, error) {
		if !started {
			started = true
			for i, s := range sources {
				if err := h.pull(s, i, false); err != nil {
					return nil, err
				}
			}
			heap.Init(h)
		} else if h.last >= 0 {
			// Refill from the source whose document went out last.
			if err := h.pull(sources[h.last], h.last, true); err != nil {
				return nil, err
			}
		}
		if h.Len() == 0 {
			return nil, nil
		}
		top := heap.Pop(h).(mergeItem)
		h.last = top.src
		return top.doc, nil
	}}, nil
}

type mergeItem struct {
	doc bsoncore.Document
	src int
}

type mergeHeap struct {
	spec  *query.Sort
	items []mergeItem
	last  int
}

// pull reads the next document of source i: pushed onto the heap, or
// only appended while the heap is being filled before heap.Init.
func (h *mergeHeap) pull(s Source, i int, push bool) error {
	d, err := s.Next()
	if err != nil || d == nil {
		return err
	}
	item := mergeItem{doc: append(bsoncore.Document(nil), d...), src: i}
	if push {
		heap.Push(h, item)
	} else {
		h.items = append(h.items, item)
	}
	return nil
}

func (h *mergeHeap) Len() int { return len(h.items) }
func (h *mergeHeap) Less(i, j int) bool {
	if c := h.spec.Compare(h.items[i].doc, h.items[j].doc); c != 0 {
		return c < 0
	}
	return h.items[i].src < h.items[j].src
}
func (h *mergeHeap) Swap(i, j int) { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *mergeHeap) Push(x any)    { h.items = append(h.items, x.(mergeItem)) }
func (h *mergeHeap) Pop() any {
	it := h.items[len(h.items)-1]
	h.items = h.items[:len(h.items)-1]
	return it
}
