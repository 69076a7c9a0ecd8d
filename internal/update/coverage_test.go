package update

import (
	"strings"
	"testing"

	"github.com/cairndb/cairn/internal/update/updatetest"
)

// TestCorpusCoversOperators: every operator of the table, and every path
// form, has cases in testdata (behaviour lives in testdata).
func TestCorpusCoversOperators(t *testing.T) {
	cases, err := updatetest.Load("testdata")
	if err != nil {
		t.Fatal(err)
	}
	var all strings.Builder
	for _, c := range cases {
		all.WriteString(c.Update.String())
		all.WriteByte('\n')
	}
	text := all.String()
	for name := range operators {
		if !strings.Contains(text, `"`+name+`"`) {
			t.Errorf("no corpus case uses %s", name)
		}
	}
	for _, form := range []string{`.$"`, `.$.`, `.$[]`, `.$[`, `$each`, `$slice`, `$sort`, `$position`} {
		if !strings.Contains(text, form) {
			t.Errorf("no corpus case uses the path form %s", form)
		}
	}
}
