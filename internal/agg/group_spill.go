package agg

import (
	"bufio"
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/cairndb/cairn/internal/expr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Spilling $group: with allowDiskUse, a $group over its memory budget
// writes its groups, sorted by key, as a run of partial states to a
// temporary file (the approach of query.Sorter's spilled runs) and starts
// again with no groups. At the end the runs are merged by key, the
// partial states of one key folded together in the order they were
// written, so order-sensitive accumulators ($first, $push, …) see their
// input in order. A spilled $group emits its groups in key order
// (MongoDB's order is unspecified either way). Runs are scratch data,
// deleted when the stage closes, so they bypass the storage layer's vfs.

// groupSpill is the runs of one $group.
type groupSpill struct {
	dir   string
	files []*os.File
}

// spillRecord is one group of a run: {k: <key>, id: <_id>, a: [partials]}.
func spillRecord(gr *group) (bsoncore.Document, error) {
	parts := make([]bsoncore.Value, len(gr.accs))
	for i, a := range gr.accs {
		p, err := a.partial()
		if err != nil {
			return nil, err
		}
		parts[i] = p
	}
	return buildDoc([]field{
		{"k", bsoncore.Value{Type: bsoncore.TypeBinary, Data: bsoncore.AppendBinary(nil, 0, []byte(gr.key))}},
		{"id", gr.id},
		{"a", arrayWithMissing(parts)},
	}), nil
}

// arrayWithMissing is an array that keeps positions: Missing becomes an
// empty document (partials are never Missing, but stay safe).
func arrayWithMissing(vals []bsoncore.Value) bsoncore.Value {
	out := make([]bsoncore.Value, len(vals))
	for i, v := range vals {
		if v.Type == 0 {
			v = docValue(emptyDoc)
		}
		out[i] = v
	}
	return buildArray(out)
}

// write spills groups as one run sorted by key.
func (s *groupSpill) write(groups []*group) error {
	sort.Slice(groups, func(i, j int) bool { return groups[i].key < groups[j].key })
	f, err := os.CreateTemp(s.dir, "cairn-group-*")
	if err != nil {
		return fmt.Errorf("agg: group spill: %w", err)
	}
	s.files = append(s.files, f)
	w := bufio.NewWriter(f)
	for _, gr := range groups {
		rec, err := spillRecord(gr)
		if err != nil {
			return err
		}
		if _, err := w.Write(rec); err != nil {
			return fmt.Errorf("agg: group spill: %w", err)
		}
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("agg: group spill: %w", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("agg: group spill: %w", err)
	}
	return nil
}

// close deletes the runs.
func (s *groupSpill) close() error {
	var errs []error
	for _, f := range s.files {
		errs = append(errs, f.Close(), os.Remove(f.Name()))
	}
	s.files = nil
	return errors.Join(errs...)
}

// runCursor reads one run's records in order.
type runCursor struct {
	r    *bufio.Reader
	idx  int // the run's position: ties go to earlier runs
	key  string
	id   bsoncore.Value
	accs []bsoncore.Value
}

func (c *runCursor) advance() (bool, error) {
	var l [4]byte
	if _, err := io.ReadFull(c.r, l[:]); err != nil {
		if err == io.EOF {
			return false, nil
		}
		return false, fmt.Errorf("agg: group spill read: %w", err)
	}
	n := binary.LittleEndian.Uint32(l[:])
	if n < 5 || n > 1<<30 {
		return false, fmt.Errorf("agg: group spill read: bad record length %d", n)
	}
	doc := make([]byte, n)
	copy(doc, l[:])
	if _, err := io.ReadFull(c.r, doc[4:]); err != nil {
		return false, fmt.Errorf("agg: group spill read: %w", err)
	}
	fs := fieldsOf(docValue(doc))
	_, key, _ := getField(fs, "k").BinaryOK()
	c.key = string(key)
	c.id = getField(fs, "id")
	c.accs = arrayValues(getField(fs, "a"))
	return true, nil
}

type cursorHeap []*runCursor

func (h cursorHeap) Len() int { return len(h) }
func (h cursorHeap) Less(i, j int) bool {
	if h[i].key != h[j].key {
		return h[i].key < h[j].key
	}
	return h[i].idx < h[j].idx
}
func (h cursorHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *cursorHeap) Push(x any)   { *h = append(*h, x.(*runCursor)) }
func (h *cursorHeap) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}

// mergeNext returns a next function over the merged groups.
func (s *groupSpill) mergeNext(g *groupStage, nctx *expr.Context) (func() (bsoncore.Document, error), error) {
	h := &cursorHeap{}
	for i, f := range s.files {
		c := &runCursor{r: bufio.NewReader(f), idx: i}
		ok, err := c.advance()
		if err != nil {
			return nil, err
		}
		if ok {
			heap.Push(h, c)
		}
	}
	return func() (bsoncore.Document, error) {
		if h.Len() == 0 {
			return nil, nil
		}
		first := (*h)[0]
		key, id := first.key, first.id
		accs := make([]accumulator, len(g.accs))
		for i := range g.accs {
			a, err := g.accs[i].newAcc(id, nctx)
			if err != nil {
				return nil, err
			}
			accs[i] = a
		}
		for h.Len() > 0 && (*h)[0].key == key {
			c := (*h)[0]
			for i := range accs {
				if i < len(c.accs) {
					if err := accs[i].merge(c.accs[i]); err != nil {
						return nil, err
					}
				}
			}
			ok, err := c.advance()
			if err != nil {
				return nil, err
			}
			if ok {
				heap.Fix(h, 0)
			} else {
				heap.Pop(h)
			}
		}
		return g.output(id, accs)
	}, nil
}
