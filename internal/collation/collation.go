package collation

import (
	"bytes"
	"runtime"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
	"golang.org/x/text/collate"
	"golang.org/x/text/language"

	"github.com/cairndb/cairn/internal/mongoerr"
)

// Version is the collator version every spec reports: MongoDB 7.0's ICU
// version, so that specs round-trip (see the package comment).
const Version = "57.1"

// Spec is a normalized collation: every field set, as MongoDB shows it.
type Spec struct {
	Locale          string
	CaseLevel       bool
	CaseFirst       string // "upper", "lower" or "off"
	Strength        int    // 1 to 5
	NumericOrdering bool
	Alternate       string // "non-ignorable" or "shifted"
	MaxVariable     string // "punct" or "space"
	Normalization   bool
	Backwards       bool
}

// Document is the spec as MongoDB writes it, version included.
func (s Spec) Document() bsoncore.Document {
	return bsoncore.NewDocumentBuilder().
		AppendString("locale", s.Locale).
		AppendBoolean("caseLevel", s.CaseLevel).
		AppendString("caseFirst", s.CaseFirst).
		AppendInt32("strength", int32(s.Strength)).
		AppendBoolean("numericOrdering", s.NumericOrdering).
		AppendString("alternate", s.Alternate).
		AppendString("maxVariable", s.MaxVariable).
		AppendBoolean("normalization", s.Normalization).
		AppendBoolean("backwards", s.Backwards).
		AppendString("version", Version).
		Build()
}

// Collator compares strings under one Spec. Safe for concurrent use; nil is
// the simple collation.
type Collator struct {
	spec Spec
	doc  bsoncore.Document
	tag  language.Tag
	// swapCase implements caseFirst "upper" (see the package comment).
	swapCase bool
	// byKey compares through keys: x/text's Compare ignores primary
	// weights when alternate is "shifted" (its TODO), its Key does not.
	byKey bool
	// free holds idle workers: x/text collators are not safe for
	// concurrent use, and building one costs far more than a comparison,
	// so workers are kept (a channel, not a sync.Pool, which every GC
	// empties).
	free chan *worker
}

type worker struct {
	c   *collate.Collator
	buf collate.Buffer
	a   []byte // case-swapped copies
	b   []byte
}

// Spec is the collator's normalized spec.
func (c *Collator) Spec() Spec { return c.spec }

// Document is the normalized spec as a document (shared: do not modify).
func (c *Collator) Document() bsoncore.Document { return c.doc }

// Equal reports whether a and b order strings identically: both simple
// (nil), or the same normalized spec ("One spec, one order").
func Equal(a, b *Collator) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.spec == b.spec
}

func (c *Collator) get() *worker {
	select {
	case w := <-c.free:
		return w
	default:
		return &worker{c: collate.New(c.tag)}
	}
}

// put keeps w for the next comparison, unless enough are idle already.
func (c *Collator) put(w *worker) {
	select {
	case c.free <- w:
	default:
	}
}

// Compare returns -1, 0 or +1 as a orders before, equal to or after b. A
// nil Collator compares bytewise (the simple collation).
func (c *Collator) Compare(a, b []byte) int {
	if c == nil {
		return bytes.Compare(a, b)
	}
	w := c.get()
	if c.swapCase {
		w.a, w.b = swapCase(w.a[:0], a), swapCase(w.b[:0], b)
		a, b = w.a, w.b
	}
	var r int
	if c.byKey {
		w.buf.Reset()
		ka := w.c.Key(&w.buf, a)
		r = bytes.Compare(ka, w.c.Key(&w.buf, b))
	} else {
		r = w.c.Compare(a, b)
	}
	c.put(w)
	return r
}

// AppendKey appends the collation key of s to dst: keys compare bytewise
// as their strings compare ("Keys order as Compare"). A nil Collator's key
// is the string itself.
func (c *Collator) AppendKey(dst, s []byte) []byte {
	if c == nil {
		return append(dst, s...)
	}
	w := c.get()
	if c.swapCase {
		w.a = swapCase(w.a[:0], s)
		s = w.a
	}
	w.buf.Reset()
	dst = append(dst, w.c.Key(&w.buf, s)...)
	c.put(w)
	return dst
}

// swapCase appends s with the case of each letter swapped, where the swap
// maps one rune to one rune both ways.
func swapCase(dst, s []byte) []byte {
	for len(s) > 0 {
		r, n := utf8.DecodeRune(s)
		switch {
		case unicode.IsUpper(r):
			if l := unicode.ToLower(r); unicode.ToUpper(l) == r {
				r = l
			}
		case unicode.IsLower(r):
			if u := unicode.ToUpper(r); unicode.ToLower(u) == r {
				r = u
			}
		}
		if r == utf8.RuneError && n == 1 {
			dst = append(dst, s[0])
		} else {
			dst = utf8.AppendRune(dst, r)
		}
		s = s[n:]
	}
	return dst
}

// cache holds one Collator per normalized spec, so that a request pays for
// parsing its collation document, not for building a collator.
var cache sync.Map // Spec → *Collator

// Parse reads a collation document as MongoDB 7.0 does. {locale: "simple"}
// gives nil (the simple collation); an empty document is refused.
func Parse(d bsoncore.Document) (*Collator, error) {
	spec, simple, err := parseSpec(d)
	if err != nil || simple {
		return nil, err
	}
	return ForSpec(spec)
}

// ForSpec returns the Collator of a normalized spec.
func ForSpec(spec Spec) (*Collator, error) {
	if c, ok := cache.Load(spec); ok {
		return c.(*Collator), nil
	}
	base := strings.ReplaceAll(spec.Locale, "_", "-")
	ext := extension(spec)
	if spec.Locale == "en_US_POSIX" {
		base, ext = "en-US", ext+"-va-posix" // x/text's name for ICU's en_US_POSIX
	}
	tag, err := language.Parse(base + ext)
	if err != nil {
		return nil, mongoerr.New(mongoerr.BadValue, "Field 'locale' is invalid in: %s", spec.Document())
	}
	c := &Collator{spec: spec, doc: spec.Document(), tag: tag, swapCase: spec.CaseFirst == "upper", byKey: spec.Alternate == "shifted",
		free: make(chan *worker, 4*runtime.GOMAXPROCS(0))}
	got, _ := cache.LoadOrStore(spec, c)
	return got.(*Collator), nil
}

// extension is the BCP 47 -u- extension that sets spec's options in x/text.
func extension(s Spec) string {
	var b strings.Builder
	b.WriteString("-u-ks-")
	b.WriteString([]string{"", "level1", "level2", "level3", "level4", "identic"}[s.Strength])
	if s.CaseLevel {
		b.WriteString("-kc-true")
	}
	if s.Backwards {
		b.WriteString("-kb-true")
	}
	if s.NumericOrdering {
		b.WriteString("-kn-true")
	}
	if s.Alternate == "shifted" {
		b.WriteString("-ka-shifted")
	}
	return b.String()
}
