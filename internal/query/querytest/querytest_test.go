package querytest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

const sample = `# comment
docs:
  {"_id": 1, "a": 1}
  {"_id": 2,
   "a": {"$numberLong": "2"}}

case: first
filter: {"a": 1}
ids: [1]

case: second
docs: {"_id": 3}
sort: {"_id": 1}
result:
  {"_id": 3}

case: third
filter: {"$bad": 1}
error: 2
xfail: a reason
`

func writeSample(t *testing.T, body string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "s.txt")
	if err := os.WriteFile(f, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestLoadFile(t *testing.T) {
	cs, err := LoadFile(writeSample(t, sample))
	if err != nil {
		t.Fatal(err)
	}
	if len(cs) != 3 {
		t.Fatalf("%d cases", len(cs))
	}
	if len(cs[0].Docs) != 2 || cs[0].Docs[1].Lookup("a").Type != bsoncore.TypeInt64 {
		t.Errorf("file-level docs not parsed: %v", cs[0].Docs)
	}
	if len(cs[1].Docs) != 1 || cs[1].Sort == nil || len(cs[1].WantDocs) != 1 {
		t.Errorf("case docs/sort/result not parsed: %+v", cs[1])
	}
	if cs[2].WantError != 2 || cs[2].XFail != "a reason" || cs[2].Line != 17 {
		t.Errorf("error/xfail/line not parsed: %+v", cs[2])
	}
	if err := cs[0].Check(Outcome{Docs: cs[0].Docs[:1]}); err != nil {
		t.Errorf("Check: %v", err)
	}
	if err := cs[0].Check(Outcome{Docs: cs[0].Docs}); err == nil {
		t.Errorf("Check accepted an extra document")
	}
	if err := cs[2].Check(Outcome{Code: 2}); err != nil {
		t.Errorf("Check error code: %v", err)
	}
}

func TestLoadFileErrors(t *testing.T) {
	for _, body := range []string{
		"case: x\nfilter: {}\n",              // no expectation
		"case: x\nids: [1]\nerror: 2\n",      // two expectations
		"case: x\nbogus: 1\nids: []\n",       // unknown key
		"filter: {}\n",                       // key outside a case
		"case: x\nfilter: {nope}\nids: []\n", // bad JSON
	} {
		if _, err := LoadFile(writeSample(t, body)); err == nil {
			t.Errorf("LoadFile accepted %q", body)
		}
	}
}

func TestRewrite(t *testing.T) {
	f := writeSample(t, sample)
	cs, err := LoadFile(f)
	if err != nil {
		t.Fatal(err)
	}
	outs := []Outcome{{Docs: cs[0].Docs}, {Code: 9}, {}}
	if err := corpus.Rewrite(cs, outs); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(f)
	got := string(data)
	for _, want := range []string{"ids: [1, 2]", "case: second\ndocs: {\"_id\": 3}\nsort: {\"_id\": 1}\nerror: 9\n", "error: 2\nxfail"} {
		if !strings.Contains(got, want) {
			t.Errorf("rewritten file lacks %q:\n%s", want, got)
		}
	}
	if _, err := LoadFile(f); err != nil {
		t.Errorf("rewritten file does not load: %v", err)
	}
}
