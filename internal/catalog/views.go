package catalog

import (
	"fmt"
	"sort"
	"strings"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/storage"
)

// View is the definition of one view, in the shape MongoDB keeps in
// <db>.system.views: {_id: "db.name", viewOn, pipeline, collation}. A view
// has no data and no id; it names the collection or view it reads and the
// pipeline that shapes what it reads.
//
// Invariant "Views and collections share one namespace": no name is both a
// view and a collection; CreateCollection and CreateView refuse the other's
// names (NamespaceExists).
type View struct {
	ID       string   `bson:"_id"` // "db.name", as in system.views
	ViewOn   string   `bson:"viewOn"`
	Pipeline bson.Raw `bson:"pipeline"` // a BSON array of stage documents
	// Collation is the view's default collation (nil: simple).
	Collation bson.Raw `bson:"collation,omitempty"`
	// Timeseries, set, makes the view a time series collection's: its
	// timeseries options as listCollections shows them; the view reads
	// system.buckets.<name> through $_internalUnpackBucket.
	Timeseries bson.Raw `bson:"timeseries,omitempty"`
	// ExpireAfterSeconds is a time series collection's TTL (nil: none).
	ExpireAfterSeconds *int64 `bson:"expireAfterSeconds,omitempty"`
}

// IsTimeseries reports whether v is a time series collection's namespace.
func (v *View) IsTimeseries() bool { return v != nil && len(v.Timeseries) > 0 }

// DB is the database the view belongs to.
func (v *View) DB() string { db, _, _ := strings.Cut(v.ID, "."); return db }

// Name is the view's name inside its database.
func (v *View) Name() string { _, n, _ := strings.Cut(v.ID, "."); return n }

var viewRecPrefix = []byte{storage.SpaceMeta, 'v'}

func viewRecKey(ns string) []byte { return append(append([]byte(nil), viewRecPrefix...), ns...) }

// View looks up the view db.name; nil when there is none. Cheap when the
// database has no views: every command on a collection asks.
func (s *State) View(db, name string) *View {
	if len(s.views) == 0 {
		return nil
	}
	return s.views[db][name]
}

