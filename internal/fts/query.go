package fts

import (
	"slices"
	"strings"
	"unicode"
)

// Query is a parsed $text search: the words and phrases the $search
// string names, in the query's language.
type Query struct {
	// Search is the $search string as given.
	Search string
	// Language is $language, or the index's default language.
	Language *Language
	Sensitivity
	// Terms are the positive terms, folded as Sensitivity says, stemmed,
	// sorted and without duplicates; NegatedTerms likewise for "-word".
	Terms, NegatedTerms []string
	// BoundsTerms are the positive terms fully folded: the index keys a
	// plan scans.
	BoundsTerms []string
	// Phrases and NegatedPhrases are the quoted phrases, as written.
	Phrases, NegatedPhrases []string
}

// ParseQuery parses a $search string as MongoDB's FTSQueryImpl does:
// words are separated by white space; '"' opens and closes a phrase (whose
// words are positive terms too); '-' right after white space (or at the
// start) negates the following word or phrase, and the negation lasts
// until the next white space ("-a-b" negates a and b); a negated phrase's
// words are not terms. Stop words are dropped from the terms.
func ParseQuery(search string, lang *Language, s Sensitivity) *Query {
	q := &Query{Search: search, Language: lang, Sensitivity: s}
	var pos, neg []string
	inNeg, inPhrase := false, false
	quote := 0
	prevSpace := true
	i := 0
	for i < len(search) {
		c := search[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f':
			prevSpace = true
			i++
			continue
		case c == '-':
			if !inPhrase && prevSpace {
				inNeg = true
			}
			i++
		case c == '"':
			if inPhrase {
				p := search[quote+1 : i]
				if inNeg {
					q.NegatedPhrases = append(q.NegatedPhrases, p)
				} else {
					q.Phrases = append(q.Phrases, p)
				}
				inPhrase = false
			} else {
				inPhrase = true
				if inNeg && prevSpace {
					inNeg = false
				}
				quote = i
			}
			i++
		default:
			j := i
			for j < len(search) && !strings.ContainsRune(" \t\n\r\v\f-\"", rune(search[j])) {
				j++
			}
			word := search[i:j]
			i = j
			switch {
			case inPhrase && inNeg:
			default:
				if inNeg && prevSpace {
					inNeg = false
				}
				if inNeg {
					neg = append(neg, word)
				} else {
					pos = append(pos, word)
				}
			}
		}
		prevSpace = false
	}
	add := func(words []string, s Sensitivity, dst *[]string) {
		for _, w := range words {
			Terms(lang, w, s, func(t string) { *dst = append(*dst, t) })
		}
		slices.Sort(*dst)
		*dst = slices.Compact(*dst)
	}
	add(pos, Sensitivity{}, &q.BoundsTerms)
	add(pos, s, &q.Terms)
	add(neg, s, &q.NegatedTerms)
	return q
}

// Matches reports whether doc, read through the index spec, satisfies the
// query beyond containing one of its bounds terms: when the query is case
// or diacritic sensitive, one of its terms as written; none of its negated
// terms; every phrase and none of the negated phrases. With checkTerms,
// the positive terms are checked in every case (for a document not known
// to come from an index scan of the terms).
func (q *Query) Matches(spec *Spec, doc []byte, checkTerms bool) (bool, error) {
	if checkTerms || q.Case || q.Diacritic {
		ok, err := q.hasTerm(spec, doc, q.Terms)
		if err != nil || !ok {
			return false, err
		}
	}
	if len(q.NegatedTerms) > 0 {
		bad, err := q.hasTerm(spec, doc, q.NegatedTerms)
		if err != nil || bad {
			return false, err
		}
	}
	for _, p := range q.Phrases {
		ok, err := q.hasPhrase(spec, doc, p)
		if err != nil || !ok {
			return false, err
		}
	}
	for _, p := range q.NegatedPhrases {
		bad, err := q.hasPhrase(spec, doc, p)
		if err != nil || bad {
			return false, err
		}
	}
	return true, nil
}

// hasTerm reports whether some string of doc has one of terms (sorted),
// tokenized in the string's language with the query's sensitivity.
func (q *Query) hasTerm(spec *Spec, doc []byte, terms []string) (bool, error) {
	if len(terms) == 0 {
		return false, nil
	}
	found := false
	err := spec.Strings(doc, func(text string, _ float64, l *Language) {
		if found {
			return
		}
		Terms(l, text, q.Sensitivity, func(t string) {
			if !found {
				_, found = slices.BinarySearch(terms, t)
			}
		})
	})
	return found, err
}

// hasPhrase reports whether some string of doc contains phrase, compared
// with the query's sensitivity.
func (q *Query) hasPhrase(spec *Spec, doc []byte, phrase string) (bool, error) {
	p := fold(phrase, q.Case, q.Diacritic)
	if strings.IndexFunc(p, func(r rune) bool { return !unicode.IsSpace(r) }) < 0 {
		return true, nil // an empty phrase is in every document
	}
	found := false
	err := spec.Strings(doc, func(text string, _ float64, _ *Language) {
		if !found && strings.Contains(fold(text, q.Case, q.Diacritic), p) {
			found = true
		}
	})
	return found, err
}

// Search parses a $text search against the index s: in language (by name
// or code), or s's default language when language is "".
func (s *Spec) Search(search, language string, sens Sensitivity) (*Query, error) {
	lang := s.Language
	if language != "" {
		l, err := LookupLanguage(language)
		if err != nil {
			return nil, err
		}
		lang = l
	}
	return ParseQuery(search, lang, sens), nil
}
