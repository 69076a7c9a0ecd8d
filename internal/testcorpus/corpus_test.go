package testcorpus

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// echo is a corpus whose cases carry a default "base", a "word" and the
// expectation "want"; its outcome is base+word.
type echo struct {
	Header
	base, word, want string
}

var echoCorpus = Corpus[echo, string]{
	Expectations: []string{"want"},
	Template:     func() echo { return echo{base: "-"} },
	Default: func(tmpl *echo, e Entry) error {
		if e.Key != "base" {
			return fmt.Errorf("outside a case")
		}
		tmpl.base = e.Value
		return nil
	},
	Set: func(c *echo, e Entry) error {
		switch e.Key {
		case "word":
			c.word = e.Value
		case "want":
			c.want = e.Value
		default:
			return fmt.Errorf("unknown key")
		}
		return nil
	},
	Header: func(c *echo) *Header { return &c.Header },
	Check: func(c *echo, o string) error {
		if o != c.want {
			return fmt.Errorf("got %q", o)
		}
		return nil
	},
	Format: func(c *echo, o string) []string { return []string{"want: " + o} },
	Keep:   func(c *echo) bool { return c.word == "keep" },
}

func TestCorpusLoadFile(t *testing.T) {
	f := writeFile(t, "case: a\nword: x\nwant: -x\n\nbase: b\n\ncase: b\nxfail: why\nword: y\nerror: 11\n")
	cs, err := echoCorpus.LoadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 2 {
		t.Fatalf("%d cases", len(cs))
	}
	a, b := cs[0], cs[1]
	if a.base != "-" || a.want != "-x" || a.Line != 1 || a.ExpKey != "want" || a.ExpStart != 2 || a.ExpEnd != 3 {
		t.Errorf("case a: %+v", a)
	}
	if b.base != "b" || b.XFail != "why" || b.WantError != 11 || b.ExpKey != "error" || b.ExpStart != 9 {
		t.Errorf("case b: %+v", b)
	}
	if done, err := b.CheckCode(11); !done || err != nil {
		t.Errorf("CheckCode(11) = %v, %v", done, err)
	}
	if done, err := a.CheckCode(2); !done || err == nil {
		t.Errorf("CheckCode(2) on a success case = %v, %v", done, err)
	}
	for _, body := range []string{
		"case: x\nword: y\n",           // no expectation
		"case: x\nwant: a\nerror: 2\n", // two expectations
		"case: x\nbogus: 1\nwant: a\n", // unknown key
		"word: y\n",                    // key outside a case
		"case: x\nerror: two\n",        // bad code
	} {
		if _, err := echoCorpus.LoadFile(writeFile(t, body)); err == nil {
			t.Errorf("LoadFile accepted %q", body)
		}
	}
}

func TestCorpusRewrite(t *testing.T) {
	f := writeFile(t, "case: a\nword: x\nwant: wrong\n\ncase: b\nword: keep\nwant: kept\n\ncase: c\nxfail: gap\nwant: also kept\n")
	cs, err := echoCorpus.LoadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	if err := echoCorpus.Rewrite(cs, []string{"-x", "-keep", "-"}); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(f)
	if got := string(data); !strings.Contains(got, "want: -x\n") || !strings.Contains(got, "want: kept\n") || !strings.Contains(got, "want: also kept\n") {
		t.Errorf("rewritten:\n%s", got)
	}
}
