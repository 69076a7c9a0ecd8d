package update_test

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/testcorpus"
	"github.com/cairndb/cairn/internal/update"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func mustDoc(t testing.TB, s string) bsoncore.Document {
	t.Helper()
	d, err := testcorpus.ParseDoc(s)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func mustParse(t testing.TB, s string, opts update.Options) *update.Update {
	t.Helper()
	u, err := update.ParseDocument(mustDoc(t, s), opts)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

func noPos() update.ApplyContext { return update.ApplyContext{ArrayPos: -1} }

// TestResultTooLarge: an update may not make a document larger than 16 MiB
// (17419); an upsert may not insert one (17420). The corpus cannot hold
// such documents, so this test builds them.
func TestResultTooLarge(t *testing.T) {
	big := strings.Repeat("x", 9<<20)
	doc := bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).AppendString("a", big).Build()
	upd := bsoncore.NewDocumentBuilder().AppendDocument("$set", bsoncore.NewDocumentBuilder().AppendString("b", big).Build()).Build()
	u, err := update.ParseDocument(upd, update.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := u.Apply(doc, noPos()); mongoerr.CodeOf(err) != 17419 {
		t.Fatalf("Apply = %v, want code 17419", err)
	}
	filter := bsoncore.NewDocumentBuilder().AppendString("a", big).Build()
	if _, err := u.Upsert(filter, noPos()); mongoerr.CodeOf(err) != 17420 {
		t.Fatalf("Upsert = %v, want code 17420", err)
	}
	// Just under the limit is fine.
	small := bsoncore.NewDocumentBuilder().AppendDocument("$set", bsoncore.NewDocumentBuilder().AppendString("b", big[:6<<20]).Build()).Build()
	u, err = update.ParseDocument(small, update.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := u.Apply(doc, noPos()); err != nil {
		t.Fatalf("Apply under the limit: %v", err)
	}
}

// TestApplyDoesNotModifyInput checks the package invariant on a few
// updates that rewrite deep inside the document.
func TestApplyDoesNotModifyInput(t *testing.T) {
	doc := mustDoc(t, `{"_id": 1, "a": [{"b": [1, 2]}, {"b": [3]}], "c": {"d": 1}}`)
	orig := bytes.Clone(doc)
	for _, s := range []string{
		`{"$set": {"a.$[].b.$[]": 0, "c.d": 2}}`,
		`{"$push": {"a.0.b": {"$each": [9], "$sort": -1}}, "$rename": {"c": "e"}}`,
		`{"$unset": {"a.1": 1}, "$inc": {"c.d": 5}}`,
	} {
		u := mustParse(t, s, update.Options{})
		out, modified, err := u.Apply(doc, noPos())
		if err != nil || !modified {
			t.Fatalf("%s: %v, modified %v", s, err, modified)
		}
		if err := bsoncore.Document(out).Validate(); err != nil {
			t.Fatalf("%s: invalid output: %v", s, err)
		}
		if !bytes.Equal(doc, orig) {
			t.Fatalf("%s modified its input", s)
		}
	}
}

// TestNoOpReturnsInput: a no-op update returns the stored document itself.
func TestNoOpReturnsInput(t *testing.T) {
	doc := mustDoc(t, `{"_id": 1, "a": 1}`)
	out, modified, err := mustParse(t, `{"$set": {"a": 1}}`, update.Options{}).Apply(doc, noPos())
	if err != nil || modified || &out[0] != &doc[0] {
		t.Fatalf("no-op: modified %v, err %v, same buffer %v", modified, err, &out[0] == &doc[0])
	}
}

// TestConcurrentApply shares one Update between goroutines (run with
// -race): a parsed Update is immutable.
func TestConcurrentApply(t *testing.T) {
	u := mustParse(t, `{"$inc": {"n": 1}, "$push": {"a.$[x]": 1}, "$set": {"b.$": 2}}`,
		update.Options{ArrayFilters: []bsoncore.Document{mustDoc(t, `{"x": {"$type": "array"}}`)}})
	doc := mustDoc(t, `{"_id": 1, "n": 1, "a": [[0], 5, []], "b": [0, 0]}`)
	want := `{"_id": {"$numberInt":"1"},"n": {"$numberInt":"2"},"a": [[{"$numberInt":"0"},{"$numberInt":"1"}],{"$numberInt":"5"},[{"$numberInt":"1"}]],"b": [{"$numberInt":"0"},{"$numberInt":"2"}]}`
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 200; i++ {
				out, _, err := u.Apply(doc, update.ApplyContext{ArrayPos: 1})
				if err != nil {
					t.Error(err)
					return
				}
				if got := bsoncore.Document(out).String(); got != want {
					t.Errorf("got %s\nwant %s", got, want)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// TestUpsertSeed exposes the seed alone.
func TestUpsertSeed(t *testing.T) {
	u := mustParse(t, `{"$set": {"x": 1}}`, update.Options{})
	seed, err := u.UpsertSeed(mustDoc(t, `{"b": 1, "a.c": {"$eq": 2}, "z": {"$gt": 1}, "_id": 3}`))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := bsoncore.Document(seed).String(), `{"_id": {"$numberInt":"3"},"a": {"c": {"$numberInt":"2"}},"b": {"$numberInt":"1"}}`; got != want {
		t.Fatalf("seed = %s, want %s", got, want)
	}
	r := mustParse(t, `{"v": 1}`, update.Options{})
	seed, err = r.UpsertSeed(mustDoc(t, `{"b": 1, "_id": 3}`))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := bsoncore.Document(seed).String(), `{"_id": {"$numberInt":"3"}}`; got != want {
		t.Fatalf("replacement seed = %s, want %s", got, want)
	}
}

// TestParseKinds: the three forms of "u", and what is not one.
func TestParseKinds(t *testing.T) {
	op := mustParse(t, `{"$set": {"a": 1}}`, update.Options{})
	rep := mustParse(t, `{"a": 1}`, update.Options{})
	if op.Kind() != update.KindOperator || rep.Kind() != update.KindReplacement || !rep.IsReplacement() {
		t.Fatal("wrong kinds")
	}
	if !mustParse(t, `{"$set": {"a.$": 1}}`, update.Options{}).Positional() || op.Positional() {
		t.Fatal("wrong Positional")
	}
	arr := bsoncore.Value{Type: bsoncore.TypeArray, Data: bsoncore.NewArrayBuilder().Build()}
	if p, err := update.Parse(arr, update.Options{}); err != nil || p.Kind() != update.KindPipeline || p.Positional() {
		t.Fatalf("pipeline: %v", err)
	}
	if _, err := update.ParseDocument(bsoncore.Document{1, 2, 3}, update.Options{}); mongoerr.CodeOf(err) != mongoerr.FailedToParse {
		t.Fatalf("invalid BSON: %v", err)
	}
}

// TestUpsertGeneratesID: without NewID the _id is left to the caller.
func TestUpsertGeneratesID(t *testing.T) {
	u := mustParse(t, `{"$set": {"x": 1}}`, update.Options{})
	out, err := u.Upsert(mustDoc(t, `{"a": 1}`), update.ApplyContext{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := bsoncore.Document(out).String(), `{"a": {"$numberInt":"1"},"x": {"$numberInt":"1"}}`; got != want {
		t.Fatalf("got %s, want %s", got, want)
	}
}

// TestMalformedDocument: a stored document that is not valid BSON is an
// error, not a panic.
func TestMalformedDocument(t *testing.T) {
	u := mustParse(t, `{"$set": {"a.b.c": 1}}`, update.Options{})
	for _, d := range [][]byte{
		nil,
		{5, 0, 0, 0},
		{12, 0, 0, 0, 3, 'a', 0, 5, 0, 0, 0, 0}, // embedded doc without its terminator
		{13, 0, 0, 0, 3, 'a', 0, 9, 0, 0, 0, 0, 0},            // embedded length past the end
		{16, 0, 0, 0, 3, 'a', 0, 7, 0, 0, 0, 8, 'b', 0, 0, 0}, // inner element truncated
	} {
		if _, _, err := u.Apply(d, noPos()); err == nil {
			t.Errorf("Apply(%v) succeeded", d)
		}
	}
}

// TestPipelineVarsAndNow: a pipeline update sees Options.Vars (the
// command's let and the statement's c) and the $$NOW fixed at Parse.
func TestPipelineVarsAndNow(t *testing.T) {
	now := time.Date(2020, 5, 6, 7, 8, 9, 0, time.UTC)
	doc := mustDoc(t, `{"_id": 1, "flavor": "cherry"}`)
	vars := map[string]bsoncore.Value{"newFlavor": {Type: bsoncore.TypeString, Data: bsoncore.AppendString(nil, "orange")}}
	pipe := mustDoc(t, `{"p": [{"$set": {"flavor": "$$newFlavor", "at": "$$NOW"}}]}`).Lookup("p")
	u, err := update.Parse(pipe, update.Options{Vars: vars, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	out, modified, err := u.Apply(doc, update.ApplyContext{ArrayPos: -1})
	if err != nil || !modified {
		t.Fatalf("apply: %v %v", modified, err)
	}
	want := bsoncore.NewDocumentBuilder().AppendInt32("_id", 1).AppendString("flavor", "orange").AppendDateTime("at", now.UnixMilli()).Build()
	if !bytes.Equal(out, want) {
		t.Fatalf("got %s, want %s", bsoncore.Document(out), want)
	}
	// Without the variable the pipeline does not parse (undefined variable).
	if _, err := update.Parse(pipe, update.Options{}); mongoerr.CodeOf(err) != 17276 {
		t.Fatalf("undefined variable: %v", err)
	}
}
