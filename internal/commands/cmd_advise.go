package commands

import (
	"context"
	"math"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/advise"
	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/exec"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// Bounds of advise's sample (sampleSize).
const (
	adviseDefaultSample = 1000
	adviseMaxSample     = 100000
)

// cmdAdvise is {advise: "<collection>"} or {advise: 1} for every
// collection of the database: package advise's findings over a bounded
// random sample of the documents (engine.Reader.Sample, one snapshot, no
// lock), the indexes with their $indexStats use, and the query shapes the
// server recorded (QueryShapes: one command in ten, at most 1,000 shapes)
// or, when it has none for the collection, those in system.profile. The
// shapes read are in the reply too ($queryStats-like).
// Cairn's own command: MongoDB offers this only in its cloud service.
func cmdAdvise(ctx context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	n, err := req.SafeInt("sampleSize", adviseDefaultSample)
	if err != nil {
		return nil, err
	}
	if n < 1 || n > adviseMaxSample {
		return nil, mongoerr.New(mongoerr.BadValue, "sampleSize must be between 1 and %d, not %d", adviseMaxSample, n)
	}
	var names []string
	if req.First().Type == bsoncore.TypeString {
		c, err := req.Collection() // its name checked as every command's
		if err != nil {
			return nil, err
		}
		if s.Env.Engine.Catalog().Collection(req.DB, c) == nil {
			return nil, mongoerr.New(mongoerr.NamespaceNotFound, "collection %s.%s does not exist", req.DB, c)
		}
		names = []string{c}
	} else if f, ok := req.First().AsFloat64OK(); !ok || f != 1 {
		return nil, mongoerr.New(mongoerr.BadValue, "advise takes a collection name, or 1 for every collection of the database")
	} else {
		for _, c := range s.Env.Engine.Catalog().Collections(req.DB) {
			if !strings.HasPrefix(c.Name, "system.") {
				names = append(names, c.Name)
			}
		}
		sort.Strings(names)
	}
	profiled, err := profiledShapes(ctx, s.Env.Exec, req.DB)
	if err != nil {
		return nil, err
	}
	rng := rand.New(rand.NewPCG(rand.Uint64(), 0))
	var colls []bsoncore.Document
	for _, c := range names {
		ns := engine.Namespace{DB: req.DB, Coll: c}
		in, err := s.Env.Exec.AdviseInput(ctx, ns, int(n), rng)
		if err != nil {
			return nil, err
		}
		// The server's own sampled record of query shapes (shapes.go); the
		// profiler's entries when it has none for the collection.
		source := "server"
		if in.Shapes = s.Env.Shapes.For(ns.String()); len(in.Shapes) == 0 {
			in.Shapes, source = profiled[ns.String()], "profiler"
		}
		findings := advise.Analyze(in, advise.Options{})
		docs := make([]bsoncore.Document, len(findings))
		for i, f := range findings {
			docs[i] = findingDoc(f)
		}
		colls = append(colls, NewReply(nil).String("ns", ns.String()).Count("sampled", int64(len(in.Sample))).
			DocArray("queryShapes", shapeDocs(in.Shapes)).String("queryShapesFrom", source).DocArray("findings", docs).End())
	}
	return NewReply(dst).DocArray("collections", colls).Finish(), nil
}

// shapeDocs lists the query shapes the advice read, most run first, as
// $queryStats-like documents: {command, equality, range, sort, runs,
// examined, returned, plan}.
func shapeDocs(shapes []advise.Shape) []bsoncore.Document {
	shapes = append([]advise.Shape(nil), shapes...)
	sort.SliceStable(shapes, func(i, j int) bool { return shapes[i].Runs > shapes[j].Runs })
	out := make([]bsoncore.Document, len(shapes))
	for i, sh := range shapes {
		r := NewReply(nil).String("command", sh.Command).StringArray("equality", orEmpty(sh.Equality)).
			StringArray("range", orEmpty(sh.Range)).StringArray("sort", orEmpty(sh.Sort))
		if len(sh.ArrayPositions) > 0 {
			r.StringArray("arrayPositions", sh.ArrayPositions)
		}
		out[i] = r.Count("runs", sh.Runs).Count("examined", sh.Examined).Count("returned", sh.Returned).String("plan", sh.Plan).End()
	}
	return out
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func findingDoc(f advise.Finding) bsoncore.Document {
	ev := NewReply(nil)
	for _, fact := range f.Evidence {
		ev.Any(fact.Name, fact.Value)
	}
	return NewReply(nil).String("kind", f.Kind).String("severity", f.Severity.String()).String("path", f.Path).
		String("summary", f.Summary).Doc("evidence", ev.End()).String("suggestion", f.Suggestion).End()
}

// profiledShapes groups the entries of db's system.profile into query
// shapes per namespace: the fields each filter tests by equality and by
// range, the sort, how often it ran and what it examined and returned.
func profiledShapes(ctx context.Context, x *exec.Env, db string) (map[string][]advise.Shape, error) {
	// system.profile is capped at 1 MB: a few thousand entries at most.
	docs, err := x.Documents(ctx, engine.Namespace{DB: db, Coll: "system.profile"}, math.MaxInt)
	if err != nil {
		return nil, err
	}
	type key struct{ ns, shape string }
	byShape := map[key]*advise.Shape{}
	var order []key
	for _, d := range docs {
		sh, ns, ok := shapeOf(d)
		if !ok {
			continue
		}
		k := key{ns, sh.Command + "|" + strings.Join(sh.Equality, ",") + "|" + strings.Join(sh.Range, ",") + "|" + strings.Join(sh.Sort, ",") + "|" + strings.Join(sh.ArrayPositions, ",")}
		have := byShape[k]
		if have == nil {
			have = &sh
			byShape[k] = have
			order = append(order, k)
		} else {
			have.Runs += sh.Runs
			have.Examined += sh.Examined
			have.Returned += sh.Returned
			have.Plan = sh.Plan
		}
	}
	out := map[string][]advise.Shape{}
	for _, k := range order {
		out[k.ns] = append(out[k.ns], *byShape[k])
	}
	return out, nil
}

// shapeOf reads one system.profile entry as a query shape.
func shapeOf(d bsoncore.Document) (advise.Shape, string, bool) {
	ns, _ := d.Lookup("ns").StringValueOK()
	cmd, ok := d.Lookup("command").DocumentOK()
	if !ok || ns == "" {
		return advise.Shape{}, "", false
	}
	sh, ok := shapeOfCommand(cmd)
	if !ok {
		return advise.Shape{}, "", false
	}
	sh.Runs, sh.Plan = 1, lookupString(d, "planSummary")
	sh.Examined = lookupInt(d, "keysExamined") + lookupInt(d, "docsExamined")
	sh.Returned = lookupInt(d, "nreturned") + lookupInt(d, "nMatched") + lookupInt(d, "ndeleted")
	return sh, ns, true
}

// shapeOfCommand is the query shape of a command body (without counts): the
// fields its filter tests, its sort, the array positions its update names.
func shapeOfCommand(cmd bsoncore.Document) (advise.Shape, bool) {
	el, err := cmd.IndexErr(0)
	if err != nil {
		return advise.Shape{}, false
	}
	sh := advise.Shape{Command: el.Key()}
	var filter, sort bsoncore.Document
	switch sh.Command {
	case "find":
		filter, _ = cmd.Lookup("filter").DocumentOK()
		sort, _ = cmd.Lookup("sort").DocumentOK()
	case "count", "distinct", "findAndModify", "findandmodify":
		filter, _ = cmd.Lookup("query").DocumentOK()
		sort, _ = cmd.Lookup("sort").DocumentOK()
		if u, ok := cmd.Lookup("update").DocumentOK(); ok {
			sh.ArrayPositions = positionalPaths(u)
		}
	case "aggregate":
		if stages, ok := cmd.Lookup("pipeline").ArrayOK(); ok {
			vals, _ := stages.Values()
			for _, st := range vals {
				sd, _ := st.DocumentOK()
				if m, ok := sd.Lookup("$match").DocumentOK(); ok && filter == nil {
					filter = m
				} else if s, ok := sd.Lookup("$sort").DocumentOK(); ok && sort == nil {
					sort = s
				} else {
					break
				}
			}
		}
	case "update", "delete":
		list := "updates"
		if sh.Command == "delete" {
			list = "deletes"
		}
		if a, ok := cmd.Lookup(list).ArrayOK(); ok {
			if first, err := a.IndexErr(0); err == nil {
				st, _ := first.DocumentOK()
				filter, _ = st.Lookup("q").DocumentOK()
				if u, ok := st.Lookup("u").DocumentOK(); ok {
					sh.ArrayPositions = positionalPaths(u)
				}
			}
		}
	default:
		return advise.Shape{}, false
	}
	sh.Equality, sh.Range = filterFields(filter, nil, nil)
	sh.Sort = fieldNamesOf(sort)
	return sh, true
}

// filterFields lists the fields a filter tests by equality ($eq, $in or a
// value) and by range ($gt, $gte, $lt, $lte), through $and.
func filterFields(f bsoncore.Document, eq, rng []string) ([]string, []string) {
	els, _ := f.Elements()
	for _, el := range els {
		k, v := el.Key(), el.Value()
		if k == "$and" {
			arr, _ := v.ArrayOK()
			vals, _ := arr.Values()
			for _, c := range vals {
				if cd, ok := c.DocumentOK(); ok {
					eq, rng = filterFields(cd, eq, rng)
				}
			}
			continue
		}
		if strings.HasPrefix(k, "$") {
			continue
		}
		if !isOperatorDoc(v) {
			eq = append(eq, k)
			continue
		}
		oel, _ := v.Document().Elements()
		for _, o := range oel {
			switch o.Key() {
			case "$eq", "$in":
				eq = append(eq, k)
			case "$gt", "$gte", "$lt", "$lte":
				rng = append(rng, k)
			}
		}
	}
	return eq, rng
}

func fieldNamesOf(d bsoncore.Document) []string {
	els, _ := d.Elements()
	var out []string
	for _, el := range els {
		out = append(out, el.Key())
	}
	return out
}

// positionalPaths lists the paths of an update document that name array
// elements by position ($, $[], $[id] or a number), with those parts
// removed: orders.$.items.$[i].qty is orders.items.qty.
func positionalPaths(u bsoncore.Document) []string {
	var out []string
	els, _ := u.Elements()
	for _, op := range els {
		fields, ok := op.Value().DocumentOK()
		if !ok || !strings.HasPrefix(op.Key(), "$") {
			continue
		}
		fel, _ := fields.Elements()
		for _, f := range fel {
			parts := strings.Split(f.Key(), ".")
			kept := parts[:0]
			positional := false
			for _, p := range parts {
				if strings.HasPrefix(p, "$") || isIndex(p) {
					positional = true
					continue
				}
				kept = append(kept, p)
			}
			if positional {
				out = append(out, strings.Join(kept, "."))
			}
		}
	}
	return out
}

func isIndex(s string) bool {
	_, err := strconv.Atoi(s)
	return err == nil
}

func lookupString(d bsoncore.Document, k string) string {
	s, _ := d.Lookup(k).StringValueOK()
	return s
}

func lookupInt(d bsoncore.Document, k string) int64 {
	v, ok := d.Lookup(k).AsInt64OK()
	if !ok {
		return 0
	}
	return v
}
