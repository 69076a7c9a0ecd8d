package engine

import "github.com/cairndb/cairn/internal/storage"

// tick returns the cluster time of one versioned change, as a BSON
// timestamp (seconds<<32 | increment). Until storage's hybrid logical
// clock lands it is the engine clock's seconds with an increment, strictly
// rising within the process; it runs on the pipeline goroutine only
// ("Serial apply").
func (e *Engine) tick(_ *storage.Txn) uint64 {
	s := uint64(e.now().Unix()) << 32
	if s > e.lastTick {
		e.lastTick = s | 1
	} else {
		e.lastTick++
	}
	return e.lastTick
}
