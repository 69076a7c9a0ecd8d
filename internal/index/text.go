package index

import (
	"math"
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/fts"
	"github.com/cairndb/cairn/internal/keystring"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// A text index (MongoDB's FTSSpec, text index version 3) is stored with
// the key pattern {<prefix fields>, _fts: "text", _ftsx: 1, <suffix
// fields>}: a document has one key per term of its indexed strings, the
// term (a string) in the _fts part and the term's score (a double) in the
// _ftsx part, between the values of the other fields. The text fields of
// the pattern as given ({title: "text"}, {"$**": "text"}) become weights.

// textInfo is what a text index adds to its Spec.
type textInfo struct {
	spec    fts.Spec
	prefix  int               // fields before _fts
	weights bsoncore.Document // the listIndexes weights document
	lang    string            // default_language as listIndexes shows it
	over    string            // language_override
}

// IsText reports whether the spec is a text index.
func (s *Spec) IsText() bool { return s.gen == genText }

// Text is how a text index reads documents; nil for other indexes.
func (s *Spec) Text() *fts.Spec {
	if s.text == nil {
		return nil
	}
	return &s.text.spec
}

// TextPrefix is the number of key pattern fields before _fts: the fields a
// $text query must bind by equality.
func (s *Spec) TextPrefix() int { return s.text.prefix }

// prepareText checks a text index's key pattern and options (MongoDB's
// FTSSpec::fixSpec) and rewrites the key pattern into its stored form.
func (p *specParser) prepareText() error {
	elems, _ := p.s.Key.Elements()
	t := &textInfo{}
	weights := map[string]float64{}
	b := bsoncore.NewDocumentBuilder()
	var fields []Field
	stage := 0 // 0: prefix fields, 1: text fields, 2: suffix fields
	added := false
	for _, e := range elems {
		name, v := e.Key(), e.Value()
		isText := v.Type == bsoncore.TypeString && v.StringValue() == "text"
		switch {
		case name == "_fts":
			if !isText {
				return mongoerr.New(mongoerr.TextExpectFts, "expecting _fts:\"text\"")
			}
			stage, added = 1, true
			b.AppendString("_fts", "text")
			fields = append(fields, Field{Path: "_fts", Parts: []string{"_fts"}, Kind: Ascending})
		case name == "_ftsx":
			if numberValue(v) != 1 {
				return mongoerr.New(mongoerr.TextExpectFtsx, "expecting _ftsx:1")
			}
			if stage != 1 {
				return mongoerr.New(mongoerr.TextFtsxAfterFts, "expected _ftsx after _fts")
			}
			b.AppendInt32("_ftsx", 1)
			fields = append(fields, Field{Path: "_ftsx", Parts: []string{"_ftsx"}, Kind: Ascending})
		case isText:
			if stage == 2 {
				return mongoerr.New(mongoerr.TextFieldsApart, "'text' fields in index must all be adjacent")
			}
			if !added {
				b.AppendString("_fts", "text").AppendInt32("_ftsx", 1)
				fields = append(fields, Field{Path: "_fts", Parts: []string{"_fts"}, Kind: Ascending},
					Field{Path: "_ftsx", Parts: []string{"_ftsx"}, Kind: Ascending})
				added = true
			}
			stage = 1
			weights[name] = 1
		default:
			if f := numberValue(v); !isNumber(v.Type) || (f != 1 && f != -1) {
				return mongoerr.New(mongoerr.TextOtherKeyDirection, "expected value 1 or -1 for non-text key in compound index")
			}
			if stage == 1 {
				stage = 2
			}
			if stage == 0 {
				t.prefix++
			}
			b.AppendValue(name, v)
			f := Field{Path: name, Parts: strings.Split(name, "."), Kind: Ascending}
			if numberValue(v) < 0 {
				f.Kind = Descending
			}
			fields = append(fields, f)
		}
	}
	if !added {
		return cannotCreate("a text index needs a \"text\" field or _fts: \"text\"")
	}
	if w := p.spec.Lookup("weights"); w.Type != 0 {
		switch {
		case w.Type == bsoncore.TypeEmbeddedDocument:
			wel, _ := w.Document().Elements()
			for _, e := range wel {
				if !isNumber(e.Value().Type) {
					return mongoerr.New(mongoerr.TextWeightType, "weight for text index needs numeric type")
				}
				weights[e.Key()] = numberValue(e.Value())
			}
		case w.Type == bsoncore.TypeString && w.StringValue() == "$**":
			weights["$**"] = 1
		default:
			return mongoerr.New(mongoerr.TextWeightsType, "text index option 'weights' must be an object")
		}
	}
	names := make([]string, 0, len(weights))
	for n := range weights {
		names = append(names, n)
	}
	slices.Sort(names)
	wb := bsoncore.NewDocumentBuilder()
	t.spec.Weights = map[string]float64{}
	for _, n := range names {
		w := weights[n]
		if !(w > 0 && w < fts.MaxWordWeight) {
			return mongoerr.New(mongoerr.TextWeightRange, "score for word too high")
		}
		if n != "$**" {
			if err := checkWeightPath(n); err != nil {
				return err
			}
			t.spec.Weights[n] = w
		} else {
			t.spec.Wildcard = true
		}
		if w == math.Trunc(w) {
			wb.AppendInt32(n, int32(w))
		} else {
			wb.AppendDouble(n, w)
		}
	}
	t.weights = wb.Build()
	t.lang = "english"
	if v := p.spec.Lookup("default_language"); v.Type == bsoncore.TypeString {
		t.lang = v.StringValue()
	}
	l, err := fts.LookupLanguage(t.lang)
	if err != nil {
		return err
	}
	t.spec.Language = l
	t.over = "language"
	if v := p.spec.Lookup("language_override"); v.Type == bsoncore.TypeString {
		t.over = v.StringValue()
		if t.over == "" || t.over[0] == '$' || strings.IndexByte(t.over, '.') >= 0 {
			return mongoerr.New(mongoerr.TextOverrideInvalid, "language_override is not valid")
		}
	}
	t.spec.Override = t.over
	if v := p.spec.Lookup("textIndexVersion"); v.Type != 0 {
		if n := numberValue(v); n != 3 {
			return mongoerr.New(mongoerr.TextIndexVersionBad, "bad textIndexVersion: %s (Cairn builds text index version 3 only)", v)
		}
	}
	p.s.Key = b.Build()
	p.s.KeyPattern = fields
	p.s.text = t
	p.s.gen = genText
	return nil
}

// checkWeightPath checks a weight's field path (17294, 17291, 17292), and
// that it does not name a reserved field (17289).
func checkWeightPath(path string) error {
	if path == "" {
		return mongoerr.New(mongoerr.TextWeightEmpty, "weight cannot be on an empty field")
	}
	for _, part := range strings.Split(path, ".") {
		if part == "" {
			return mongoerr.New(mongoerr.TextWeightEmptyPart, "weight cannot have empty path component")
		}
		if part[0] == '$' {
			return mongoerr.New(mongoerr.TextWeightDollarPart, "weight cannot have path component with $ prefix")
		}
	}
	if path == "_fts" || path == "_ftsx" {
		return mongoerr.New(mongoerr.TextReservedField, "text index with reserved fields _fts/_ftsx not allowed")
	}
	return nil
}

// canonicalText is listIndexes' form of a text index (fixSpec's order):
// the options in the order given with key, weights, default_language and
// language_override in their stored form, the missing ones of those
// three appended, then textIndexVersion: 3; v, key and name come first.
func (p *specParser) canonicalText() bsoncore.Document {
	t := p.s.text
	b := bsoncore.NewDocumentBuilder().AppendInt32("v", int32(p.s.Version)).
		AppendDocument("key", p.s.Key).AppendString("name", p.s.Name)
	var hasW, hasL, hasO bool
	elems, _ := p.spec.Elements()
	for _, e := range elems {
		switch e.Key() {
		case "_id", "dropDups", "ns", "v", "key", "name", "collation", "textIndexVersion":
		case "weights":
			b.AppendDocument("weights", t.weights)
			hasW = true
		case "default_language":
			b.AppendString("default_language", t.lang)
			hasL = true
		case "language_override":
			b.AppendString("language_override", t.over)
			hasO = true
		default:
			b.AppendValue(e.Key(), e.Value())
		}
	}
	if !hasW {
		b.AppendDocument("weights", t.weights)
	}
	if !hasL {
		b.AppendString("default_language", t.lang)
	}
	if !hasO {
		b.AppendString("language_override", t.over)
	}
	return b.AppendInt32("textIndexVersion", 3).Build()
}

// textKeys makes a text index's keys: one per term of doc, between the
// values of the other fields (which may not be arrays: 16675).
func (s *Spec) textKeys(doc bsoncore.Document, dst [][]byte) ([][]byte, error) {
	scores, err := s.text.spec.Scores(doc)
	if err != nil || len(scores) == 0 {
		return dst, err
	}
	var pre, suf []byte
	for i, f := range s.KeyPattern {
		if f.Path == "_fts" || f.Path == "_ftsx" {
			continue
		}
		v, err := bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: doc}.Document().LookupErr(f.Parts...)
		if err != nil {
			v = bsoncore.Value{Type: bsoncore.TypeNull, Data: nil}
		}
		if v.Type == bsoncore.TypeArray {
			return dst, mongoerr.New(mongoerr.TextKeyArray, "cannot have a multi-key as a prefix or suffix of a text index: field %s", f.Path)
		}
		if i < s.text.prefix {
			pre = appendPart(pre, v, f.Kind == Descending)
		} else {
			suf = appendPart(suf, v, f.Kind == Descending)
		}
	}
	ks := keySet{dst}
	for term, score := range scores {
		k := append(ks.start(), pre...)
		k = keystring.Append(k, bsoncore.Value{Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, term)})
		k = keystring.Append(k, bsoncore.Value{Type: bsoncore.TypeDouble, Data: bsoncore.AppendDouble(nil, score)})
		ks.finish(append(k, suf...))
	}
	return ks.keys, nil
}

func appendPart(dst []byte, v bsoncore.Value, desc bool) []byte {
	if desc {
		return keystring.AppendDesc(dst, v)
	}
	return keystring.Append(dst, v)
}
