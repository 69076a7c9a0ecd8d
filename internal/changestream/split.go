package changestream

import (
	"bytes"
	"slices"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
)

// MaxEventSize is the largest event a stream returns whole: with
// $changeStreamSplitLargeEvent a larger one is split into fragments, as
// MongoDB splits events above its kBSONObjMaxChangeEventSize (16 MB and
// 8 KB).
const MaxEventSize = 16<<20 + 8<<10

// Splitter is $changeStreamSplitLargeEvent, the last stage of a change
// stream's pipeline: it returns an event of at most MaxEventSize as it is,
// and a larger one as fragments, each {_id: <the event's token with the
// fragment's index>, splitEvent: {fragment: n, of: total}, ...} with as
// many of the event's other fields as fit, taken smallest first (ties by
// name), as MongoDB builds them. A stream resumed from a fragment's token
// reads that fragment's event again; the Splitter splits it again and
// drops the fragments up to the token's.
type Splitter struct {
	// resume is the fragment token the stream resumed from, until the
	// first event is split.
	resume *Token
}

// NewSplitter returns the Splitter of a stream opened with spec.
func NewSplitter(spec Spec) *Splitter {
	sp := &Splitter{}
	if t := spec.resumeToken(); t != nil && t.HasFragment {
		sp.resume = t
	}
	return sp
}

// ResumesFromFragment reports whether spec resumes from a fragment's
// token: a pipeline without the split stage cannot (MongoDB's
// ChangeStreamFatalError, FragmentNeedsSplit).
func ResumesFromFragment(spec Spec) bool {
	t := spec.resumeToken()
	return t != nil && t.HasFragment
}

// FragmentNeedsSplit is the refusal of a fragment's token by a pipeline
// without $changeStreamSplitLargeEvent.
func FragmentNeedsSplit() error {
	return mongoerr.New(mongoerr.ChangeStreamFatalError, "To resume from a split event, the $changeStream pipeline must include a $changeStreamSplitLargeEvent stage")
}

// Split returns what the stream returns for ev: ev itself, or its
// fragments (less those a resume has seen).
func (sp *Splitter) Split(ev bsoncore.Document) ([]bsoncore.Document, error) {
	skip := 0
	if r := sp.resume; r != nil {
		sp.resume = nil
		tok, err := idToken(ev)
		if err != nil {
			return nil, err
		}
		same := *r
		same.Fragment, same.HasFragment = 0, false
		if bytes.Equal(tok, same.Doc()) {
			if len(ev) <= MaxEventSize {
				return nil, mongoerr.New(mongoerr.ChangeStreamFatalError, "Attempted to resume from a split event fragment, but the event in the resumed stream was not large enough to be split")
			}
			skip = int(r.Fragment) + 1
		}
	}
	if len(ev) <= MaxEventSize {
		return []bsoncore.Document{ev}, nil
	}
	frags, err := split(ev)
	if err != nil {
		return nil, err
	}
	if skip > len(frags) {
		return nil, mongoerr.New(mongoerr.ChangeStreamFatalError, "Attempted to resume from a split event, but the resumed stream produced a different split. Ensure that the pipeline used to resume is the same as the original")
	}
	return frags[skip:], nil
}

// idToken is an event's _id, its resume token.
func idToken(ev bsoncore.Document) (bsoncore.Document, error) {
	tok, ok := ev.Lookup("_id").DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.ChangeStreamFatalError, "an event without its resume token in _id cannot be split")
	}
	return tok, nil
}

// split cuts ev into fragments of at most MaxEventSize less its token's
// size, filling each greedily with the fields left, smallest first.
func split(ev bsoncore.Document) ([]bsoncore.Document, error) {
	rawTok, err := idToken(ev)
	if err != nil {
		return nil, err
	}
	t, err := ParseToken(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: rawTok})
	if err != nil {
		return nil, err
	}
	els, err := ev.Elements()
	if err != nil {
		return nil, err
	}
	els = slices.DeleteFunc(els, func(e bsoncore.Element) bool { return e.Key() == "_id" })
	slices.SortStableFunc(els, func(a, b bsoncore.Element) int {
		if len(a) != len(b) {
			return len(a) - len(b)
		}
		return bytes.Compare(a.KeyBytes(), b.KeyBytes())
	})
	limit := MaxEventSize - len(rawTok)
	var frags [][]bsoncore.Element
	var toks []bsoncore.Document
	for i := 0; i < len(els); {
		t.Fragment, t.HasFragment = int32(len(frags)), true
		tok := t.Doc()
		// The fragment's own fields: _id, and splitEvent with numbers of
		// the size they will have.
		size := len(bsoncore.BuildDocumentFromElements(nil,
			bsoncore.AppendDocumentElement(nil, "_id", tok),
			bsoncore.AppendDocumentElement(nil, "splitEvent", splitEvent(0, 0))))
		start := i
		for {
			size += len(els[i])
			i++
			if i == len(els) || size+len(els[i]) > limit {
				break
			}
		}
		if size > limit {
			return nil, mongoerr.New(mongoerr.SplitFragmentTooLarge, "Splitting change event failed: fragment size %d is greater than maximum allowed fragment size %d", size, limit)
		}
		frags = append(frags, els[start:i])
		toks = append(toks, tok)
	}
	out := make([]bsoncore.Document, len(frags))
	for n, fields := range frags {
		b := bsoncore.NewDocumentBuilder().AppendDocument("_id", toks[n]).
			AppendDocument("splitEvent", splitEvent(int32(n+1), int32(len(frags))))
		for _, e := range fields {
			b.AppendValue(e.Key(), e.Value())
		}
		out[n] = b.Build()
	}
	return out, nil
}

func splitEvent(fragment, of int32) bsoncore.Document {
	return bsoncore.NewDocumentBuilder().AppendInt32("fragment", fragment).AppendInt32("of", of).Build()
}
