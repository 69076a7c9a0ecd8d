package query

import (
	"bytes"
	"regexp"
	"strings"

	"github.com/cairndb/cairn/internal/mongoerr"
)

// MongoDB evaluates $regex with PCRE; Cairn uses Go's RE2-based regexp,
// which is linear-time but lacks some of PCRE. compileRegex translates what
// can be translated and refuses, with a clear message, what cannot:
//
//   - options i, m, s map to RE2 flags; x (extended) is applied here by
//     dropping unescaped whitespace and #-comments outside classes; u is
//     accepted (Go is always UTF-8);
//   - PCRE's "$" without m also matches before a final newline, so it
//     becomes (?:\n?\z); \Z likewise; \h \H \v \V \R \e and \s (which in
//     PCRE includes the vertical tab) become equivalent classes;
//   - (?#…) comments are dropped;
//   - lookahead, lookbehind, backreferences, atomic groups, possessive
//     quantifiers, recursion, conditionals, \G and \K have no RE2
//     equivalent: BadValue, "… is not supported".
//
// A pattern that is invalid for both engines gets MongoDB's code 51091.

// compiledRegex is a pattern ready to match.
type compiledRegex struct {
	re *regexp.Regexp
	// literal is set when the pattern is a plain string with no
	// metacharacters and no options: a substring test is enough.
	literal []byte
	isLit   bool
}

func (c *compiledRegex) match(s []byte) bool {
	if c.isLit {
		return bytes.Contains(s, c.literal)
	}
	return c.re.Match(s)
}

const regexMeta = `\.+*?()|[]{}^$#`

func compileRegex(pattern, flags string) (*compiledRegex, error) {
	var goFlags []byte
	extended, multiline := false, false
	for i := 0; i < len(flags); i++ {
		switch c := flags[i]; c {
		case 'i', 's':
			goFlags = append(goFlags, c)
		case 'm':
			goFlags = append(goFlags, c)
			multiline = true
		case 'x':
			extended = true
		case 'u':
		default:
			return nil, errorf(codeRegexBadFlag, "invalid flag in regex options: %c", c)
		}
	}
	if strings.IndexByte(pattern, 0) >= 0 {
		return nil, errorf(codeRegexInvalid, "Regular expression is invalid: pattern contains a null byte")
	}
	if len(goFlags) == 0 && !extended && !strings.ContainsAny(pattern, regexMeta) {
		return &compiledRegex{literal: []byte(pattern), isLit: true}, nil
	}
	translated, err := translatePCRE(pattern, extended, multiline)
	if err != nil {
		return nil, err
	}
	if len(goFlags) > 0 {
		translated = "(?" + string(goFlags) + ")" + translated
	}
	re, err := regexp.Compile(translated)
	if err != nil {
		return nil, errorf(codeRegexInvalid, "Regular expression is invalid: %v", err)
	}
	return &compiledRegex{re: re}, nil
}

func unsupportedRegex(what, pattern string) error {
	return mongoerr.New(mongoerr.BadValue, "Regular expression /%s/ is not supported: %s has no equivalent in Cairn's regex engine (RE2)", pattern, what)
}

// Classes standing for PCRE escapes that RE2 lacks or defines differently.
const (
	classHSpace = `\t \x{A0}\x{1680}\x{180E}\x{2000}-\x{200A}\x{202F}\x{205F}\x{3000}`
	classVSpace = `\n\x0B\f\r\x{85}\x{2028}\x{2029}`
	classSpace  = `\t\n\x0B\f\r `
)

