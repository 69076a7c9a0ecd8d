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

// isDelimiter reports whether r separates words: anything but a letter, a
// digit or a combining mark (MongoDB's version 3 tokenizer splits at
// Unicode white space, punctuation and symbols).
func isDelimiter(r rune) bool {
	if r < utf8.RuneSelf {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9')
	}
	return !(unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsMark(r))
}

// words calls f with each word of s, in order, as it appears in s.
func words(s string, f func(w string)) {
	start := -1
	for i, r := range s {
		if isDelimiter(r) {
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

// Terms calls f with each term of text in language l: each word folded by
// s, stop words dropped (judged on the fully folded word), and stemmed.
// This is what the index stores (with the default Sensitivity) and what a
// query's words become.
func Terms(l *Language, text string, s Sensitivity, f func(term string)) {
	words(text, func(w string) {
		folded := fold(w, false, false)
		if l.IsStopWord(folded) {
			return
		}
		if s.Case || s.Diacritic {
			folded = fold(w, s.Case, s.Diacritic)
		}
		f(l.Stem(folded))
	})
}
