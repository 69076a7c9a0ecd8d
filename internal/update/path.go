package update

import (
	"strconv"
	"strings"
)

// A path is an update's dotted field path split into its components, as
// MongoDB's FieldRef: "a.$[x].b" is ["a", "$[x]", "b"].
type path []string

func (p path) String() string { return strings.Join(p, ".") }

// parsePath splits and checks a dotted path the way MongoDB's
// fieldchecker::isUpdatable does: no empty path, no empty component.
func parsePath(s string) (path, error) {
	if s == "" {
		return nil, errorf(codeEmptyFieldName, "An empty update path is not valid.")
	}
	p := path(strings.Split(s, "."))
	for _, c := range p {
		if c == "" {
			return nil, errorf(codeEmptyFieldName, "The update path '%s' contains an empty field name, which is not allowed.", s)
		}
	}
	return p, nil
}

// isPositional reports whether a component is the positional operator "$".
func isPositional(c string) bool { return c == "$" }

// isArrayFilter reports whether a component is "$[]" or "$[<identifier>]".
func isArrayFilter(c string) bool {
	return len(c) >= 3 && strings.HasPrefix(c, "$[") && strings.HasSuffix(c, "]")
}

// isDynamic reports whether a component is resolved per document.
func isDynamic(c string) bool { return isPositional(c) || isArrayFilter(c) }

// arrayIndex reads a component as an array index: decimal digits only
// (leading zeros allowed, as MongoDB's parseUnsignedBase10Integer), within
// an int32. Larger numbers are not indexes into existing elements.
func arrayIndex(c string) (int, bool) {
	if c == "" || len(c) > 10 {
		return 0, false
	}
	n := 0
	for i := 0; i < len(c); i++ {
		if c[i] < '0' || c[i] > '9' {
			return 0, false
		}
		n = n*10 + int(c[i]-'0')
	}
	if n > 1<<31-1 {
		return 0, false
	}
	return n, true
}

// isNumeric reports whether c consists of decimal digits only, MongoDB's
// test for creating an element inside an array; n saturates rather than
// overflows, so a huge index fails the padding limit instead of wrapping.
func isNumeric(c string) (n int, ok bool) {
	if c == "" {
		return 0, false
	}
	for i := 0; i < len(c); i++ {
		if c[i] < '0' || c[i] > '9' {
			return 0, false
		}
		if n < 1<<40 {
			n = n*10 + int(c[i]-'0')
		}
	}
	return n, true
}

// comparePathParts orders the children of an update node, which fixes the
// order in which MongoDB (5.0 and later) applies an update's paths and so
// the order in which new fields are appended: field names compare
// bytewise, except that two names starting with a digit compare by length
// first (so "2" < "10", numeric order for array indexes); zero-padded
// numbers ("01") compare as plain strings.
func comparePathParts(a, b string) int {
	plain := a == "" || b == "" || !isDigit(a[0]) || !isDigit(b[0]) ||
		(a[0] == '0' && len(a) > 1) || (b[0] == '0' && len(b) > 1)
	if plain {
		return strings.Compare(a, b)
	}
	if len(a) != len(b) {
		if len(a) < len(b) {
			return -1
		}
		return 1
	}
	return strings.Compare(a, b)
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// joinPath renders taken+create for messages.
func joinPath(parts ...[]string) string {
	var all []string
	for _, p := range parts {
		all = append(all, p...)
	}
	return strings.Join(all, ".")
}

// itoa names the array position i as a path component.
func itoa(i int) string { return strconv.Itoa(i) }
