package fts

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Sensitivity says which differences between words count: by default
// (both false) text search folds case and removes diacritics, as MongoDB's
// text index version 3 does.
type Sensitivity struct {
	Case, Diacritic bool
}

// delimiterTables are the Unicode properties whose characters separate
// words, as MongoDB's text index version 3 generates its delimiter list
// (gen_delimiter_list.py): white space, dashes, hyphens, quotation marks,
// terminal punctuation, pattern syntax and sentence terminators. Letters,
// digits, marks, '_' and most symbols are parts of words.
var delimiterTables = []*unicode.RangeTable{
	unicode.White_Space, unicode.Dash, unicode.Hyphen, unicode.Quotation_Mark,
	unicode.Terminal_Punctuation, unicode.Pattern_Syntax, unicode.Sentence_Terminal,
}

// asciiDelimiters is delimiterTables over ASCII, for the fast path.
var asciiDelimiters = func() (t [utf8.RuneSelf]bool) {
	for r := range rune(utf8.RuneSelf) {
		t[r] = unicode.IsOneOf(delimiterTables, r)
	}
	return t
}()

// isDelimiter reports whether r separates words. In English the apostrophe
// does not ("don't" is one word, which the English stemmer handles), as in
// MongoDB.
func isDelimiter(r rune, english bool) bool {
	if r < utf8.RuneSelf {
		return asciiDelimiters[r] && !(english && r == '\'')
	}
	return unicode.IsOneOf(delimiterTables, r)
}

// words calls f with each word of s, in order, as it appears in s.
func words(s string, english bool, f func(w string)) {
	start := -1
	for i, r := range s {
		if isDelimiter(r, english) {
			if start >= 0 {
				f(s[start:i])
				start = -1
			}
			continue
		}
		if start < 0 {
			start = i
		}
	}
	if start >= 0 {
		f(s[start:])
	}
}

// fold returns w with case folded unless caseSensitive and diacritics
// removed unless diacriticSensitive.
func fold(w string, caseSensitive, diacriticSensitive bool) string {
	ascii := true
	for i := 0; i < len(w); i++ {
		if w[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	if !caseSensitive {
		if ascii {
			w = lowerASCII(w)
		} else {
			w = strings.ToLower(w)
		}
	}
	if !diacriticSensitive && !ascii {
		w = stripDiacritics(w)
	}
	return w
}

func lowerASCII(w string) string {
	for i := 0; i < len(w); i++ {
		if 'A' <= w[i] && w[i] <= 'Z' {
			b := []byte(w)
			for j := i; j < len(b); j++ {
				if 'A' <= b[j] && b[j] <= 'Z' {
					b[j] += 'a' - 'A'
				}
			}
			return string(b)
		}
	}
	return w
}

// stripDiacritics decomposes w (NFD), drops the combining marks, and
// recomposes what is left (NFC).
func stripDiacritics(w string) string {
	d := norm.NFD.String(w)
	var b strings.Builder
	b.Grow(len(d))
	for _, r := range d {
		if unicode.Is(unicode.Mn, r) {
			continue
		}
		b.WriteRune(r)
	}
	return norm.NFC.String(b.String())
}

// Terms calls f with each term of text in language l, as MongoDB's
// version 3 tokenizer makes them: each word lower-cased (Turkish's own way
// in Turkish); dropped if a stop word; stemmed (kept in its case when s.Case,
// the stemmer seeing the diacritics); then its diacritics removed unless
// s.Diacritic. This is what the index stores (with the default
// Sensitivity) and what a query's words become.
func Terms(l *Language, text string, s Sensitivity, f func(term string)) {
	words(text, l.english, func(w string) {
		lower := l.lower(w)
		if l.IsStopWord(lower) {
			return
		}
		t := lower
		if s.Case {
			t = w
		}
		t = l.Stem(t)
		if !s.Diacritic {
			t = stripDiacriticsOf(t)
		}
		f(t)
	})
}

// stripDiacriticsOf removes diacritics, skipping ASCII quickly.
func stripDiacriticsOf(w string) string {
	for i := 0; i < len(w); i++ {
		if w[i] >= utf8.RuneSelf {
			return stripDiacritics(w)
		}
	}
	return w
}
