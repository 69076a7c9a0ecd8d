package fts

import (
	"embed"
	"strings"
	"sync"
	"sync/atomic"
	"unicode"
	"unicode/utf8"

	"github.com/blevesearch/snowballstem"
	"github.com/blevesearch/snowballstem/danish"
	"github.com/blevesearch/snowballstem/dutch"
	"github.com/blevesearch/snowballstem/english"
	"github.com/blevesearch/snowballstem/finnish"
	"github.com/blevesearch/snowballstem/french"
	"github.com/blevesearch/snowballstem/german"
	"github.com/blevesearch/snowballstem/hungarian"
	"github.com/blevesearch/snowballstem/italian"
	"github.com/blevesearch/snowballstem/norwegian"
	"github.com/blevesearch/snowballstem/portuguese"
	"github.com/blevesearch/snowballstem/romanian"
	"github.com/blevesearch/snowballstem/russian"
	"github.com/blevesearch/snowballstem/spanish"
	"github.com/blevesearch/snowballstem/swedish"
	"github.com/blevesearch/snowballstem/turkish"

	"github.com/cairndb/cairn/internal/mongoerr"
)

// Language is one of the languages text search knows: how its words are
// stemmed and which of them are stop words. The zero Language is invalid;
// "none" is a Language with no stemmer and no stop words.
type Language struct {
	// Name is the language's canonical name ("english", "none").
	Name string
	stem func(*snowballstem.Env) bool
	stop map[string]bool
	// stems remembers words already stemmed (word → stem): text repeats
	// its words, and the Snowball algorithms cost microseconds a word.
	// It stops growing at maxCachedStems entries.
	stems  sync.Map
	cached atomic.Int64
	// english: the apostrophe is part of words (isDelimiter); turkish:
	// lower-casing maps I to ı and İ to i.
	english, turkish bool
}

// lower lower-cases w as MongoDB's tokenizer does for the language.
func (l *Language) lower(w string) string {
	ascii := true
	for i := 0; i < len(w); i++ {
		if w[i] >= utf8.RuneSelf {
			ascii = false
			break
		}
	}
	switch {
	case l.turkish:
		return strings.ToLowerSpecial(unicode.TurkishCase, w)
	case ascii:
		return lowerASCII(w)
	}
	return strings.ToLower(w)
}

// maxCachedStems bounds each language's stem cache (a few MiB).
const maxCachedStems = 1 << 16

//go:embed stopwords/*.txt
var stopFiles embed.FS

// languages are MongoDB 7.0's text search languages (FTSLanguage's list
// for text index version 3), by canonical name.
var languages = map[string]*Language{
	"danish": {Name: "danish", stem: danish.Stem}, "dutch": {Name: "dutch", stem: dutch.Stem},
	"english": {Name: "english", stem: english.Stem, english: true}, "finnish": {Name: "finnish", stem: finnish.Stem},
	"french": {Name: "french", stem: french.Stem}, "german": {Name: "german", stem: german.Stem},
	"hungarian": {Name: "hungarian", stem: hungarian.Stem}, "italian": {Name: "italian", stem: italian.Stem},
	"norwegian": {Name: "norwegian", stem: norwegian.Stem}, "portuguese": {Name: "portuguese", stem: portuguese.Stem},
	"romanian": {Name: "romanian", stem: romanian.Stem}, "russian": {Name: "russian", stem: russian.Stem},
	"spanish": {Name: "spanish", stem: spanish.Stem}, "swedish": {Name: "swedish", stem: swedish.Stem},
	"turkish": {Name: "turkish", stem: turkish.Stem, turkish: true}, "none": {Name: "none"},
}

// aliases are the ISO 639 codes MongoDB accepts for the languages.
var aliases = map[string]string{
	"da": "danish", "nl": "dutch", "en": "english", "fi": "finnish", "fr": "french", "de": "german",
	"hu": "hungarian", "it": "italian", "nb": "norwegian", "pt": "portuguese", "ro": "romanian",
	"ru": "russian", "es": "spanish", "sv": "swedish", "tr": "turkish",
}

var loadStops sync.Once

// LookupLanguage finds a language by name or ISO code, ignoring case, as
// MongoDB's FTSLanguage::make does; an unknown name is BadValue.
func LookupLanguage(name string) (*Language, error) {
	loadStops.Do(func() {
		for n, l := range languages {
			data, err := stopFiles.ReadFile("stopwords/" + n + ".txt")
			if err != nil {
				continue // "none"
			}
			l.stop = map[string]bool{}
			for _, w := range strings.Fields(string(data)) {
				l.stop[l.lower(w)] = true
			}
		}
	})
	key := strings.ToLower(name)
	if a, ok := aliases[key]; ok {
		key = a
	}
	if l, ok := languages[key]; ok {
		return l, nil
	}
	return nil, mongoerr.New(mongoerr.BadValue, "unsupported language: \"%s\" for text index version 3", name)
}

// IsStopWord reports whether w, lower-cased (diacritics kept, as MongoDB
// checks them), is one of the language's stop words.
func (l *Language) IsStopWord(w string) bool { return l.stop[w] }

// Stem returns the Snowball stem of w (w itself for "none").
func (l *Language) Stem(w string) string {
	if l.stem == nil {
		return w
	}
	if s, ok := l.stems.Load(w); ok {
		return s.(string)
	}
	env := snowballstem.NewEnv(w)
	l.stem(env)
	s := env.Current()
	if l.cached.Load() < maxCachedStems {
		if _, loaded := l.stems.LoadOrStore(w, s); !loaded {
			l.cached.Add(1)
		}
	}
	return s
}
