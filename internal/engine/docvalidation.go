package engine

import (
	"bytes"
	"log/slog"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/catalog"
	"github.com/cairndb/cairn/internal/validation"
)

// Document validation inside the commit pipeline ("Valid on commit",
// doc.go): insertOne and applyAction, the two places a document is stored,
// check it against the rules of its collection as the working catalog
// holds them when the request applies, so a concurrent collMod orders
// cleanly: a write applied after it sees its rules, one applied before it
// was checked by the rules it replaced.

// validators caches, per collection id, the rules compiled from the
// collection's options. It is used only on the pipeline goroutine ("Serial
// apply"), like the tail bounds, so it needs no lock; entries of dropped
// collections are forgotten with them (forgetDropped).
type validators struct {
	m map[uint64]compiledRules
}

// compiledRules are the rules compiled from opts: a collMod replaces a
// collection's options slice, so a cached entry is current while its opts
// are the collection's.
type compiledRules struct {
	opts  bson.Raw
	rules *validation.Rules
	err   error
}

// rulesOf returns c's validation rules (nil: none).
func (v *validators) rulesOf(c *catalog.Collection) (*validation.Rules, error) {
	if len(c.Options) == 0 {
		return nil, nil
	}
	if cr, ok := v.m[c.ID]; ok && sameBytes(cr.opts, c.Options) {
		return cr.rules, cr.err
	}
	r, err := validation.FromOptions(c.Options)
	if v.m == nil {
		v.m = make(map[uint64]compiledRules)
	}
	v.m[c.ID] = compiledRules{opts: c.Options, rules: r, err: err}
	return r, err
}

// sameBytes is bytes.Equal with a shortcut for the same slice (the common
// case: the catalog shares one options slice between versions of a
// collection's record until collMod replaces it).
func sameBytes(a, b []byte) bool {
	if len(a) != len(b) {
		return false
	}
	if len(a) == 0 || &a[0] == &b[0] {
		return true
	}
	return bytes.Equal(a, b)
}

// validateInsert checks doc, about to be inserted into ns, unless bypass.
func (e *Engine) validateInsert(ns Namespace, doc bsoncore.Document, bypass bool) error {
	r, err := e.rulesFor(ns, bypass)
	if r == nil || err != nil {
		return err
	}
	warning, err := r.CheckInsert(doc)
	e.warnInvalid(ns, doc, warning)
	return err
}

// validateUpdate checks that the document old of ns may become next,
// unless bypass.
func (e *Engine) validateUpdate(ns Namespace, old, next bsoncore.Document, bypass bool) error {
	r, err := e.rulesFor(ns, bypass)
	if r == nil || err != nil {
		return err
	}
	warning, err := r.CheckUpdate(old, next)
	e.warnInvalid(ns, next, warning)
	return err
}

func (e *Engine) rulesFor(ns Namespace, bypass bool) (*validation.Rules, error) {
	if bypass {
		return nil, nil
	}
	c := e.writeCollection(ns)
	if c == nil {
		return nil, nil
	}
	return e.valid.rulesOf(c)
}

// warnInvalid logs a document that fails validation under
// validationAction "warn" as MongoDB's log line 20294 does: message
// "Document would fail validation", attr {namespace, document, errInfo}.
func (e *Engine) warnInvalid(ns Namespace, doc, errInfo bsoncore.Document) {
	if errInfo == nil {
		return
	}
	e.log.Warn("Document would fail validation", "id", 20294, slog.Group("attr",
		"namespace", ns.String(), "document", logDoc(doc), "errInfo", logDoc(errInfo)))
}

// logDoc logs a document as an object in JSON logs and as Extended JSON
// text elsewhere.
type logDoc bsoncore.Document

func (d logDoc) String() string               { return bson.Raw(d).String() }
func (d logDoc) MarshalJSON() ([]byte, error) { return []byte(bson.Raw(d).String()), nil }
