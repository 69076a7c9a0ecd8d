package testcorpus

import (
	"fmt"
	"os"
	"strings"
)

// Entry is one "key: value" line of a stanza, with its continuation lines
// appended to Value, joined by "\n": each keeps the indentation it has
// beyond the least indented of them, so a value can be a tree (a rendered
// plan) as well as a list of documents.
type Entry struct {
	Key   string
	Value string
	Line  int // 0-based line of the key
	End   int // 0-based line after the value
}

// ReadStanzas reads file as stanzas separated by blank lines and calls fn on
// each, in order, stopping at the first error. A stanza is "key: value"
// lines; a line that starts with whitespace continues the previous key's
// value; lines starting with "#" are comments. What the keys mean is each
// corpus's business (fn's). Stanzas are handed over as soon as they end, so
// an error in an earlier stanza is reported before a syntax error in a later
// one.
func ReadStanzas(file string, fn func(stanza []Entry) error) error {
	data, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	lines := strings.Split(string(data), "\n")
	var (
		stanza []Entry
		cont   []string // the last entry's continuation lines, as written
	)
	endEntry := func() {
		if len(cont) > 0 {
			stanza[len(stanza)-1].Value += "\n" + strings.Join(dedent(cont), "\n")
		}
		cont = nil
	}
	flush := func() error {
		endEntry()
		if len(stanza) == 0 {
			return nil
		}
		s := stanza
		stanza = nil
		return fn(s)
	}
	for i := 0; i < len(lines); i++ {
		l := strings.TrimRight(lines[i], " \t\r")
		switch {
		case strings.HasPrefix(l, "#"):
			continue
		case l == "":
			if err := flush(); err != nil {
				return err
			}
			continue
		case l[0] == ' ' || l[0] == '\t':
			if len(stanza) == 0 {
				return fmt.Errorf("%s:%d: continuation line without a key", file, i+1)
			}
			cont = append(cont, l)
			stanza[len(stanza)-1].End = i + 1
			continue
		}
		key, val, ok := strings.Cut(l, ":")
		if !ok {
			return fmt.Errorf("%s:%d: expected \"key: value\"", file, i+1)
		}
		endEntry()
		stanza = append(stanza, Entry{Key: key, Value: strings.TrimSpace(val), Line: i, End: i + 1})
	}
	return flush()
}

// dedent removes from lines the indentation they all share.
func dedent(lines []string) []string {
	common := -1
	for _, l := range lines {
		n := len(l) - len(strings.TrimLeft(l, " \t"))
		if common < 0 || n < common {
			common = n
		}
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		out[i] = l[common:]
	}
	return out
}
