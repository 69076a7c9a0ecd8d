package fts

import (
	"slices"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
)

func lang(t *testing.T, name string) *Language {
	t.Helper()
	l, err := LookupLanguage(name)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestParseQuery checks $search parsing against the rules of MongoDB's
// FTSQueryImpl (fts_query_impl_test.cpp's cases, restated).
func TestParseQuery(t *testing.T) {
	cases := []struct {
		search              string
		s                   Sensitivity
		terms, negated      []string
		phrases, negPhrases []string
	}{
		{search: "coffee shop", terms: []string{"coffe", "shop"}},
		{search: "the coffee", terms: []string{"coffe"}},
		{search: "coffee -shop", terms: []string{"coffe"}, negated: []string{"shop"}},
		{search: "coffee - shop", terms: []string{"coffe", "shop"}},
		{search: "-a-b c", terms: []string{"c"}, negated: []string{"b"}}, // "a" is a stop word
		{search: "-milk-sugar tea", terms: []string{"tea"}, negated: []string{"milk", "sugar"}},
		{search: "\"coffee shop\" tea", terms: []string{"coffe", "shop", "tea"}, phrases: []string{"coffee shop"}},
		{search: "tea -\"coffee shop\"", terms: []string{"tea"}, negPhrases: []string{"coffee shop"}},
		{search: "tea - \"coffee shop\"", terms: []string{"coffe", "shop", "tea"}, phrases: []string{"coffee shop"}},
		{search: "\"a -b\"", terms: []string{"b"}, phrases: []string{"a -b"}},
		{search: "Café", terms: []string{"cafe"}},
		{search: "Café", s: Sensitivity{Diacritic: true}, terms: []string{"café"}},
		{search: "Café", s: Sensitivity{Case: true}, terms: []string{"Cafe"}},
		{search: "", terms: nil},
	}
	for _, c := range cases {
		q := ParseQuery(c.search, lang(t, "english"), c.s)
		check := func(what string, got, want []string) {
			if !slices.Equal(got, want) && !(len(got) == 0 && len(want) == 0) {
				t.Errorf("%q %+v: %s = %q, want %q", c.search, c.s, what, got, want)
			}
		}
		check("terms", q.Terms, c.terms)
		check("negated", q.NegatedTerms, c.negated)
		check("phrases", q.Phrases, c.phrases)
		check("negated phrases", q.NegatedPhrases, c.negPhrases)
	}
}

// TestTermsAgree is invariant "Terms agree": a scan of a query's bounds
// terms finds every document that holds one of its words, whatever their
// case and diacritics, in every language.
func TestTermsAgree(t *testing.T) {
	words := []string{"Running", "CAFÉS", "naïve", "Straße", "Überraschung", "корова", "çocuklar", "l'été"}
	for name := range languages {
		l := lang(t, name)
		spec := &Spec{Weights: map[string]float64{"t": 1}, Language: l, Override: "language"}
		for _, w := range words {
			doc, _ := bson.Marshal(bson.D{{Key: "t", Value: "x " + w + " y"}})
			scores, err := spec.Scores(doc)
			if err != nil {
				t.Fatal(err)
			}
			q := ParseQuery(w, l, Sensitivity{})
			for _, term := range q.BoundsTerms {
				if _, ok := scores[term]; !ok {
					t.Errorf("%s: query %q has term %q, the document's terms are %v", name, w, term, scores)
				}
			}
			if ok, err := q.Matches(spec, doc, true); err != nil || (!ok && len(q.Terms) > 0) {
				t.Errorf("%s: %q does not match its own document (%v)", name, w, err)
			}
		}
	}
}

func TestLookupLanguage(t *testing.T) {
	for _, n := range []string{"english", "EN", "Spanish", "es", "none", "nb", "tr"} {
		if _, err := LookupLanguage(n); err != nil {
			t.Errorf("%s: %v", n, err)
		}
	}
	for _, n := range []string{"klingon", "", "zh"} {
		if _, err := LookupLanguage(n); err == nil {
			t.Errorf("%q: want an error", n)
		}
	}
	if n := len(languages); n != 16 {
		t.Errorf("%d languages, want MongoDB's 15 and none", n)
	}
	for name, l := range languages {
		if name != "none" && len(l.stop) < 20 {
			t.Errorf("%s has %d stop words", name, len(l.stop))
		}
	}
}

// TestMatches checks phrases, negations and sensitivity on one document.
func TestMatches(t *testing.T) {
	spec := &Spec{Weights: map[string]float64{"t": 1, "u": 1}, Language: lang(t, "english"), Override: "language"}
	doc, _ := bson.Marshal(bson.D{{Key: "t", Value: "The Coffee Shop"}, {Key: "u", Value: "crème brûlée"}})
	cases := []struct {
		search string
		s      Sensitivity
		want   bool
	}{
		{"coffee", Sensitivity{}, true},
		{"tea", Sensitivity{}, false},
		{"coffee -shop", Sensitivity{}, false},
		{"coffee -tea", Sensitivity{}, true},
		{"\"coffee shop\"", Sensitivity{}, true},
		{"\"shop coffee\"", Sensitivity{}, false},
		{"coffee -\"coffee shop\"", Sensitivity{}, false},
		{"\"creme brulee\"", Sensitivity{}, true},
		{"\"creme brulee\"", Sensitivity{Diacritic: true}, false},
		{"\"crème brûlée\"", Sensitivity{Diacritic: true}, true},
		{"coffee", Sensitivity{Case: true}, false},
		{"Coffee", Sensitivity{Case: true}, true},
		{"\"coffee shop\"", Sensitivity{Case: true}, false},
	}
	for _, c := range cases {
		q := ParseQuery(c.search, spec.Language, c.s)
		got, err := q.Matches(spec, doc, true)
		if err != nil || got != c.want {
			t.Errorf("%q %+v: %v %v, want %v", c.search, c.s, got, err, c.want)
		}
	}
}

// TestTerms checks word boundaries and the order of MongoDB's tokenizer:
// lower-case, stop words, stem (seeing diacritics), then strip diacritics.
func TestTerms(t *testing.T) {
	cases := []struct {
		lang, text string
		s          Sensitivity
		want       []string
	}{
		{"english", "The dog's bowl, don't!", Sensitivity{}, []string{"dog", "bowl", "don't"}},
		{"french", "l'été d'hiver", Sensitivity{}, []string{"hiv"}}, // l, été and d are stop words
		{"english", "snake_case x-ray e-mail", Sensitivity{}, []string{"snake_cas", "x", "ray", "e", "mail"}},
		{"english", "Ünïcode Café", Sensitivity{Diacritic: true}, []string{"ünïcode", "café"}},
		{"english", "Running FAST", Sensitivity{Case: true}, []string{"Run", "FAST"}},
		{"turkish", "İSTANBUL", Sensitivity{}, []string{"istanbul"}},
		{"none", "The running", Sensitivity{}, []string{"the", "running"}},
		{"english", "a1 42 3.14", Sensitivity{}, []string{"a1", "42", "3", "14"}},
	}
	for _, c := range cases {
		var got []string
		Terms(lang(t, c.lang), c.text, c.s, func(term string) { got = append(got, term) })
		if !slices.Equal(got, c.want) {
			t.Errorf("%s %q %+v: %q, want %q", c.lang, c.text, c.s, got, c.want)
		}
	}
	// The stemmer sees diacritics: a French word is stemmed, then stripped.
	fr := lang(t, "french")
	var got []string
	Terms(fr, "économiques", Sensitivity{}, func(term string) { got = append(got, term) })
	if want := stripDiacritics(fr.Stem("économiques")); len(got) != 1 || got[0] != want {
		t.Errorf("french économiques: %q, want %q", got, want)
	}
}
