package commands

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/query"
)

// cmdFindAndModify updates or removes the first document the query selects
// (in sort order) and returns it, before or after (new), projected by fields.
func cmdFindAndModify(ctx context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	sel, cv, err := parseFindAndModifySelection(s, req)
	if err != nil {
		return nil, err
	}
	ns := sel.ns
	remove, err := req.Bool("remove", false)
	if err != nil {
		return nil, err
	}
	returnNew, err := req.Bool("new", false)
	if err != nil {
		return nil, err
	}
	upsertFlag, err := req.Bool("upsert", false)
	if err != nil {
		return nil, err
	}
	u, hasUpdate := req.Arg("update")
	switch {
	case remove && hasUpdate:
		return nil, mongoerr.New(mongoerr.FailedToParse, "Cannot specify both an update and remove=true")
	case !remove && !hasUpdate:
		return nil, mongoerr.New(mongoerr.FailedToParse, "Either an update or remove=true must be specified")
	case remove && (returnNew || upsertFlag):
		return nil, mongoerr.New(mongoerr.FailedToParse, "Cannot specify both new=true and remove=true; 'remove' always returns the deleted document")
	}
	var proj *query.Projection
	if fields, err := req.Document("fields"); err != nil {
		return nil, err
	} else if len(fields) > 5 {
		if proj, err = query.ParseProjection(fields, sel.filter); err != nil {
			return nil, err
		}
	}
	var value bsoncore.Document
	lastErr := NewReply(nil)
	if remove {
		value, err = findAndRemove(ctx, s.Env.Engine, ns, sel)
		if err != nil {
			return nil, err
		}
		n := int32(0)
		if value != nil {
			n = 1
		}
		lastErr.Int32("n", n)
		s.Env.Ops.Delete.Add(int64(n))
	} else {
		arrayFilters, err := arrayFiltersOf(req.Body)
		if err != nil {
			return nil, err
		}
		mod, err := parseModifier(u, arrayFilters, false, cv, nil)
		if err != nil {
			return nil, err
		}
		res, err := findAndUpdate(ctx, s.Env.Engine, ns, updateSpec{sel: sel, mod: mod, upsert: upsertFlag})
		if err != nil {
			return nil, err
		}
		value = res.before
		if returnNew {
			value = res.after
		}
		n := res.matched
		if res.upsertedID.Type != 0 {
			n = 1
		}
		lastErr.Int32("n", int32(n)).Bool("updatedExisting", res.matched > 0)
		if res.upsertedID.Type != 0 {
			lastErr.Value("upserted", res.upsertedID)
		}
		s.Env.Ops.Update.Add(1)
	}
	r := NewReply(dst).Doc("lastErrorObject", lastErr.End())
	if value == nil {
		r.Value("value", bsoncore.Value{Type: bsoncore.TypeNull})
	} else {
		if proj != nil {
			_, pos := sel.filter.MatchDetails(value)
			if value, err = proj.Apply(nil, value, pos); err != nil {
				return nil, err
			}
		}
		r.Doc("value", value)
	}
	return r.Finish(), nil
}

// parseFindAndModifySelection reads what findAndModify and its explain
// share: the query (its $expr seeing the command's let variables, also
// returned), sort, collation (simple only), hint and maxTimeMS. The
// selection reads at most one document.
func parseFindAndModifySelection(s *Session, req *Request) (findSpec, commandVars, error) {
	coll, err := req.Collection()
	if err != nil {
		return findSpec{}, commandVars{}, err
	}
	filter, err := req.Document("query")
	if err != nil {
		return findSpec{}, commandVars{}, err
	}
	cv, err := requestVars(req)
	if err != nil {
		return findSpec{}, cv, err
	}
	sel, err := newSelectionWith(engine.Namespace{DB: req.DB, Coll: coll}, filter, cv.filterOptions())
	if err != nil {
		return sel, cv, err
	}
	if err := parseProjectionAndSort(&Request{Name: req.Name, Body: sortOnly(req)}, &sel); err != nil {
		return sel, cv, err
	}
	if err := checkCollation(req); err != nil {
		return sel, cv, err
	}
	if err := parseHint(req, &sel); err != nil {
		return sel, cv, err
	}
	sel.sortMemory = sortMemory(s)
	sel.limit = 1
	return sel, cv, nil
}

// sortOnly extracts the sort argument so the find parser can read it.
func sortOnly(req *Request) bsoncore.Document {
	r := NewReply(nil)
	if v, ok := req.Arg("sort"); ok {
		r.Value("sort", v)
	}
	return r.End()
}

// findAndRemove deletes the first document sel selects and returns it.
func findAndRemove(ctx context.Context, eng *engine.Engine, ns engine.Namespace, sel findSpec) (bsoncore.Document, error) {
	ids, err := matchingIDs(ctx, eng, sel, 1)
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	var removed bsoncore.Document
	_, err = eng.Modify(ns, ids, true, func(_ int, cur bsoncore.Document) (engine.Action, error) {
		if cur == nil || !sel.filter.Match(cur) {
			return engine.Action{}, nil
		}
		removed = append(bsoncore.Document(nil), cur...)
		return engine.Action{Delete: true}, nil
	})
	return removed, err
}

// findAndUpdate updates the first document the spec selects, keeping its
// before and after images.
func findAndUpdate(ctx context.Context, eng *engine.Engine, ns engine.Namespace, spec updateSpec) (updateResult, error) {
	return runUpdate(ctx, eng, ns, spec, true)
}
