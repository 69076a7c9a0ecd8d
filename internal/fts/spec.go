package fts

import (
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
)

// Limits on weights, as MongoDB's FTSSpec has them.
const (
	// MaxWeight bounds a term's score in one document.
	MaxWeight = 1e9
	// MaxWordWeight bounds a field's weight: it must be below this.
	MaxWordWeight = MaxWeight / 10000
)

// Spec is what a text index says about its documents: which string fields
// it reads and with what weight, and in which language.
type Spec struct {
	// Weights maps each indexed dotted path to its weight; with Wildcard,
	// paths not listed weigh 1.
	Weights map[string]float64
	// Wildcard: every string field is indexed ("$**": "text").
	Wildcard bool
	// Language is the default language (default_language).
	Language *Language
	// Override is the field naming a document's own language
	// (language_override, "language" by default).
	Override string
}

// Strings calls f with each string the index reads in doc, with its
// weight and language, as MongoDB's FTSElementIterator walks a document:
// fields in order, into subdocuments and arrays (array elements keep the
// array's path), a (sub)document's override field naming the language of
// the strings under it and being no text itself.
func (s *Spec) Strings(doc bsoncore.Document, f func(text string, weight float64, lang *Language)) error {
	return s.walk(doc, "", s.Language, f)
}

func (s *Spec) walk(doc bsoncore.Document, prefix string, lang *Language, f func(string, float64, *Language)) error {
	l, err := s.languageOf(doc, lang)
	if err != nil {
		return err
	}
	elems, err := doc.Elements()
	if err != nil {
		return err
	}
	for _, e := range elems {
		if e.Key() == s.Override {
			continue
		}
		if err := s.value(e.Value(), prefix+e.Key(), l, f); err != nil {
			return err
		}
	}
	return nil
}

func (s *Spec) value(v bsoncore.Value, path string, l *Language, f func(string, float64, *Language)) error {
	switch v.Type {
	case bsoncore.TypeString:
		if w, ok := s.weight(path); ok {
			f(v.StringValue(), w, l)
		}
	case bsoncore.TypeEmbeddedDocument:
		if s.under(path) {
			return s.walk(v.Document(), path+".", l, f)
		}
	case bsoncore.TypeArray:
		if !s.under(path) {
			if _, ok := s.weight(path); !ok {
				return nil
			}
		}
		vals, err := v.Array().Values()
		if err != nil {
			return err
		}
		for _, x := range vals {
			if err := s.value(x, path, l, f); err != nil {
				return err
			}
		}
	}
	return nil
}

// weight is the weight of the strings at path, if the index reads them.
func (s *Spec) weight(path string) (float64, bool) {
	if w, ok := s.Weights[path]; ok {
		return w, true
	}
	return 1, s.Wildcard
}

// under reports whether some indexed path lies below path.
func (s *Spec) under(path string) bool {
	if s.Wildcard {
		return true
	}
	for p := range s.Weights {
		if len(p) > len(path) && p[len(path)] == '.' && strings.HasPrefix(p, path) {
			return true
		}
	}
	return false
}

// languageOf is the language of doc's strings: its override field's, or
// the enclosing one.
func (s *Spec) languageOf(doc bsoncore.Document, outer *Language) (*Language, error) {
	v, err := doc.LookupErr(s.Override)
	if err != nil {
		return outer, nil
	}
	if v.Type != bsoncore.TypeString {
		return nil, mongoerr.New(mongoerr.TextOverrideType, "found language override field in document with non-string type")
	}
	l, err := LookupLanguage(v.StringValue())
	if err != nil {
		return nil, mongoerr.New(mongoerr.TextOverrideUnsupported, "language override unsupported: %s", v.StringValue())
	}
	return l, nil
}

// Scores returns each term of doc and its score, as MongoDB's FTSSpec
// scores a document for its index keys: per string, a term's occurrences
// count 1, 1/2, 1/4, …, times the field's weight, times a coefficient
// 0.5 + 0.5·(occurrences / terms in the string), times 1.1 when the term is
// the whole string; a term's scores over the strings add up.
func (s *Spec) Scores(doc bsoncore.Document) (map[string]float64, error) {
	out := map[string]float64{}
	type tf struct {
		count int
		freq  float64
		exp   float64
	}
	var terms map[string]*tf
	err := s.Strings(doc, func(text string, weight float64, l *Language) {
		clear(terms)
		if terms == nil {
			terms = map[string]*tf{}
		}
		n := 0
		Terms(l, text, Sensitivity{}, func(t string) {
			d := terms[t]
			if d == nil {
				d = &tf{exp: 1}
				terms[t] = d
			} else {
				d.exp *= 2
			}
			d.count++
			d.freq += 1 / d.exp
			n++
		})
		for t, d := range terms {
			coeff := 0.5*float64(d.count)/float64(n) + 0.5
			adj := 1.0
			if len(text) == len(t) && strings.EqualFold(text, t) {
				adj += 0.1
			}
			out[t] += weight * d.freq * coeff * adj
		}
	})
	return out, err
}
