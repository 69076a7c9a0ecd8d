package query

import (
	"sync/atomic"

	"github.com/cairndb/cairn/internal/expr"
	"github.com/cairndb/cairn/internal/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TextSearch is the operand of a $text query, checked: what the planner's
// text plan reads (internal/fts parses Search against the index).
type TextSearch struct {
	Search string
	// Language is $language; "" when not given (the index's default).
	Language                          string
	CaseSensitive, DiacriticSensitive bool
}

// textMatcher is $text in a filter. Only a text plan can decide it (it
// needs the collection's text index), and the planner answers the clause
// itself and filters by the rest; a $text reached by plain matching has no
// index to read, which is MongoDB's IndexNotFound.
type textMatcher struct {
	TextSearch
	// eval decides the clause once a text plan has bound it (BindText).
	eval atomic.Pointer[func(doc []byte) (bool, error)]
}

func (m *textMatcher) match(doc []byte, st *state) bool {
	if f := m.eval.Load(); f != nil {
		ok, err := (*f)(doc)
		if err != nil && st.err == nil {
			st.err = err
		}
		return ok
	}
	if st.err == nil {
		st.err = mongoerr.New(mongoerr.IndexNotFound, "text index required for $text query")
	}
	return false
}

// BindText gives the filter's $text (see Text) the text index's reading
// of it, so that matching the filter again (a write re-checks the
// documents its plan chose, as they are when it commits) decides the
// clause as the text plan did. The planner binds it when it plans the
// query; a Filter is one request's, so the binding never crosses queries.
func (f *Filter) BindText(eval func(doc []byte) (bool, error)) {
	if tm := findText(f.root, true); tm != nil {
		tm.eval.Store(&eval)
	}
}

// findText finds the $text that every match goes through: the filter's
// own, or one under $and at any depth (an AND of ANDs is one AND); with
// throughOr, under $or too.
func findText(m matcher, throughOr bool) *textMatcher {
	var kids []matcher
	switch r := m.(type) {
	case *textMatcher:
		return r
	case andMatcher:
		kids = r
	case orMatcher:
		if throughOr {
			kids = r
		}
	}
	for _, c := range kids {
		if t := findText(c, throughOr); t != nil {
			return t
		}
	}
	return nil
}

// AnyText returns the filter's $text wherever it is (nil if none).
func (f *Filter) AnyText() *TextSearch {
	if t := findText(f.root, true); t != nil {
		return &t.TextSearch
	}
	return nil
}

// parseText checks $text's operand as MongoDB's parser does.
func parseText(v bsoncore.Value) (*textMatcher, error) {
	if v.Type != bsoncore.TypeEmbeddedDocument {
		return nil, badValue("$text expects an object")
	}
	m := &textMatcher{}
	hasSearch := false
	elems, _ := v.Document().Elements()
	for _, e := range elems {
		x := e.Value()
		switch e.Key() {
		case "$search":
			if x.Type != bsoncore.TypeString {
				return nil, badValue("$search needs a String")
			}
			m.Search, hasSearch = x.StringValue(), true
		case "$language":
			if x.Type != bsoncore.TypeString {
				return nil, badValue("$language needs a String")
			}
			m.Language = x.StringValue()
		case "$caseSensitive":
			if x.Type != bsoncore.TypeBoolean {
				return nil, badValue("$caseSensitive needs a Boolean")
			}
			m.CaseSensitive = x.Boolean()
		case "$diacriticSensitive":
			if x.Type != bsoncore.TypeBoolean {
				return nil, badValue("$diacriticSensitive needs a Boolean")
			}
			m.DiacriticSensitive = x.Boolean()
		default:
			return nil, badValue("extra fields in $text")
		}
	}
	if !hasSearch {
		return nil, badValue("$search required")
	}
	return m, nil
}

// Text returns the filter's $text when every match goes through it: a
// field of the filter document or of a $and under it (Cairn's text plan
// answers it and filters by the rest). nested reports a $text only some
// matches go through (under $or), which the text plan does not answer
// yet.
func (f *Filter) Text() (ts *TextSearch, nested bool) {
	if t := findText(f.root, false); t != nil {
		return &t.TextSearch, false
	}
	return nil, f.texts > 0
}

// checkTexts counts the $text operators of a filter document, under
// $and/$or/$nor too: MongoDB allows one per query (BadValue "Too many text
// expressions") and none under $nor.
func checkTexts(doc []byte, inNor bool, n *int) error {
	it := elemsOfBytes(doc)
	for {
		k, v, ok := it.next()
		if !ok {
			return nil
		}
		switch string(k) {
		case "$text":
			if inNor {
				return badValue("text expression not allowed in nor")
			}
			if *n++; *n > 1 {
				return badValue("Too many text expressions")
			}
		case "$and", "$or", "$nor":
			if v.Type != bsoncore.TypeArray {
				continue
			}
			for _, d := range arrayValues(v) {
				if d.Type == bsoncore.TypeEmbeddedDocument {
					if err := checkTexts(d.Data, inNor || string(k) == "$nor", n); err != nil {
						return err
					}
				}
			}
		}
	}
}

// HasText reports whether the filter has a $text anywhere.
func (f *Filter) HasText() bool { return f != nil && f.texts > 0 }

// TextScoreField is the trailing field in which a text plan carries a
// document's score to a projection or sort that reads {$meta:
// "textScore"}; stored documents cannot have it (field names cannot start
// with '$').
const TextScoreField = expr.TextScoreField

// MentionsTextScore reports whether a projection or sort document has a
// {$meta: "textScore"} field.
func MentionsTextScore(spec bsoncore.Document) bool {
	elems, err := spec.Elements()
	if err != nil {
		return false
	}
	for _, e := range elems {
		if isTextScoreMeta(e.Value()) {
			return true
		}
	}
	return false
}

// isTextScoreMeta reports whether v is {$meta: "textScore"}.
func isTextScoreMeta(v bsoncore.Value) bool {
	d, ok := v.DocumentOK()
	if !ok {
		return false
	}
	m, err := d.LookupErr("$meta")
	return err == nil && m.Type == bsoncore.TypeString && m.StringValue() == "textScore"
}

// AppendTextScore appends doc with the TextScoreField added last.
func AppendTextScore(dst []byte, doc bsoncore.Document, score float64) []byte {
	start := len(dst)
	dst = append(dst, doc[:len(doc)-1]...)
	dst = bsoncore.AppendDoubleElement(dst, TextScoreField, score)
	dst = append(dst, 0)
	bsoncore.UpdateLength(dst, int32(start), int32(len(dst)-start))
	return dst
}

// StripTextScore appends doc without its top-level TextScoreField (last,
// where a text plan put it, or anywhere a later stage moved it) to dst,
// and returns the score it held (0, false when none).
func StripTextScore(dst []byte, doc bsoncore.Document) ([]byte, float64, bool) {
	elems, err := doc.Elements()
	at := -1
	for i, e := range elems {
		if e.Key() == TextScoreField {
			at = i
		}
	}
	if err != nil || at < 0 {
		return append(dst, doc...), 0, false
	}
	score, _ := elems[at].Value().DoubleOK()
	idx, dst := bsoncore.AppendDocumentStart(dst)
	for i, e := range elems {
		if i != at {
			dst = append(dst, e...)
		}
	}
	dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
	return dst, score, true
}

// meta parses a projection's {name: {$meta: arg}}: "textScore" on a
// top-level field, like an expression allowed in both inclusion and
// exclusion projections.
func (pp *projParser) meta(name string, prefix, parts []string, arg bsoncore.Value) error {
	if arg.Type != bsoncore.TypeString {
		return badValue("Illegal argument to $meta: %s", arg)
	}
	if arg.StringValue() != "textScore" {
		return badValue("$meta \"%s\" is not supported yet; Cairn supports textScore", arg.StringValue())
	}
	if len(prefix) > 0 || len(parts) != 1 {
		return badValue("$meta on a dotted or nested field (%s) is not supported yet", name)
	}
	pp.proj.meta = append(pp.proj.meta, name)
	return nil
}

// applyScored is Apply for a document that may carry the TextScoreField:
// the projection applies to the document without it, then the $meta
// fields are set to the score. A $meta field without a score is MongoDB's
// 40218.
func (p *Projection) applyScored(dst []byte, doc bsoncore.Document, arrayPos int) ([]byte, error) {
	plain, score, has := StripTextScore(nil, doc)
	if !has && len(p.meta) > 0 {
		return dst, mongoerr.New(mongoerr.TextScoreUnavailable, "query requires text score metadata, but it is not available")
	}
	start := len(dst)
	dst, err := p.apply(dst, plain, arrayPos)
	if err != nil || len(p.meta) == 0 {
		return dst, err
	}
	out := bsoncore.Document(dst[start:])
	rest := make([]byte, 0, len(out)+len(p.meta)*24)
	idx, rest := bsoncore.AppendDocumentStart(rest)
	elems, _ := out.Elements()
	for _, e := range elems {
		drop := false
		for _, m := range p.meta {
			drop = drop || e.Key() == m
		}
		if !drop {
			rest = append(rest, e...)
		}
	}
	for _, m := range p.meta {
		rest = bsoncore.AppendDoubleElement(rest, m, score)
	}
	rest, _ = bsoncore.AppendDocumentEnd(rest, idx)
	return append(dst[:start], rest...), nil
}

// hasTextScore reports, cheaply, whether doc ends with the TextScoreField.
func hasTextScore(doc []byte) bool {
	n := len(doc) - 1 - 8 - len(TextScoreField) - 1 // where the field's name starts
	return n >= 5 && doc[n-1] == byte(bsoncore.TypeDouble) && string(doc[n:n+len(TextScoreField)]) == TextScoreField && doc[n+len(TextScoreField)] == 0
}