// translatePCRE rewrites a PCRE pattern into RE2 syntax.
func translatePCRE(p string, extended, multiline bool) (string, error) {
	if !multiline && hasInlineMultiline(p) {
		multiline = true
	}
	var b strings.Builder
	inClass := false
	for i := 0; i < len(p); i++ {
		c := p[i]
		switch {
		case c == '\\':
			if i+1 >= len(p) {
				return "", errorf(codeRegexInvalid, "Regular expression is invalid: \\ at end of pattern")
			}
			i++
			e := p[i]
			switch e {
			case 'Q':
				// \Q…\E quotes literally; RE2 supports it, copy through.
				end := strings.Index(p[i+1:], `\E`)
				if end < 0 {
					b.WriteString(regexp.QuoteMeta(p[i+1:]))
					i = len(p)
				} else {
					b.WriteString(regexp.QuoteMeta(p[i+1 : i+1+end]))
					i += 1 + end + 1
				}
			case 'Z':
				if inClass {
					return "", errorf(codeRegexInvalid, "Regular expression is invalid: \\Z in a class")
				}
				b.WriteString(`(?:\n?\z)`)
			case 'h', 'v':
				cls := classHSpace
				if e == 'v' {
					cls = classVSpace
				}
				if inClass {
					b.WriteString(cls)
				} else {
					b.WriteString("[" + cls + "]")
				}
			case 'H', 'V':
				cls := classHSpace
				if e == 'V' {
					cls = classVSpace
				}
				if inClass {
					return "", unsupportedRegex(`\`+string(e)+` inside a character class`, p)
				}
				b.WriteString("[^" + cls + "]")
			case 's':
				if inClass {
					b.WriteString(classSpace)
				} else {
					b.WriteString("[" + classSpace + "]")
				}
			case 'S':
				if inClass {
					b.WriteString(`\S`)
				} else {
					b.WriteString("[^" + classSpace + "]")
				}
			case 'R':
				b.WriteString(`(?:\r\n|[` + classVSpace + `])`)
			case 'e':
				b.WriteString(`\x1B`)
			case 'G', 'K':
				return "", unsupportedRegex(`\`+string(e), p)
			case 'g', 'k':
				return "", unsupportedRegex("a backreference", p)
			default:
				if e >= '1' && e <= '9' && !inClass {
					return "", unsupportedRegex("a backreference", p)
				}
				b.WriteByte('\\')
				b.WriteByte(e)
			}
		case inClass:
			if c == ']' {
				inClass = false
			}
			if c == '[' && i+1 < len(p) && p[i+1] == ':' {
				// POSIX class [:alpha:]: copy through to its closing ":]".
				end := strings.Index(p[i:], ":]")
				if end > 0 {
					b.WriteString(p[i : i+end+2])
					i += end + 1
					continue
				}
			}
			b.WriteByte(c)
		case c == '[':
			inClass = true
			b.WriteByte(c)
			// A ']' right after '[' or '[^' is a literal member.
			if i+1 < len(p) && p[i+1] == '^' {
				b.WriteByte('^')
				i++
			}
			if i+1 < len(p) && p[i+1] == ']' {
				b.WriteString(`\]`)
				i++
			}
		case extended && (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'):
			// Whitespace is insignificant in extended mode.
		case extended && c == '#':
			for i < len(p) && p[i] != '\n' {
				i++
			}
		case c == '(' && i+1 < len(p) && p[i+1] == '?':
			n, err := translateGroup(&b, p, i)
			if err != nil {
				return "", err
			}
			i = n
		case c == '$' && !multiline:
			b.WriteString(`(?:\n?\z)`)
		case (c == '+') && i > 0 && isQuantifierEnd(p, i-1):
			return "", unsupportedRegex("a possessive quantifier", p)
		default:
			b.WriteByte(c)
		}
	}
	return b.String(), nil
}

// isQuantifierEnd reports whether p[i] ends a quantifier, so that a '+'
// after it makes the quantifier possessive.
func isQuantifierEnd(p string, i int) bool {
	switch p[i] {
	case '*', '+', '?', '}':
		return i == 0 || p[i-1] != '\\'
	}
	return false
}

// translateGroup handles "(?" at p[start]; it writes the translation and
// returns the index of the last byte consumed.
func translateGroup(b *strings.Builder, p string, start int) (int, error) {
	rest := p[start+2:]
	switch {
	case strings.HasPrefix(rest, "#"):
		end := strings.IndexByte(rest, ')')
		if end < 0 {
			return 0, errorf(codeRegexInvalid, "Regular expression is invalid: missing ) after comment")
		}
		return start + 2 + end, nil
	case strings.HasPrefix(rest, "="), strings.HasPrefix(rest, "!"):
		return 0, unsupportedRegex("lookahead", p)
	case strings.HasPrefix(rest, "<="), strings.HasPrefix(rest, "<!"):
		return 0, unsupportedRegex("lookbehind", p)
	case strings.HasPrefix(rest, ">"):
		return 0, unsupportedRegex("an atomic group", p)
	case strings.HasPrefix(rest, "|"):
		return 0, unsupportedRegex("a branch-reset group", p)
	case strings.HasPrefix(rest, "("):
		return 0, unsupportedRegex("a conditional group", p)
	case strings.HasPrefix(rest, "R"), strings.HasPrefix(rest, "&"), len(rest) > 0 && (rest[0] >= '0' && rest[0] <= '9' || rest[0] == '+' || rest[0] == '-' && len(rest) > 1 && rest[1] >= '0' && rest[1] <= '9'):
		return 0, unsupportedRegex("recursion", p)
	case strings.HasPrefix(rest, "P="), strings.HasPrefix(rest, "P>"):
		return 0, unsupportedRegex("a backreference", p)
	case strings.HasPrefix(rest, "'"):
		end := strings.IndexByte(rest[1:], '\'')
		if end < 0 {
			return 0, errorf(codeRegexInvalid, "Regular expression is invalid: unterminated group name")
		}
		b.WriteString("(?P<" + rest[1:1+end] + ">")
		return start + 2 + 1 + end, nil
	}
	b.WriteString("(?")
	return start + 1, nil
}

// hasInlineMultiline reports whether the pattern turns on m with an inline
// flag group such as (?m) or (?im:…).
func hasInlineMultiline(p string) bool {
	for i := 0; i+2 < len(p); i++ {
		if p[i] != '(' || p[i+1] != '?' || (i > 0 && p[i-1] == '\\') {
			continue
		}
		for j := i + 2; j < len(p); j++ {
			switch c := p[j]; {
			case c == 'm':
				return true
			case c == ')' || c == ':' || c == '-':
				j = len(p)
			case c < 'a' || c > 'z':
				j = len(p)
			}
		}
	}
	return false
}
