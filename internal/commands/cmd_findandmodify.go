package commands

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/exec"
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
		if proj, err = query.ParseProjection(fields, sel.Filter); err != nil {
			return nil, err
		}
	}
	var value bsoncore.Document
	lastErr := NewReply(nil)
	// A retryable findAndModify is statement 0; once it ran, its record
	// (with both images) is the answer (retryable.go).
	retry := s.sess.retry
	rec, done := retry.Done(0)
	var rider exec.Rider
	var sess *engine.OplogSession
	if retry != nil {
		rider, sess = stmtRider(s, retry, 0), retry.OplogSession(0)
	}
	if remove {
		if done {
			did, _ := fromStmtResult(rec)
			value = did.Before
		} else if value, err = s.x().FindAndRemove(ctx, sel, rider, sess); err != nil {
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
		mod, err := parseModifier(u, arrayFilters, false, cv, nil, sel.Collation)
		if err != nil {
			return nil, err
		}
		bypass, err := req.Bool("bypassDocumentValidation", false)
		if err != nil {
			return nil, err
		}
		keepEmptyTs, err := req.Bool("bypassEmptyTsReplacement", false)
		if err != nil {
			return nil, err
		}
		var res exec.UpdateResult
		if done {
			res, _ = fromStmtResult(rec)
		} else if res, err = s.x().FindAndUpdate(ctx, exec.Update{Sel: sel, Mod: mod, Upsert: upsertFlag, Bypass: bypass, KeepEmptyTimestamps: keepEmptyTs, Rider: rider, Session: sess}); err != nil {
			return nil, err
		}
		value = res.Before
		if returnNew {
			value = res.After
		}
		n := res.Matched
		if res.UpsertedID.Type != 0 {
			n = 1
		}
		lastErr.Int32("n", int32(n)).Bool("updatedExisting", res.Matched > 0)
		if res.UpsertedID.Type != 0 {
			lastErr.Value("upserted", res.UpsertedID)
		}
		s.Env.Ops.Update.Add(1)
	}
	r := NewReply(dst).Doc("lastErrorObject", lastErr.End())
	if value == nil {
		r.Value("value", bsoncore.Value{Type: bsoncore.TypeNull})
	} else {
		if proj != nil {
			_, pos := sel.Filter.MatchDetails(value)
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
// returned), sort, collation, hint and maxTimeMS. The
// selection reads at most one document.
func parseFindAndModifySelection(s *Session, req *Request) (exec.Selection, commandVars, error) {
	coll, err := req.Collection()
	if err != nil {
		return exec.Selection{}, commandVars{}, err
	}
	filter, err := req.Document("query")
	if err != nil {
		return exec.Selection{}, commandVars{}, err
	}
	cv, err := requestVars(req)
	if err != nil {
		return exec.Selection{}, cv, err
	}
	ns := engine.Namespace{DB: req.DB, Coll: coll}
	c, err := commandCollation(s, req, ns)
	if err != nil {
		return exec.Selection{}, cv, err
	}
	sel, err := newSelectionWith(ns, filter, withCollation(cv.filterOptions(), c))
	if err != nil {
		return sel, cv, err
	}
	sortSpec, err := req.Document("sort")
	if err != nil {
		return sel, cv, err
	}
	if err := sel.SetSort(sortSpec); err != nil {
		return sel, cv, err
	}
	if err := parseHint(req, &sel); err != nil {
		return sel, cv, err
	}
	sel.SortMemory = sortMemory(s)
	sel.Limit = 1
	return sel, cv, nil
}
