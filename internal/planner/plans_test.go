package planner_test

// TestPlans runs the data-driven planner transcripts in testdata/plans:
// documents and indexes, then queries planned and run by the planner over
// an engine in a temporary directory, each with the plan explain would show
// and its counters. A new planner case is one more stanza; go test
// -run TestPlans -rewrite regenerates the expected plans (review the diff).
//
// # File format
//
// The stanzas of internal/testcorpus (blank-line separated "key: value"
// lines, indented continuation lines, "#" comments). A stanza without
// "case" changes the collection the cases after it query, in order:
//
//	collection: <name>   start a new, empty collection (any name; it only
//	                     labels the step); the first stanza of a file
//	                     starts one implicitly
//	docs:                insert documents, one extended JSON document a line
//	generate: <n> <expr> insert n documents, each the aggregation
//	                     expression <expr> with $$i bound to 0, 1, … n-1
//	                     ({"_id": "$$i", "a": {"$mod": ["$$i", 10]}})
//	indexes:             create indexes, one createIndexes spec a line
//	drop: <name>         drop an index
//
// A case stanza is one query:
//
//	case        its name (first)
//	filter      the filter (default {})
//	sort, projection, skip, limit
//	hint        an index name (a JSON string) or key pattern, or {"$natural": 1}
//	min, max    the hinted index's key bounds
//	count       true: the caller only counts (the count command: COUNT_SCAN)
//	distinct    a path: the caller keeps the first result of each of its
//	            values ($sort then $group of $first: DISTINCT_SCAN)
//	cache       true: plan with the collection's plan cache (one per
//	            collection), and say whether the plan came from it
//	returnKey, showRecordId
//	            find's options (true): results are index keys (not
//	            compared with a collection scan's), or carry $recordId
//	owned       a filter: the shard owns the documents it matches, and
//	            the plan keeps only those (Query.Owned, SHARDING_FILTER)
//	xfail       a known gap: why the case is expected to fail
//	plan        expected: the plan as it ran (below)
//	error       expected: the MongoDB error code planning fails with
//
// The plan is a summary line (results, keys and documents examined, the
// number of candidates when a trial chose among several, "from cache"),
// then the winning plan's stages, one line each, inputs indented under
// their stage: the stage's explain fields, then after "|" its
// executionStats counters. Fields that never vary (indexVersion,
// needYield, saveState, restoreState) or depend on the clock
// (executionTimeMillisEstimate) are left out, as is "advanced" (always
// nReturned), and a boolean is shown by its name when true. The plans the
// trial rejected follow, without counters, each after "rejected:".
//
// Beside the expectation, every case that has results checks them against
// a collection scan ({"$natural": 1}) of the same query: the same
// documents (the same number when skip or limit picks among them without
// a sort), each sorting as the scan's at its position when there is one.

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"github.com/cairndb/cairn/internal/collation"
	"log/slog"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/expr"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/planner"
	"github.com/cairndb/cairn/internal/query"
	"github.com/cairndb/cairn/internal/testcorpus"
)

var rewrite = flag.Bool("rewrite", false, "rewrite the expected plans of testdata/plans/*.txt from the planner's outcomes (review the diff)")

