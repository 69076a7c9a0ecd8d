package query

import (
	"bufio"
	"container/heap"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// DefaultSortMemory is MongoDB's internalQueryMaxBlockingSortMemoryUsageBytes:
// the memory a blocking sort may use before it spills or fails.
const DefaultSortMemory = 100 << 20

// sortEntryOverhead approximates the bookkeeping bytes of one buffered
// document beyond its BSON (entry struct, key slice, heap slot).
const sortEntryOverhead = 64

// SorterOptions configure a Sorter.
type SorterOptions struct {
	// Limit, when positive, keeps only the first Limit documents of the
	// order (top-k): a find's skip+limit. Only those are held in memory.
	Limit int64
	// MaxMemory is the memory budget in bytes; 0 means DefaultSortMemory.
	MaxMemory int64
	// AllowDiskUse lets the sorter spill sorted runs to temporary files
	// when the budget is exceeded; without it the sort fails with code 292
	// (QueryExceededMemoryLimitNoDiskUseAllowed).
	AllowDiskUse bool
	// TempDir is where runs are spilled ("" is os.TempDir()). Runs are
	// scratch data, deleted by Close, and never need to survive a crash, so
	// they do not go through the storage layer's vfs.
	TempDir string
}

// Sorter is a blocking sort: Add every document, then Iter. It copies the
// documents it keeps. It is not safe for concurrent use.
type Sorter struct {
	sort    *Sort
	opts    SorterOptions
	entries []*sortEntry
	mem     int64
	seq     uint64
	runs    []*os.File
	done    bool
}

// sortEntry is a buffered document with its precomputed key; seq is the
// arrival order, the tie-breaker that makes the sort stable.
type sortEntry struct {
	doc []byte
	key []bsoncore.Value
	seq uint64
}

// NewSorter returns a sorter ordering documents by s.
func NewSorter(s *Sort, opts SorterOptions) *Sorter {
	if opts.MaxMemory <= 0 {
		opts.MaxMemory = DefaultSortMemory
	}
	return &Sorter{sort: s, opts: opts}
}

func (s *Sorter) less(a, b *sortEntry) bool {
	if c := s.sort.CompareKeys(a.key, b.key); c != 0 {
		return c < 0
	}
	return a.seq < b.seq
}

func (s *Sorter) newEntry(doc []byte, seq uint64) *sortEntry {
	d := append([]byte(nil), doc...)
	return &sortEntry{doc: d, key: s.sort.Key(d), seq: seq}
}

func entrySize(e *sortEntry) int64 { return int64(len(e.doc)) + sortEntryOverhead }

// errSortMemory is MongoDB's error for a blocking sort over its budget.
func (s *Sorter) errSortMemory() error {
	return errorf(codeSortMemoryLimit, "Sort exceeded memory limit of %d bytes, but did not opt in to external sorting.", s.opts.MaxMemory)
}

// Add buffers one document.
func (s *Sorter) Add(doc bsoncore.Document) error {
	if s.done {
		return errors.New("query: Sorter.Add after Iter")
	}
	s.seq++
	if s.opts.Limit > 0 && int64(len(s.entries)) >= s.opts.Limit {
		// Top-k: entries is a max-heap of the best Limit so far; a newcomer
		// that is not better than the worst is dropped without copying.
		key := s.sort.Key(doc)
		worst := s.entries[0]
		if c := s.sort.CompareKeys(key, worst.key); c >= 0 {
			return nil
		}
		e := s.newEntry(doc, s.seq)
		s.mem += entrySize(e) - entrySize(worst)
		s.entries[0] = e
		heap.Fix((*maxHeap)(s), 0)
	} else {
		e := s.newEntry(doc, s.seq)
		s.mem += entrySize(e)
		if s.opts.Limit > 0 {
			heap.Push((*maxHeap)(s), e)
		} else {
			s.entries = append(s.entries, e)
		}
	}
	if s.mem > s.opts.MaxMemory {
		if !s.opts.AllowDiskUse {
			return s.errSortMemory()
		}
		return s.spill()
	}
	return nil
}

// maxHeap orders a Sorter's entries worst-first, for top-k.
type maxHeap Sorter

func (h *maxHeap) Len() int           { return len(h.entries) }
func (h *maxHeap) Less(i, j int) bool { return (*Sorter)(h).less(h.entries[j], h.entries[i]) }
func (h *maxHeap) Swap(i, j int)      { h.entries[i], h.entries[j] = h.entries[j], h.entries[i] }
func (h *maxHeap) Push(x any)         { h.entries = append(h.entries, x.(*sortEntry)) }
func (h *maxHeap) Pop() any {
	e := h.entries[len(h.entries)-1]
	h.entries = h.entries[:len(h.entries)-1]
	return e
}

func (s *Sorter) sortEntries() {
	slices.SortFunc(s.entries, func(a, b *sortEntry) int {
		if s.less(a, b) {
			return -1
		}
		if s.less(b, a) {
			return 1
		}
		return 0
	})
}

// spill writes the buffered entries, sorted, as one run file:
// repeated (seq uint64 little endian, document).
func (s *Sorter) spill() error {
	s.sortEntries()
	f, err := os.CreateTemp(s.opts.TempDir, "cairn-sort-*")
	if err != nil {
		return fmt.Errorf("query: sort spill: %w", err)
	}
	s.runs = append(s.runs, f)
	w := bufio.NewWriter(f)
	var seq [8]byte
	for _, e := range s.entries {
		binary.LittleEndian.PutUint64(seq[:], e.seq)
		if _, err := w.Write(seq[:]); err != nil {
			return fmt.Errorf("query: sort spill: %w", err)
		}
		if _, err := w.Write(e.doc); err != nil {
			return fmt.Errorf("query: sort spill: %w", err)
		}
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("query: sort spill: %w", err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("query: sort spill: %w", err)
	}
	s.entries, s.mem = nil, 0
	return nil
}

// Spilled reports how many runs were written to disk.
func (s *Sorter) Spilled() int { return len(s.runs) }

// Iter finishes the sort and returns an iterator over the documents in
// order. The Sorter must not be used afterwards except to Close it.
func (s *Sorter) Iter() *SortIterator {
	s.done = true
	s.sortEntries()
	it := &SortIterator{s: s, limit: s.opts.Limit}
	if len(s.runs) == 0 {
		it.mem = s.entries
		return it
	}
	for _, f := range s.runs {
		r := &runReader{r: bufio.NewReader(f)}
		if err := it.pushRun(r); err != nil {
			it.err = err
			return it
		}
	}
	if len(s.entries) > 0 {
		if err := it.pushRun(&runReader{mem: s.entries}); err != nil {
			it.err = err
		}
	}
	return it
}

// Close deletes the spilled runs.
func (s *Sorter) Close() error {
	var errs []error
	for _, f := range s.runs {
		errs = append(errs, f.Close(), os.Remove(f.Name()))
	}
	s.runs, s.entries = nil, nil
	return errors.Join(errs...)
}

// SortIterator yields a Sorter's documents in order.
type SortIterator struct {
	s     *Sorter
	mem   []*sortEntry // no runs: the in-memory entries
	heads runHeap      // with runs: a merge heap of run heads
	cur   []byte
	n     int64
	limit int64
	err   error
}

// Next advances to the next document; it returns false at the end or on
// error (see Err).
func (it *SortIterator) Next() bool {
	if it.err != nil || it.limit > 0 && it.n >= it.limit {
		return false
	}
	if it.heads.s == nil {
		if len(it.mem) == 0 {
			return false
		}
		it.cur, it.mem = it.mem[0].doc, it.mem[1:]
		it.n++
		return true
	}
	if it.heads.Len() == 0 {
		return false
	}
	r := it.heads.runs[0]
	it.cur = r.head.doc
	if err := r.advance(it.s); err != nil {
		it.err = err
		return false
	}
	if r.head == nil {
		heap.Pop(&it.heads)
	} else {
		heap.Fix(&it.heads, 0)
	}
	it.n++
	return true
}

// Doc is the current document; it stays valid until the Sorter is closed.
func (it *SortIterator) Doc() bsoncore.Document { return it.cur }

// Err is the first error met while merging runs.
func (it *SortIterator) Err() error { return it.err }

func (it *SortIterator) pushRun(r *runReader) error {
	it.heads.s = it.s
	if err := r.advance(it.s); err != nil {
		return err
	}
	if r.head != nil {
		heap.Push(&it.heads, r)
	}
	return nil
}

// runReader reads one sorted run, from a file or from memory.
type runReader struct {
	r    *bufio.Reader
	mem  []*sortEntry
	head *sortEntry
}

func (r *runReader) advance(s *Sorter) error {
	if r.r == nil {
		if len(r.mem) == 0 {
			r.head = nil
			return nil
		}
		r.head, r.mem = r.mem[0], r.mem[1:]
		return nil
	}
	var hdr [12]byte
	if _, err := io.ReadFull(r.r, hdr[:]); err != nil {
		if err == io.EOF {
			r.head = nil
			return nil
		}
		return fmt.Errorf("query: sort run: %w", err)
	}
	n := int(binary.LittleEndian.Uint32(hdr[8:]))
	if n < 5 {
		return fmt.Errorf("query: sort run: bad document length %d", n)
	}
	doc := make([]byte, n)
	copy(doc, hdr[8:])
	if _, err := io.ReadFull(r.r, doc[4:]); err != nil {
		return fmt.Errorf("query: sort run: %w", err)
	}
	r.head = &sortEntry{doc: doc, key: s.sort.Key(doc), seq: binary.LittleEndian.Uint64(hdr[:8])}
	return nil
}

// runHeap is a min-heap of runs by their head entries.
type runHeap struct {
	s    *Sorter
	runs []*runReader
}

func (h *runHeap) Len() int           { return len(h.runs) }
func (h *runHeap) Less(i, j int) bool { return h.s.less(h.runs[i].head, h.runs[j].head) }
func (h *runHeap) Swap(i, j int)      { h.runs[i], h.runs[j] = h.runs[j], h.runs[i] }
func (h *runHeap) Push(x any)         { h.runs = append(h.runs, x.(*runReader)) }
func (h *runHeap) Pop() any {
	r := h.runs[len(h.runs)-1]
	h.runs = h.runs[:len(h.runs)-1]
	return r
}
