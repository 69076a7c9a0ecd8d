package expr

import (
	"github.com/cairndb/cairn/internal/mongoerr"
	"regexp"
	"regexp/syntax"
	"strings"
	"sync"
	"unicode/utf8"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Regular expression operators: $regexMatch (a boolean), $regexFind (the
// first match as {match, idx, captures}) and $regexFindAll (every match).
// Arguments are {input, regex, options}; regex is a string or a BSON
// regex, options the flags i, m, s, x and u. A null or missing input or regex
// means "no match" (false, null, []).
//
// MongoDB uses PCRE; Cairn uses Go's RE2 syntax, which lacks backreferences
// and lookaround: such patterns fail to compile (51111). The x flag is
// implemented by removing unescaped whitespace and #-comments outside
// character classes before compiling; u (UTF-8) is accepted and implied.
// idx counts code points.

func init() {
	register("$regexMatch", parseRegex("$regexMatch", regexMatchMode))
	register("$regexFind", parseRegex("$regexFind", regexFindMode))
	register("$regexFindAll", parseRegex("$regexFindAll", regexFindAllMode))
}

const (
	codeRegexMissingInput = mongoerr.RegexMissingInput
	codeRegexMissingRegex = mongoerr.RegexMissingRegex
	codeRegexUnknownArg   = mongoerr.RegexUnknownArg
	codeRegexNotObject    = mongoerr.RegexNotObject
	codeRegexInputType    = mongoerr.RegexInputType
	codeRegexRegexType    = mongoerr.RegexRegexType
	codeRegexOptionsType  = mongoerr.RegexOptionsType
	codeRegexOptionsTwice = mongoerr.RegexOptionsTwice
	codeRegexBadFlag      = mongoerr.RegexBadFlag
	codeRegexNullInRegex  = mongoerr.RegexNullInRegex
	codeRegexNullInOpts   = mongoerr.RegexNullInOpts
	codeRegexCompile      = mongoerr.RegexCompile
)

type regexMode int

const (
	regexMatchMode regexMode = iota
	regexFindMode
	regexFindAllMode
)

type regexExpr struct {
	op                    string
	mode                  regexMode
	input, regex, options Expr
	// cache holds the compiled pattern when regex and options are
	// constants (the common case), so it is compiled once.
	cache *regexCache
}

type regexCache struct {
	once sync.Once
	re   *regexp.Regexp
	err  error
}

func isConstant(e Expr) bool {
	_, ok := e.(constant)
	return ok
}

func parseRegex(op string, mode regexMode) parser {
	spec := namedArgs{op: op, names: []string{"input", "regex", "options"},
		notObject: codeRegexNotObject, notObjMsg: "%s expects an object of named arguments but found: %s",
		unknown: codeRegexUnknownArg, unknownMsg: foundUnknownArg,
		required: []requiredArg{
			{"input", codeRegexMissingInput, "%s requires 'input' parameter"},
			{"regex", codeRegexMissingRegex, "%s requires 'regex' parameter"},
		}}
	return func(arg bsoncore.Value, s *Scope) (Expr, error) {
		args, err := spec.parse(arg, s)
		if err != nil {
			return nil, err
		}
		r := regexExpr{op: op, mode: mode, input: args["input"], regex: args["regex"], options: args["options"]}
		if isConstant(r.regex) && (r.options == nil || isConstant(r.options)) {
			r.cache = &regexCache{}
		}
		return r, nil
	}
}

func (r regexExpr) Eval(ctx *Context) (bsoncore.Value, error) {
	in, err := r.input.Eval(ctx)
	if err != nil {
		return Missing, err
	}
	if !IsNullish(in) && in.Type != bsoncore.TypeString {
		return Missing, errorf(codeRegexInputType, "%s needs 'input' to be of type string", r.op)
	}
	var re *regexp.Regexp
	if r.cache != nil {
		r.cache.once.Do(func() { r.cache.re, r.cache.err = r.compile(ctx) })
		re, err = r.cache.re, r.cache.err
	} else {
		re, err = r.compile(ctx)
	}
	if err != nil {
		return Missing, err
	}
	if re == nil || IsNullish(in) {
		return r.noMatch(), nil
	}
	s, _ := stringOf(in)
	switch r.mode {
	case regexMatchMode:
		return Bool(re.MatchString(s)), nil
	case regexFindMode:
		m := re.FindStringSubmatchIndex(s)
		if m == nil {
			return Null, nil
		}
		return matchDoc(s, m, utf8.RuneCountInString(s[:m[0]])), nil
	}
	var out []bsoncore.Value
	// Matches come in order: their code-point offsets are counted on
	// from the previous match, not from the start each time (a 10 MiB
	// string with a million matches took hours counted from the start).
	at, runes := 0, 0
	err = findAllInterruptible(re, s, ctx.interrupted, func(m []int) {
		runes += utf8.RuneCountInString(s[at:m[0]])
		at = m[0]
		out = append(out, matchDoc(s, m, runes))
	})
	if err != nil {
		return Missing, err
	}
	return Array(out), nil
}

// findAllChunk is how many matches findAllInterruptible asks the regexp
// package for at a time; the deadline is checked between chunks.
// findAllLong is the input length from which it searches in chunks.
const (
	findAllChunk = 1024
	findAllLong  = 64 << 10
)

// findAllInterruptible calls each with the matches
// re.FindAllStringSubmatchIndex(s, -1) returns, in order, and checks
// interrupted between chunks of them: the regexp package finds every match
// of a call before it returns (a 10 MiB string of a million matches took
// seconds past maxTimeMS under -race). A chunk continues from the end of
// the last one on s[pos:], which finds what the whole search finds from pos
// unless the pattern looks behind its start (^, \b, \B: those search the
// whole string in one call, the known gap RELIABILITY.md lists for a single
// match); an empty match at the start of a chunk abuts the last match and is
// dropped, as the whole search drops it. TestFindAllInterruptible compares
// it with FindAllStringSubmatchIndex.
func findAllInterruptible(re *regexp.Regexp, s string, interrupted func() error, each func(m []int)) error {
	if len(s) < findAllLong || looksBehind(re) {
		for i, m := range re.FindAllStringSubmatchIndex(s, -1) {
			if i%findAllChunk == findAllChunk-1 {
				if err := interrupted(); err != nil {
					return err
				}
			}
			each(m)
		}
		return nil
	}
	prevEnd := -1
	for pos := 0; ; {
		ms := re.FindAllStringSubmatchIndex(s[pos:], findAllChunk)
		for _, m := range ms {
			if m[0] == 0 && m[1] == 0 && pos == prevEnd {
				continue // an empty match abutting the last chunk's last match
			}
			for j := range m {
				if m[j] >= 0 {
					m[j] += pos
				}
			}
			each(m)
		}
		if len(ms) < findAllChunk {
			return nil
		}
		// With two or more matches in a chunk its last ends past pos:
		// the search moves on.
		pos = ms[len(ms)-1][1] // shifted to s above
		prevEnd = pos
		if err := interrupted(); err != nil {
			return err
		}
	}
}

// looksBehind tells whether re has an assertion about the text before the
// position it is tried at (the start of the text or of a line, a word
// boundary): such a pattern matches differently on a suffix of the input.
func looksBehind(re *regexp.Regexp) bool {
	t, err := syntax.Parse(re.String(), syntax.Perl)
	if err != nil {
		return true
	}
	var walk func(*syntax.Regexp) bool
	walk = func(t *syntax.Regexp) bool {
		switch t.Op {
		case syntax.OpBeginLine, syntax.OpBeginText, syntax.OpWordBoundary, syntax.OpNoWordBoundary:
			return true
		}
		for _, sub := range t.Sub {
			if walk(sub) {
				return true
			}
		}
		return false
	}
	return walk(t)
}

func (r regexExpr) noMatch() bsoncore.Value {
	switch r.mode {
	case regexMatchMode:
		return Bool(false)
	case regexFindMode:
		return Null
	}
	return Array(nil)
}

// compile evaluates regex and options and compiles them; a nil regexp
// means the pattern was null or missing.
func (r regexExpr) compile(ctx *Context) (*regexp.Regexp, error) {
	rv, err := r.regex.Eval(ctx)
	if err != nil {
		return nil, err
	}
	var pattern, flags string
	switch {
	case IsNullish(rv):
	case rv.Type == bsoncore.TypeString:
		pattern, _ = stringOf(rv)
	case rv.Type == bsoncore.TypeRegex:
		pattern, flags, _ = rv.RegexOK()
	default:
		return nil, errorf(codeRegexRegexType, "%s needs 'regex' to be of type string or regex", r.op)
	}
	if r.options != nil {
		ov, err := r.options.Eval(ctx)
		if err != nil {
			return nil, err
		}
		if !IsNullish(ov) {
			opts, ok := stringOf(ov)
			if !ok {
				return nil, errorf(codeRegexOptionsType, "%s needs 'options' to be of type string", r.op)
			}
			if opts != "" && flags != "" {
				return nil, errorf(codeRegexOptionsTwice, "%s: found regex option(s) specified in both 'regex' and 'option' fields", r.op)
			}
			if opts != "" {
				flags = opts
			}
		}
	}
	if IsNullish(rv) {
		return nil, nil
	}
	if strings.IndexByte(pattern, 0) >= 0 {
		return nil, errorf(codeRegexNullInRegex, "%s: regular expression cannot contain an embedded null byte", r.op)
	}
	if strings.IndexByte(flags, 0) >= 0 {
		return nil, errorf(codeRegexNullInOpts, "%s: regular expression options cannot contain an embedded null byte", r.op)
	}
	return compileRegex(r.op, pattern, flags)
}

// compileRegex compiles a MongoDB pattern with its flags in Go syntax.
func compileRegex(op, pattern, flags string) (*regexp.Regexp, error) {
	var goFlags strings.Builder
	for _, f := range flags {
		switch f {
		case 'i', 'm', 's':
			goFlags.WriteRune(f)
		case 'x':
			pattern = stripExtended(pattern)
		case 'u':
			// PCRE's UTF-8 mode: Go's regexps always are.
		default:
			return nil, errorf(codeRegexBadFlag, "%s: invalid flag in regex options: %c", op, f)
		}
	}
	if goFlags.Len() > 0 {
		pattern = "(?" + goFlags.String() + ")" + pattern
	}
	re, err := regexp.Compile(pattern)
	if err != nil {
		return nil, errorf(codeRegexCompile, "Invalid Regex in %s: %v", op, err)
	}
	return re, nil
}

// stripExtended removes what PCRE's extended mode ignores: whitespace and
// comments from # to the end of the line, outside character classes and
// escapes.
func stripExtended(p string) string {
	var b strings.Builder
	inClass, comment := false, false
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case comment:
			comment = c != '\n'
		case c == '\\' && i+1 < len(p):
			b.WriteByte(c)
			i++
			b.WriteByte(p[i])
		case inClass:
			inClass = c != ']'
			b.WriteByte(c)
		case c == '[':
			inClass = true
			b.WriteByte(c)
		case c == '#':
			comment = true
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
		default:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// matchDoc is {match, idx, captures} for the submatch indexes m of s; idx
// is the match's offset in code points.
func matchDoc(s string, m []int, idx32 int) bsoncore.Value {
	caps := make([]bsoncore.Value, 0, len(m)/2-1)
	for g := 2; g < len(m); g += 2 {
		if m[g] < 0 {
			caps = append(caps, Null)
			continue
		}
		caps = append(caps, String(s[m[g]:m[g+1]]))
	}
	idx, buf := bsoncore.AppendDocumentStart(nil)
	buf = bsoncore.AppendStringElement(buf, "match", s[m[0]:m[1]])
	buf = bsoncore.AppendInt32Element(buf, "idx", int32(idx32))
	buf = bsoncore.AppendValueElement(buf, "captures", Array(caps))
	buf, _ = bsoncore.AppendDocumentEnd(buf, idx)
	return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: buf}
}
