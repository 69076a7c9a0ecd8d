package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// phaseResult is what one load or run phase measured.
type phaseResult struct {
	ops     int64
	elapsed time.Duration
	hists   [numOps]*histogram
}

func newPhaseResult() phaseResult {
	var r phaseResult
	for i := range r.hists {
		r.hists[i] = newHistogram()
	}
	return r
}

// load inserts key numbers [0, n) in batches of batch documents from
// threads goroutines; each batch's latency is recorded as an insert.
func load(ctx context.Context, d db, recs *records, n int64, batch, threads int, done *atomic.Int64) (phaseResult, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	res := newPhaseResult()
	var next atomic.Int64
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := time.Now()
	for range threads {
		wg.Go(func() {
			h := newHistogram()
			var buf []byte
			docs := make([]bsoncore.Document, 0, batch)
			for ctx.Err() == nil {
				first := next.Add(int64(batch)) - int64(batch)
				if first >= n {
					break
				}
				last := min(first+int64(batch), n)
				buf, docs = buf[:0], docs[:0]
				offsets := make([]int, 0, batch+1)
				for k := first; k < last; k++ {
					offsets = append(offsets, len(buf))
					buf = recs.appendRecord(buf, k, -1, nil)
				}
				offsets = append(offsets, len(buf))
				for i := range offsets[:len(offsets)-1] {
					docs = append(docs, buf[offsets[i]:offsets[i+1]])
				}
				t0 := time.Now()
				if err := d.insert(ctx, docs); err != nil {
					cancel(fmt.Errorf("load: insert of key numbers %d..%d: %w", first, last-1, err))
					break
				}
				h.record(time.Since(t0))
				done.Add(last - first)
			}
			mu.Lock()
			res.hists[opInsert].merge(h)
			mu.Unlock()
		})
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	res.ops = n
	return res, phaseErr(ctx)
}

// phaseErr is the error that stopped a phase, nil when none did: a failed
// operation's, or the caller's cancellation. (Called before the phase's
// own deferred cancel.)
func phaseErr(ctx context.Context) error { return context.Cause(ctx) }

// runSpec is one run of a workload against one target.
type runSpec struct {
	w       Workload
	dist    string
	style   UpdateStyle
	records int64 // records loaded before any run: uniform's range
	ops     int64
	threads int
	seed    int64
	recs    *records
	keys    *keySequence
	maxTime time.Duration // stop after this long (0: run every operation)
}

// run executes spec.ops operations from spec.threads goroutines (fewer if
// spec.maxTime passes first) and stops at the first failed operation,
// whose error it returns.
func (spec runSpec) run(ctx context.Context, d db, done *atomic.Int64) (phaseResult, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	res := newPhaseResult()
	expectedInserts := int64(float64(spec.ops) * spec.w.Insert * 2)
	workers := make([]*worker, spec.threads)
	for i := range workers {
		ch, err := newKeyChooser(spec.dist, spec.records, expectedInserts, spec.keys)
		if err != nil {
			return res, err
		}
		workers[i] = &worker{
			spec:    &spec,
			db:      d,
			rng:     rand.New(rand.NewPCG(uint64(spec.seed), uint64(i))),
			chooser: ch,
		}
		for op := range workers[i].hists {
			workers[i].hists[op] = newHistogram()
		}
	}
	var claimed atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for _, w := range workers {
		wg.Go(func() {
			for claimed.Add(1) <= spec.ops && ctx.Err() == nil {
				if spec.maxTime > 0 && time.Since(start) > spec.maxTime {
					return
				}
				if err := w.one(ctx); err != nil {
					cancel(err)
					return
				}
				done.Add(1)
			}
		})
	}
	wg.Wait()
	res.elapsed = time.Since(start)
	for _, w := range workers {
		for op, h := range w.hists {
			res.hists[op].merge(h)
			res.ops += int64(h.n)
		}
	}
	return res, phaseErr(ctx)
}

// worker is one YCSB client thread.
type worker struct {
	spec    *runSpec
	db      db
	rng     *rand.Rand
	chooser keyChooser
	hists   [numOps]*histogram
	value   []byte
	record  []byte
}

// one performs one operation and records its latency.
func (w *worker) one(ctx context.Context) error {
	s := w.spec
	op := s.w.choose(w.rng.Float64())
	var u update
	var n int64
	switch op {
	case opUpdate, opReadModifyWrite:
		n = w.chooser.next(w.rng)
		f := w.rng.IntN(s.recs.fieldCount)
		w.value = appendValue(w.value[:0], s.recs.fieldLength, w.rng.Uint64())
		u = update{key: key(n), field: s.recs.names[f], value: w.value, style: s.style}
		if op == opUpdate && s.style == UpdateReplace {
			w.record = s.recs.appendRecord(w.record[:0], n, f, w.value)
			u.record = w.record
		}
	case opInsert:
		n = s.keys.allocate()
		w.record = s.recs.appendRecord(w.record[:0], n, -1, nil)
	case opRead, opScan:
		n = w.chooser.next(w.rng)
	}
	var err error
	t0 := time.Now()
	switch op {
	case opRead:
		err = w.db.read(ctx, key(n))
	case opUpdate:
		err = w.db.update(ctx, &u)
	case opReadModifyWrite:
		err = w.db.readModifyWrite(ctx, &u)
	case opInsert:
		err = w.db.insert(ctx, []bsoncore.Document{w.record})
	case opScan:
		_, err = w.db.scan(ctx, key(n), 1+w.rng.IntN(s.w.MaxScan))
	}
	elapsed := time.Since(t0)
	if err != nil {
		return fmt.Errorf("%s: %w", op, err)
	}
	if op == opInsert {
		s.keys.acknowledge(n)
	}
	w.hists[op].record(elapsed)
	return nil
}
