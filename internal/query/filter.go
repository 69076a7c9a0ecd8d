package query

import (
	"sync"
	"sync/atomic"

	"github.com/cairndb/cairn/internal/bsonx"
	"github.com/cairndb/cairn/internal/expr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Filter is a parsed query filter: parse once with Parse, match many
// documents. A Filter is immutable and safe for concurrent use.
//
// Collation reaches every comparison through the match state (state.coll),
// set from Options.Collation for each document.
type Filter struct {
	root  matcher
	id    bsoncore.Value // the _id of a point lookup; Type 0 if none
	raw   bsoncore.Document
	env   *exprEnv                    // the options it was parsed with, for Select
	texts int                         // how many $text it has (text.go)
	tree  atomic.Pointer[Conjunction] // see Tree; built once (twice under a race, alike)
}

// Result is the outcome of matching one document.
type Result struct {
	// Matched is whether the document satisfies the filter.
	Matched bool
	// ArrayPos is the index, in the first array traversed implicitly, of
	// the element that made the filter match (MongoDB's "elemMatchKey"),
	// or -1. The positional projection "a.$" and the positional update
	// operator use it.
	ArrayPos int
}

// Match reports whether doc satisfies the filter. A run-time error (only
// $expr can raise one, e.g. {$divide: [1, 0]}) counts as no match; use Exec
// to see it.
func (f *Filter) Match(doc bsoncore.Document) bool {
	r, err := f.Exec(doc)
	return err == nil && r.Matched
}

// MatchDetails reports whether doc satisfies the filter and the array
// position bound by the match (-1 if none); see Result.ArrayPos.
func (f *Filter) MatchDetails(doc bsoncore.Document) (matched bool, arrayPos int) {
	r, err := f.Exec(doc)
	if err != nil {
		return false, -1
	}
	return r.Matched, r.ArrayPos
}

// Exec matches doc and reports run-time errors with MongoDB's codes, which
// a find must return to the client.
func (f *Filter) Exec(doc bsoncore.Document) (Result, error) {
	st := statePool.Get().(*state)
	st.pos, st.err, st.root, st.coll = -1, nil, doc, f.env.coll
	ok := f.root.match(doc, st)
	r, err := Result{ArrayPos: -1}, st.err
	if err == nil && ok {
		r = Result{Matched: true, ArrayPos: st.pos}
	}
	st.root, st.err = nil, nil
	statePool.Put(st)
	return r, err
}

// statePool recycles match states: a state escapes to the heap (matchers
// are interfaces), and allocating one per document would dominate the cost
// of a simple filter.
var statePool = sync.Pool{New: func() any { return new(state) }}

// IDEquality returns v and true when the filter is exactly {_id: v}, v being
// a plain value (not a regex, an array, undefined or an operator document):
// such a filter matches at most the one document whose _id equals v, so it
// can be answered by a point lookup.
func (f *Filter) IDEquality() (bsoncore.Value, bool) {
	return f.id, f.id.Type != 0
}

// state is the per-document scratch space of one match.
type state struct {
	pos  int   // array position of the latest match through an array
	err  error // first run-time error
	root bsoncore.Document
	coll bsonx.Collator // the filter's collation (nil: simple)
	ctx  *expr.Context  // made on first use by $expr
	env  *exprEnv       // the variables bound in ctx
}

func (st *state) fail(err error) {
	if st.err == nil {
		st.err = err
	}
}

// matcher is a node of the filter tree that tests a whole document (or the
// document an $elemMatch is looking at).
type matcher interface {
	match(doc []byte, st *state) bool
}

// pred is a predicate on one value: MongoDB's matchesSingleElement. A path
// node applies it to every value its path reaches; $elemMatch applies it to
// array elements. v is missing (Type 0) where the path reached nothing.
type pred interface {
	matchValue(v bsoncore.Value, st *state) bool
}

// wholeArrayPred is implemented by predicates that look at a leaf array as
// a whole ($size, $elemMatch) instead of at its elements.
type wholeArrayPred interface {
	pred
	wholeArray()
}

// pathNode applies a predicate along a path.
type pathNode struct {
	path path
	pred pred
}

func (n *pathNode) match(doc []byte, st *state) bool {
	_, whole := n.pred.(wholeArrayPred)
	w := walker{pred: n.pred, expand: !whole, st: st}
	return w.fromDoc(doc, n.path.parts, -1)
}

type andMatcher []matcher

func (a andMatcher) match(doc []byte, st *state) bool {
	for _, m := range a {
		if !m.match(doc, st) {
			return false
		}
	}
	return true
}

type orMatcher []matcher

// match tries the branches in order; a branch that fails leaves no array
// position behind.
func (o orMatcher) match(doc []byte, st *state) bool {
	pos := st.pos
	for _, m := range o {
		if m.match(doc, st) {
			return true
		}
		st.pos = pos
	}
	return false
}

// notMatcher negates a matcher; positions found inside a negation do not
// count (MongoDB matches the children of $not and $nor without details).
type notMatcher struct{ m matcher }

func (n notMatcher) match(doc []byte, st *state) bool {
	pos := st.pos
	r := n.m.match(doc, st)
	st.pos = pos
	return !r
}

type constMatcher bool

func (c constMatcher) match([]byte, *state) bool { return bool(c) }

// Predicate combinators, for operator documents used as single-value
// predicates ($elemMatch's value form, $not inside it).

type andPred []pred

func (a andPred) matchValue(v bsoncore.Value, st *state) bool {
	for _, p := range a {
		if !p.matchValue(v, st) {
			return false
		}
	}
	return true
}

type notPred struct{ p pred }

func (n notPred) matchValue(v bsoncore.Value, st *state) bool {
	pos := st.pos
	r := n.p.matchValue(v, st)
	st.pos = pos
	return !r
}

type constPred bool

func (c constPred) matchValue(bsoncore.Value, *state) bool { return bool(c) }

// lift turns a predicate parsed from an operator document into a matcher
// over path p. Negations ($ne, $nin, $not, $exists: false) negate the whole
// path match — "no value reached satisfies it" — not each value, so they
// become notMatchers around path nodes.
func lift(p path, pr pred) matcher {
	switch x := pr.(type) {
	case notPred:
		return notMatcher{lift(p, x.p)}
	case andPred:
		out := make(andMatcher, len(x))
		for i, c := range x {
			out[i] = lift(p, c)
		}
		return out
	case constPred:
		return constMatcher(x)
	}
	return &pathNode{path: p, pred: pr}
}