// Views lists db's views sorted by name (all databases when db is "").
func (s *State) Views(db string) []*View {
	var out []*View
	for d, m := range s.views {
		if db != "" && d != db {
			continue
		}
		for _, v := range m {
			out = append(out, v)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}

// withView returns a copy of s's view map with v set (nil v: removed).
func (s *State) setView(db, name string, v *View) {
	views := make(map[string]map[string]*View, len(s.views)+1)
	for d, m := range s.views {
		views[d] = m
	}
	m := make(map[string]*View, len(views[db])+1)
	for n, x := range views[db] {
		m[n] = x
	}
	if v == nil {
		delete(m, name)
	} else {
		m[name] = v
	}
	if len(m) == 0 {
		delete(views, db)
	} else {
		views[db] = m
	}
	s.views = views
}

// CreateView adds the view v inside tx; its namespace must be free. The
// definition is the command layer's to validate.
func (c *Catalog) CreateView(tx *storage.Txn, v View) error {
	db, name, _ := strings.Cut(v.ID, ".")
	st := c.work()
	if st.Collection(db, name) != nil || st.View(db, name) != nil {
		return mongoerr.New(mongoerr.NamespaceExists, "Namespace %s already exists", v.ID)
	}
	if err := checkDBCase(st, db); err != nil {
		return err
	}
	return c.putView(tx, &v)
}

// ModifyView replaces the definition of an existing view inside tx (collMod).
func (c *Catalog) ModifyView(tx *storage.Txn, v View) error {
	db, name, _ := strings.Cut(v.ID, ".")
	if c.work().View(db, name) == nil {
		return mongoerr.New(mongoerr.NamespaceNotFound, "ns does not exist: %s", v.ID)
	}
	return c.putView(tx, &v)
}

func (c *Catalog) putView(tx *storage.Txn, v *View) error {
	rec, err := bson.Marshal(v)
	if err != nil {
		return fmt.Errorf("catalog: encoding view %s: %w", v.ID, err)
	}
	tx.Set(viewRecKey(v.ID), rec)
	next := c.work().clone()
	next.setView(v.DB(), v.Name(), v)
	c.change(tx, next)
	return nil
}

// DropView removes the view db.name inside tx and reports whether it existed.
func (c *Catalog) DropView(tx *storage.Txn, db, name string) bool {
	if c.work().View(db, name) == nil {
		return false
	}
	tx.Delete(viewRecKey(db + "." + name))
	next := c.work().clone()
	next.setView(db, name, nil)
	c.change(tx, next)
	return true
}

// loadViews reads the view records it walks into st.
func loadViews(it *storage.Iter, st *State) error {
	for ok := it.First(); ok; ok = it.Next() {
		v, err := it.Value()
		if err != nil {
			return fmt.Errorf("catalog: reading view record: %w", err)
		}
		var view View
		if err := bson.Unmarshal(v, &view); err != nil {
			return fmt.Errorf("catalog: view record %x is damaged: %w", it.Key(), err)
		}
		st.setView(view.DB(), view.Name(), &view)
	}
	return nil
}

// MaxViewDepth is how many views one read may pass through, MongoDB's limit.
const MaxViewDepth = 20

// Stages returns the view's pipeline as stage documents.
func (v *View) Stages() []bsoncore.Document {
	vals, err := bsoncore.Array(v.Pipeline).Values()
	if err != nil {
		return nil
	}
	out := make([]bsoncore.Document, 0, len(vals))
	for _, x := range vals {
		if d, ok := x.DocumentOK(); ok {
			out = append(out, d)
		}
	}
	return out
}

// Resolve follows db.name through views to the collection it reads: the
// collection's name and the pipeline to run over it (the innermost view's
// stages first). A name that is not a view resolves to itself with no
// stages; the collation is that of the outermost view (views on views share
// one, as MongoDB requires).
func (s *State) Resolve(db, name string) (coll string, stages []bsoncore.Document, collation bson.Raw, isView bool) {
	v := s.View(db, name)
	if v == nil {
		return name, nil, nil, false
	}
	collation = v.Collation
	for depth := 0; v != nil && depth <= MaxViewDepth; depth++ {
		stages = append(v.Stages(), stages...)
		name = v.ViewOn
		v = s.View(db, name)
	}
	return name, stages, collation, true
}

// CheckViews verifies the view graph of db with def in place of (or added
// as) the view of its name: no view may reach itself (GraphContainsCycle)
// and no chain of views may be deeper than MaxViewDepth
// (ViewDepthLimitExceeded). A view depends on the namespace it is defined
// on and on every namespace its pipeline reads ($lookup, $graphLookup,
// $unionWith, at any depth, $facet's too).
func (s *State) CheckViews(def *View) error {
	db := def.DB()
	defs := map[string]*View{def.Name(): def}
	for n, v := range s.views[db] {
		if n != def.Name() {
			defs[n] = v
		}
	}
	const (
		visiting = -1
	)
	depth := map[string]int{}
	var walk func(name string, path []string) (int, error)
	walk = func(name string, path []string) (int, error) {
		v := defs[name]
		if v == nil {
			return 0, nil // a collection, or nothing yet: depth 0
		}
		switch d := depth[name]; {
		case d == visiting:
			cycle := append(append([]string(nil), path...), name)
			for i := range cycle {
				cycle[i] = db + "." + cycle[i]
			}
			return 0, mongoerr.New(mongoerr.GraphContainsCycle, "View cycle detected: [%s]", strings.Join(cycle, " => "))
		case d > 0:
			return d, nil
		}
		depth[name] = visiting
		deepest := 0
		for _, dep := range v.dependencies() {
			d, err := walk(dep, append(path, name))
			if err != nil {
				return 0, err
			}
			deepest = max(deepest, d)
		}
		depth[name] = deepest + 1
		if deepest+1 > MaxViewDepth {
			return 0, mongoerr.New(mongoerr.ViewDepthLimitExceeded, "View depth too deep or view cycle detected. Maximum depth is %d", MaxViewDepth)
		}
		return deepest + 1, nil
	}
	names := make([]string, 0, len(defs))
	for n := range defs {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if _, err := walk(n, nil); err != nil {
			return err
		}
	}
	return nil
}

// dependencies lists the names (in the view's database) the view reads.
func (v *View) dependencies() []string {
	out := []string{v.ViewOn}
	for _, st := range v.Stages() {
		out = pipelineReads(st, out)
	}
	return out
}

// pipelineReads appends the collections one stage reads to out.
func pipelineReads(stage bsoncore.Document, out []string) []string {
	elems, err := stage.Elements()
	if err != nil || len(elems) != 1 {
		return out
	}
	arg := elems[0].Value()
	sub := func(d bsoncore.Document, field string) {
		if p, ok := d.Lookup(field).ArrayOK(); ok {
			vals, _ := p.Values()
			for _, x := range vals {
				if sd, ok := x.DocumentOK(); ok {
					out = pipelineReads(sd, out)
				}
			}
		}
	}
	switch elems[0].Key() {
	case "$lookup", "$graphLookup":
		if d, ok := arg.DocumentOK(); ok {
			if from, ok := d.Lookup("from").StringValueOK(); ok {
				out = append(out, from)
			}
			sub(d, "pipeline")
		}
	case "$unionWith":
		if name, ok := arg.StringValueOK(); ok {
			out = append(out, name)
		} else if d, ok := arg.DocumentOK(); ok {
			if name, ok := d.Lookup("coll").StringValueOK(); ok {
				out = append(out, name)
			}
			sub(d, "pipeline")
		}
	case "$facet":
		if d, ok := arg.DocumentOK(); ok {
			fs, _ := d.Elements()
			for _, f := range fs {
				sub(bsoncore.Document(d), f.Key())
			}
		}
	}
	return out
}
