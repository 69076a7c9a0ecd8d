package planner

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/hlc"
	"github.com/cairndb/cairn/internal/opctx"
)

// state is what one call of a stage's work produced, in MongoDB's words.
type state uint8

const (
	// advanced: the stage returned a result.
	advanced state = iota
	// needTime: the stage did some work but has no result yet.
	needTime
	// isEOF: the stage has nothing more to return.
	isEOF
)

// member is one result flowing between stages (MongoDB's working set
// member): the record id, the index key it came through, the document once
// fetched. Fields alias stage buffers until the producing stage's next work.
type member struct {
	rid []byte            // keystring(_id): identity, for dedup and fetch
	key []byte            // the index key (without _id) of an IXSCAN result
	ix  *ixScan           // the scan key came from
	tb  []byte            // key's type bits, when returnKey asks (ixScan.keepTB)
	doc bsoncore.Document // the document, once fetched
	// score is the text score of a text plan's record (text.go).
	score float64
}

// Stats are the counters every stage keeps, as MongoDB's CommonStats.
type Stats struct {
	Works, Advanced, NeedTime int64
	EOF                       bool
	nanos                     int64
}

// stageStats holds a stage's common counters; every stage embeds it.
type stageStats struct{ stats Stats }

func (s *stageStats) common() *Stats { return &s.stats }

// stage is one node of a plan tree. work does one unit of work; results
// are returned through the member. Stages are single-use.
type stage interface {
	work(x *execCtx) (*member, state, error)
	common() *Stats
	children() []stage
	// describe appends the stage's name and parameters, then, when
	// withStats, its specific counters.
	describe(d *doc, withStats bool)
	close() error
}

// execCtx is what stages share while running: the snapshot and the
// operation's context. A point read (Open's IDHACK plan) has no snapshot:
// r is nil and its one read goes to eng, for collection ns; nor has it a
// context (ctx nil): one read has nothing to interrupt.
type execCtx struct {
	r      *engine.Reader
	eng    *engine.Engine
	ns     engine.Namespace
	at     hlc.Timestamp // a point read's cluster time (0: the latest)
	txn    *engine.Txn   // a point read's transaction (nil: none)
	ctx    context.Context
	poll   opctx.Poll
	timing bool
}

// step runs one work of s, keeping its common counters.
func step(x *execCtx, s stage) (*member, state, error) {
	st := s.common()
	if st.EOF {
		return nil, isEOF, nil
	}
	var start time.Time
	if x.timing {
		start = time.Now()
	}
	if x.ctx != nil {
		if err := x.poll.Err(x.ctx); err != nil {
			return nil, isEOF, err
		}
	}
	m, res, err := s.work(x)
	st.Works++
	switch res {
	case advanced:
		st.Advanced++
	case needTime:
		st.NeedTime++
	case isEOF:
		st.EOF = true
	}
	if x.timing {
		st.nanos += int64(time.Since(start))
	}
	return m, res, err
}

// closeAll closes a tree.
func closeAll(s stage) error {
	var first error
	for _, c := range s.children() {
		if err := closeAll(c); err != nil && first == nil {
			first = err
		}
	}
	if err := s.close(); err != nil && first == nil {
		first = err
	}
	return first
}

// walk visits a tree, parents first.
func walk(s stage, f func(stage)) {
	f(s)
	for _, c := range s.children() {
		walk(c, f)
	}
}
