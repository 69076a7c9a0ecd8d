package commands

import (
	"strings"
	"sync"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/advise"
)

// QueryShapes is the server's bounded, sampled record of the query shapes
// it ran (issue 26: what the advisor reads without the profiler): one
// command in shapeSampleEvery is recorded by namespace and shape (the
// fields its filter tests by equality and by range, its sort, the array
// positions an update names) with its runs, keys and documents examined,
// documents returned and last plan summary. At most maxShapes shapes are
// kept; a new one past that replaces the one that ran least.
//
// Invariant "Off the hot path": a command not sampled costs one increment
// of its connection's count (sampleShape; a count shared by every
// connection would be an atomic on a line they all write); only a sampled
// one parses its shape and takes the lock. A connection's count starts at
// its id, so connections that send fewer commands than shapeSampleEvery
// are still sampled, one command in shapeSampleEvery over all of them.
type QueryShapes struct {
	mu     sync.Mutex
	shapes map[string]*recordedShape
}

type recordedShape struct {
	ns    string
	shape advise.Shape
}

const (
	shapeSampleEvery = 10
	maxShapes        = 1000
)

func newQueryShapes() *QueryShapes { return &QueryShapes{shapes: map[string]*recordedShape{}} }

// sampleShape reports whether the command s runs now is one to record.
func (s *Session) sampleShape() bool {
	s.shapeTick++
	return (uint64(s.ConnID)+s.shapeTick)%shapeSampleEvery == 0
}

// record adds one run of the command body in ns with what it examined.
func (q *QueryShapes) record(ns string, body bsoncore.Document, st *opStats) {
	sh, ok := shapeOfCommand(body)
	if !ok || !st.reads && st.writes == 0 {
		return
	}
	sh.Runs = shapeSampleEvery // each sampled run stands for the ones between samples
	sh.Examined = (st.keysExamined + st.docsExamined) * shapeSampleEvery
	sh.Returned = (st.nreturned + st.nMatched + st.ndeleted) * shapeSampleEvery
	sh.Plan, _ = st.planSummary()
	key := ns + "|" + shapeKey(sh)
	q.mu.Lock()
	defer q.mu.Unlock()
	if have := q.shapes[key]; have != nil {
		have.shape.Runs += sh.Runs
		have.shape.Examined += sh.Examined
		have.shape.Returned += sh.Returned
		if sh.Plan != "" {
			have.shape.Plan = sh.Plan
		}
		return
	}
	if len(q.shapes) >= maxShapes {
		var least string
		for k, r := range q.shapes {
			if least == "" || r.shape.Runs < q.shapes[least].shape.Runs {
				least = k
			}
		}
		delete(q.shapes, least)
	}
	q.shapes[key] = &recordedShape{ns: ns, shape: sh}
}

// For returns the recorded shapes of ns.
func (q *QueryShapes) For(ns string) []advise.Shape {
	q.mu.Lock()
	defer q.mu.Unlock()
	var out []advise.Shape
	for _, r := range q.shapes {
		if r.ns == ns {
			out = append(out, r.shape)
		}
	}
	return out
}

// shapeKey identifies a shape within a namespace.
func shapeKey(sh advise.Shape) string {
	return sh.Command + "|" + strings.Join(sh.Equality, ",") + "|" + strings.Join(sh.Range, ",") + "|" + strings.Join(sh.Sort, ",") + "|" + strings.Join(sh.ArrayPositions, ",")
}
