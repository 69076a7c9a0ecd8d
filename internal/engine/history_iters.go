package engine

import (
	"errors"
	"sync"
	"time"

	"github.com/cairndb/cairn/internal/hlc"
	"github.com/cairndb/cairn/internal/storage"
)

// asOfIters keeps open store iterators for as-of point reads (GetAt):
// opening and closing a Pebble iterator costs more than the one seek an
// as-of read of a document needs. An iterator sees the store as it was when
// it opened; a read at cluster time T may use one opened after the last
// committed time had reached T (storage.DB.LastCommitted: a read that
// starts then sees every change stamped at or below it). What such a view
// answers at T never changes later: a version valid at T stays valid at T,
// and retention removes only versions before the horizon, which GetAt
// checks.
//
// Invariant "Pooled views are short-lived": an iterator pins the memtables
// and tables it reads, so the pool keeps one at most asOfIterAge after it
// opened (a timer closes idle ones) and at most asOfIterMax of them, and
// closes all before the engine closes or its store is replaced
// (RestoreReplicated).
type asOfIters struct {
	mu     sync.Mutex
	free   []pooledIter
	timer  *time.Timer
	gen    uint64 // raised by drop: iterators opened before go back closed
	closed bool
}

type pooledIter struct {
	it     *storage.Iter
	seen   hlc.Timestamp // the last committed time before it opened
	opened time.Time
	gen    uint64
}

const (
	asOfIterAge = 200 * time.Millisecond
	asOfIterMax = 8
)

// get returns an iterator of db within [lo, hi) that sees every change
// stamped at or before at; put returns it.
func (p *asOfIters) get(db *storage.DB, at hlc.Timestamp, lo, hi []byte) (pooledIter, error) {
	now := time.Now()
	p.mu.Lock()
	for i := len(p.free) - 1; i >= 0; i-- {
		x := p.free[i]
		if x.seen >= at && now.Sub(x.opened) < asOfIterAge {
			p.free = append(p.free[:i], p.free[i+1:]...)
			p.mu.Unlock()
			if err := x.it.SetBounds(lo, hi); err != nil {
				return pooledIter{}, errors.Join(err, x.it.Close())
			}
			return x, nil
		}
	}
	x := pooledIter{gen: p.gen, opened: now}
	p.mu.Unlock()
	x.seen = db.LastCommitted()
	var err error
	x.it, err = db.NewIter(lo, hi)
	return x, err
}

func (p *asOfIters) put(x pooledIter) {
	p.mu.Lock()
	if p.closed || x.gen != p.gen || len(p.free) >= asOfIterMax || time.Since(x.opened) >= asOfIterAge {
		p.mu.Unlock()
		_ = x.it.Close()
		return
	}
	p.free = append(p.free, x)
	if p.timer == nil {
		p.timer = time.AfterFunc(asOfIterAge, p.reap)
	}
	p.mu.Unlock()
}

// reap closes the iterators past their age, and rearms while any remain.
func (p *asOfIters) reap() {
	now := time.Now()
	var old []*storage.Iter
	p.mu.Lock()
	keep := p.free[:0]
	oldest := now
	for _, x := range p.free {
		if now.Sub(x.opened) >= asOfIterAge {
			old = append(old, x.it)
		} else {
			keep = append(keep, x)
			if x.opened.Before(oldest) {
				oldest = x.opened
			}
		}
	}
	clear(p.free[len(keep):])
	p.free = keep
	p.timer = nil
	if len(p.free) > 0 && !p.closed {
		p.timer = time.AfterFunc(asOfIterAge-now.Sub(oldest), p.reap)
	}
	p.mu.Unlock()
	for _, it := range old {
		_ = it.Close()
	}
}

// drop closes every pooled iterator, and those in use when they come
// back; with final set the pool keeps none from then on (the engine is
// closing).
func (p *asOfIters) drop(final bool) {
	p.mu.Lock()
	free := p.free
	p.free = nil
	p.closed = p.closed || final
	p.gen++
	if p.timer != nil {
		p.timer.Stop()
		p.timer = nil
	}
	p.mu.Unlock()
	for _, x := range free {
		_ = x.it.Close()
	}
}