func TestPlans(t *testing.T) {
	cases, err := plans.Load("testdata/plans")
	if err != nil {
		t.Fatal(err)
	}
	eng, err := engine.Open(t.TempDir(), engine.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	h := &planHarness{eng: eng}
	plans.Run(t, cases, h.run, *rewrite)
}

// setupStep is one change of a file's collection, in file order.
type setupStep struct {
	line  int // 1-based, for messages
	reset bool
	docs  []bsoncore.Document
	specs []bsoncore.Document
	drop  string
}

// planCase is one query of a transcript.
type planCase struct {
	testcorpus.Header
	testcorpus.Find

	// steps are the file's steps before the case; steps[from:] build the
	// collection it queries.
	steps    []setupStep
	from     int
	hint     bsoncore.Value
	min, max bsoncore.Document
	count    bool
	distinct string
	cache    bool
	// returnKey, showRecordID: find's returnKey and showRecordId.
	returnKey, showRecordID bool
	// owned: the documents this filter matches are the shard's (Query.Owned).
	owned bsoncore.Document

	wantPlan string // "" unless "plan" is given
}

// planOutcome is what planning and running a case produced: the rendered
// plan or an error code.
type planOutcome struct {
	plan string
	code int32
}

var plans = testcorpus.Corpus[planCase, planOutcome]{
	Expectations: []string{"plan"},
	Template:     func() planCase { return planCase{Find: testcorpus.Find{Filter: testcorpus.EmptyDoc()}} },
	Default: func(tmpl *planCase, e testcorpus.Entry) error {
		st, err := parseStep(e)
		if st.reset {
			tmpl.from = len(tmpl.steps)
		}
		// Cases keep the steps before them: append never changes what an
		// earlier copy of the slice holds.
		tmpl.steps = append(tmpl.steps, st)
		return err
	},
	Set:    setPlanKey,
	Header: func(c *planCase) *testcorpus.Header { return &c.Header },
	Check: func(c *planCase, o planOutcome) error {
		if done, err := c.CheckCode(o.code); done {
			return err
		}
		if o.plan != c.wantPlan {
			return fmt.Errorf("plan differs:\nwant\n%s\ngot\n%s", indent(c.wantPlan, "  "), indent(o.plan, "  "))
		}
		return nil
	},
	Format: func(c *planCase, o planOutcome) []string {
		if o.code != 0 {
			return []string{fmt.Sprintf("error: %d", o.code)}
		}
		return append([]string{"plan:"}, strings.Split(indent(o.plan, "  "), "\n")...)
	},
}

func indent(s, by string) string { return by + strings.ReplaceAll(s, "\n", "\n"+by) }

func parseStep(e testcorpus.Entry) (setupStep, error) {
	st := setupStep{line: e.Line + 1}
	var err error
	switch e.Key {
	case "collection":
		st.reset = true
	case "docs":
		st.docs, err = testcorpus.ParseDocs(e.Value)
	case "generate":
		st.docs, err = generate(e.Value)
	case "indexes":
		st.specs, err = testcorpus.ParseDocs(e.Value)
	case "drop":
		st.drop = e.Value
	default:
		err = fmt.Errorf("unknown key (a stanza without \"case\" has collection, docs, generate, indexes, drop)")
	}
	return st, err
}

// generate evaluates "<n> <expression>" for $$i from 0 to n-1.
func generate(s string) ([]bsoncore.Document, error) {
	ns, src, ok := strings.Cut(strings.TrimSpace(s), " ")
	n, err := strconv.Atoi(ns)
	if !ok || err != nil {
		return nil, fmt.Errorf("want \"<count> <expression>\"")
	}
	v, err := testcorpus.ParseValue(src)
	if err != nil {
		return nil, err
	}
	e, err := expr.ParseIn(v, expr.NewScope(nil, "i"))
	if err != nil {
		return nil, err
	}
	ctx := expr.NewContext(testcorpus.EmptyDoc())
	out := make([]bsoncore.Document, n)
	for i := range n {
		ctx.SetVar("i", expr.Int32(int32(i)))
		d, err := e.Eval(ctx)
		if err != nil {
			return nil, fmt.Errorf("$$i = %d: %v", i, err)
		}
		doc, ok := d.DocumentOK()
		if !ok {
			return nil, fmt.Errorf("$$i = %d: %s is not a document", i, d.Type)
		}
		out[i] = doc
	}
	return out, nil
}

func setPlanKey(c *planCase, e testcorpus.Entry) error {
	var err error
	switch e.Key {
	case "hint":
		c.hint, err = testcorpus.ParseValue(e.Value)
	case "min":
		c.min, err = testcorpus.ParseDoc(e.Value)
	case "max":
		c.max, err = testcorpus.ParseDoc(e.Value)
	case "count":
		c.count, err = strconv.ParseBool(e.Value)
	case "distinct":
		c.distinct = e.Value
	case "cache":
		c.cache, err = strconv.ParseBool(e.Value)
	case "returnKey":
		c.returnKey, err = strconv.ParseBool(e.Value)
	case "showRecordId":
		c.showRecordID, err = strconv.ParseBool(e.Value)
	case "owned":
		c.owned, err = testcorpus.ParseDoc(e.Value)
	case "plan":
		c.wantPlan = strings.TrimPrefix(e.Value, "\n")
	default:
		var ok bool
		if ok, err = c.Find.Set(e); !ok {
			err = fmt.Errorf("unknown key")
		}
	}
	return err
}

// planHarness holds the engine and which collection the last case built,
// so that cases after the same steps share it.
type planHarness struct {
	eng     *engine.Engine
	n       int // collections made
	ns      engine.Namespace
	cache   *planner.Cache
	file    string
	from    int
	applied int
}

func (h *planHarness) run(c *planCase) (planOutcome, error) {
	if err := h.setUp(c); err != nil {
		return planOutcome{}, err
	}
	q, err := c.query(c.hint, c.min, c.max)
	if err != nil {
		return planOutcome{code: int32(mongoerr.CodeOf(err))}, nil
	}
	opts := planner.Options{NS: h.ns.String(), Explain: true}
	if c.cache {
		opts.Cache = h.cache
	}
	ex, docs, err := h.execute(q, opts)
	if err != nil {
		return planOutcome{code: int32(mongoerr.CodeOf(err))}, nil
	}
	defer ex.Close()
	if err := h.compareWithScan(c, q, docs); err != nil {
		return planOutcome{}, err
	}
	return planOutcome{plan: renderExec(ex)}, nil
}

// setUp makes h.ns the collection that c's steps build, reusing the
// previous case's when c only adds steps to it.
func (h *planHarness) setUp(c *planCase) error {
	if h.file != c.File || h.from != c.from || h.applied > len(c.steps) || h.n == 0 {
		h.n++
		h.ns = engine.Namespace{DB: "plans", Coll: fmt.Sprintf("c%d", h.n)}
		h.cache = planner.NewCache()
		h.file, h.from, h.applied = c.File, c.from, c.from
	}
	for ; h.applied < len(c.steps); h.applied++ {
		st := c.steps[h.applied]
		fail := func(err error) error { return fmt.Errorf("%s:%d: %v", filepath.Base(c.File), st.line, err) }
		if len(st.docs) > 0 {
			res, err := h.eng.Insert(h.ns, st.docs, true)
			if err == nil && len(res.WriteErrors) > 0 {
				err = res.WriteErrors[0].Err
			}
			if err != nil {
				return fail(err)
			}
		}
		if len(st.specs) > 0 {
			if _, err := h.eng.CreateIndexes(context.Background(), h.ns, st.specs); err != nil {
				return fail(err)
			}
		}
		if st.drop != "" {
			if _, err := h.eng.DropIndexes(h.ns, []string{st.drop}); err != nil {
				return fail(err)
			}
		}
	}
	return nil
}

// query is the case as the planner reads it, with the given hint and key
// bounds.
func (c *planCase) query(hint bsoncore.Value, min, max bsoncore.Document) (*planner.Query, error) {
	var opts query.Options
	var coll *collation.Collator
	if c.Collation != nil {
		var err error
		if coll, err = collation.Parse(c.Collation); err != nil {
			return nil, err
		}
		if coll != nil {
			opts.Collation = coll
		}
	}
	f, err := query.ParseWith(c.Filter, opts)
	if err != nil {
		return nil, err
	}
	q := &planner.Query{Filter: f, RawFilter: c.Filter, Skip: c.Skip, Limit: c.Limit, Hint: hint, Min: min, Max: max,
		Count: c.count, DistinctPath: c.distinct, SortMemory: query.DefaultSortMemory,
		ReturnKey: c.returnKey, ShowRecordID: c.showRecordID, Collation: coll}
	if c.owned != nil {
		of, err := query.Parse(c.owned)
		if err != nil {
			return nil, err
		}
		q.Owned = func(d bsoncore.Document) bool {
			r, err := of.Exec(d)
			return err == nil && r.Matched
		}
	}
	if c.Sort != nil {
		if q.Sort, err = query.ParseSort(c.Sort); err != nil {
			return nil, err
		}
		if coll != nil {
			q.Sort = q.Sort.WithCollation(coll)
		}
		q.RawSort = c.Sort
	}
	if c.Projection != nil {
		if q.Proj, err = query.ParseProjection(c.Projection, f); err != nil {
			return nil, err
		}
		q.RawProj = c.Projection
		elems, _ := c.Projection.Elements()
		for _, el := range elems {
			q.Positional = q.Positional || strings.HasSuffix(el.Key(), ".$")
		}
	}
	return q, nil
}

// execute plans q and runs it to its end, returning the plan (to close)
// and a copy of its results.
func (h *planHarness) execute(q *planner.Query, opts planner.Options) (*planner.Exec, []bsoncore.Document, error) {
	r, err := h.eng.NewReader(h.ns)
	if err != nil {
		return nil, nil, err
	}
	ex, err := planner.Prepare(context.Background(), r, q, opts)
	if err != nil {
		return nil, nil, err
	}
	var docs []bsoncore.Document
	for {
		d, err := ex.Next()
		if err != nil {
			_ = ex.Close()
			return nil, nil, err
		}
		if d == nil {
			return ex, docs, nil
		}
		docs = append(docs, append(bsoncore.Document(nil), d...))
	}
}

// compareWithScan checks a plan's results against a collection scan's
// (min and max, which only an index has, are not compared). A distinct
// scan returns the first document of each value of its path where any
// other plan returns them all: its results are compared with the first of
// each run of equal values in the scan's.
func (h *planHarness) compareWithScan(c *planCase, q *planner.Query, got []bsoncore.Document) error {
	if c.min != nil || c.max != nil || c.returnKey {
		return nil // (returnKey: a collection scan's keys are {})
	}
	if q.Filter.HasText() {
		return h.compareTextWithScan(c, q, got)
	}
	natural, _ := testcorpus.ParseValue(`{"$natural": 1}`)
	sq, err := c.query(natural, nil, nil)
	if err != nil {
		return err
	}
	scan, want, err := h.execute(sq, planner.Options{NS: h.ns.String()})
	if err != nil {
		return fmt.Errorf("the collection scan fails: %v", err)
	}
	_ = scan.Close()
	if c.distinct != "" && len(got) < len(want) {
		want = firstOfEach(want, c.distinct)
	}
	if len(got) != len(want) {
		return fmt.Errorf("%d results, the collection scan has %d", len(got), len(want))
	}
	if q.Sort != nil {
		// The scan sorts with a SORT stage: each result must sort as its.
		for i := range got {
			if q.Sort.Compare(got[i], want[i]) != 0 {
				return fmt.Errorf("result %d is %s, the collection scan's sorts otherwise: %s", i, testcorpus.RelaxedDoc(got[i]), testcorpus.RelaxedDoc(want[i]))
			}
		}
	}
	if c.Skip != 0 || c.Limit != 0 || c.count {
		return nil // which documents is up to the order; their number is not
	}
	canon := func(ds []bsoncore.Document) []string {
		out := make([]string, len(ds))
		for i, d := range ds {
			out[i] = testcorpus.CanonicalDoc(d)
		}
		slices.Sort(out)
		return out
	}
	if g, w := canon(got), canon(want); !slices.Equal(g, w) {
		return fmt.Errorf("results differ from the collection scan's:\n got  %s\n want %s", strings.Join(g, " "), strings.Join(w, " "))
	}
	return nil
}

// firstOfEach keeps the first of each run of documents with equal values
// at path (missing counts as null, as $group's _id does).
func firstOfEach(docs []bsoncore.Document, path string) []bsoncore.Document {
	var out []bsoncore.Document
	var last bsoncore.Value
	for i, d := range docs {
		v, err := d.LookupErr(strings.Split(path, ".")...)
		if err != nil {
			v = bsoncore.Value{Type: bsoncore.TypeNull}
		}
		if i == 0 || !expr.Equal(v, last) {
			out = append(out, d)
		}
		last = v
	}
	return out
}

// renderExec prints a drained plan: the summary line, the winning tree
// with its counters, the rejected plans.
func renderExec(ex *planner.Exec) string {
	keys, docs := ex.Examined()
	var b strings.Builder
	fmt.Fprintf(&b, "returned %d, keys %d, docs %d", ex.Returned(), keys, docs)
	if n := len(ex.AllPlansExecution()); n > 0 {
		fmt.Fprintf(&b, ", %d candidates", n)
	}
	if ex.FromCache() {
		b.WriteString(", from cache")
	}
	renderStage(&b, ex.WinningPlan(true), 0)
	for _, r := range ex.RejectedPlans() {
		b.WriteString("\nrejected:")
		renderStage(&b, r.(bson.D), 1)
	}
	return b.String()
}

// Fields explain prints that a transcript leaves out: constants, the
// clock, and advanced (always nReturned).
var unrendered = map[string]bool{
	"executionTimeMillisEstimate": true, "needYield": true, "saveState": true,
	"restoreState": true, "indexVersion": true, "advanced": true,
}

// counters are the executionStats fields, printed after "|".
var counters = map[string]bool{
	"nReturned": true, "works": true, "needTime": true, "isEOF": true,
	"keysExamined": true, "docsExamined": true, "seeks": true, "dupsTested": true,
	"dupsDropped": true, "alreadyHasObj": true, "totalDataSizeSorted": true,
}

func renderStage(b *strings.Builder, st bson.D, depth int) {
	var name string
	var fields, stats []string
	var inputs []bson.D
	for _, e := range st {
		switch {
		case e.Key == "stage":
			name = e.Value.(string)
		case e.Key == "inputStage":
			inputs = append(inputs, e.Value.(bson.D))
		case e.Key == "inputStages":
			for _, in := range e.Value.(bson.A) {
				inputs = append(inputs, in.(bson.D))
			}
		case unrendered[e.Key]:
		case counters[e.Key]:
			stats = append(stats, e.Key+"="+renderValue(e.Value))
		default:
			if v, ok := e.Value.(bool); ok {
				if v {
					fields = append(fields, e.Key)
				}
				continue
			}
			fields = append(fields, e.Key+"="+renderValue(e.Value))
		}
	}
	b.WriteString("\n" + strings.Repeat("  ", depth) + name)
	for _, f := range fields {
		b.WriteString(" " + f)
	}
	if len(stats) > 0 {
		b.WriteString(" | " + strings.Join(stats, " "))
	}
	for _, in := range inputs {
		renderStage(b, in, depth+1)
	}
}

// renderValue prints a field: strings bare when they have no space,
// anything else as relaxed extended JSON.
func renderValue(v any) string {
	if s, ok := v.(string); ok && !strings.ContainsAny(s, " \"") && s != "" {
		return s
	}
	typ, data, err := bson.MarshalValue(v)
	if err != nil {
		return fmt.Sprintf("<%v>", err)
	}
	return testcorpus.Relaxed(bsoncore.Value{Type: bsoncore.Type(typ), Data: data})
}

// compareTextWithScan is compareWithScan for a $text query, which has no
// collection scan plan (in MongoDB neither). Planning bound the filter's
// $text to the index's reading of the search (query.Filter.BindText), so
// the filter itself decides every document: read the whole collection and
// match each, and the text plan (index scans of the terms, TEXT_MATCH) must
// return exactly those, by _id.
func (h *planHarness) compareTextWithScan(c *planCase, q *planner.Query, got []bsoncore.Document) error {
	if c.Skip != 0 || c.Limit != 0 || c.count || len(c.Projection) > 5 && !bytes.Contains(c.Projection, []byte("_id")) {
		return nil
	}
	everything, err := query.Parse(testcorpus.EmptyDoc())
	if err != nil {
		return err
	}
	all := &planner.Query{Filter: everything, RawFilter: testcorpus.EmptyDoc()}
	scan, docs, err := h.execute(all, planner.Options{NS: h.ns.String()})
	if err != nil {
		return err
	}
	_ = scan.Close()
	ids := func(ds []bsoncore.Document) []string {
		out := []string{}
		for _, d := range ds {
			out = append(out, d.Lookup("_id").String())
		}
		slices.Sort(out)
		return out
	}
	var want []bsoncore.Document
	for _, d := range docs {
		r, err := q.Filter.Exec(d)
		if err != nil {
			return fmt.Errorf("matching %s: %v", testcorpus.RelaxedDoc(d), err)
		}
		if r.Matched {
			want = append(want, d)
		}
	}
	if g, w := ids(got), ids(want); !slices.Equal(g, w) {
		return fmt.Errorf("the text plan returns %v, matching every document gives %v", g, w)
	}
	return nil
}
