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
	q.add(ns, ns+"|"+shapeKey(sh), sh, st)
}

// expressShapeKey is shapeKey of the shape shapeOfCommand gives every find
// the express path answers: {find, filter: {_id: v}} and nothing else it
// reads (expressID lets no sort through, and its v is never an operator
// document). TestExpressMatchesGeneral compares the shapes recorded.
var expressShapeKey = shapeKey(expressShape())

func expressShape() advise.Shape {
	return advise.Shape{Command: "find", Equality: []string{"_id"}}
}

// recordExpress is record of a find the express path answered, in the
// collection named by req's first field: its shape is known, so it is not
// parsed from the body, and the session keeps the namespace's key strings
// from one sample to the next (a connection reads one collection).
func (q *QueryShapes) recordExpress(s *Session, req *Request, st *opStats) {
	coll := req.First()
	if coll.Type != bsoncore.TypeString || len(coll.Data) < 5 {
		q.record(reqNS(req), req.Body, st)
		return
	}
	name := coll.Data[4 : len(coll.Data)-1]
	m := &s.shapeMemo
	if m.ns == "" || m.db != req.DB || m.coll != string(name) {
		m.db, m.coll = req.DB, string(name)
		m.ns = req.DB + "." + m.coll
		m.key = m.ns + "|" + expressShapeKey
	}
	q.add(m.ns, m.key, advise.Shape{}, st)
}

// shapeMemo is a session's last express namespace and its shape's key.
type shapeMemo struct{ db, coll, ns, key string }

// add counts one sampled run of shape sh (the zero Shape: the express
// path's, built only if it is new) under key in ns.
func (q *QueryShapes) add(ns, key string, sh advise.Shape, st *opStats) {
	runs := int64(shapeSampleEvery) // each sampled run stands for the ones between samples
	examined := (st.keysExamined + st.docsExamined) * shapeSampleEvery
	returned := (st.nreturned + st.nMatched + st.ndeleted) * shapeSampleEvery
	plan, _ := st.planSummary()
	q.mu.Lock()
	defer q.mu.Unlock()
	if have := q.shapes[key]; have != nil {
		have.shape.Runs += runs
		have.shape.Examined += examined
		have.shape.Returned += returned
		if plan != "" {
			have.shape.Plan = plan
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
	if sh.Command == "" {
		sh = expressShape()
	}
	sh.Runs, sh.Examined, sh.Returned, sh.Plan = runs, examined, returned, plan
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
