package update_test

import (
	"bytes"
	"testing"

	"github.com/cairndb/cairn/internal/update"
	"github.com/cairndb/cairn/internal/update/updatetest"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// FuzzUpdate parses random update documents and applies them to random
// documents: neither may panic, and an update that succeeds on a valid
// document yields a valid document (the stored one itself when nothing
// changed). The corpus cases are the seeds, so `go test` runs them all.
func FuzzUpdate(f *testing.F) {
	cases, err := updatetest.Load("testdata")
	if err != nil {
		f.Fatal(err)
	}
	for _, c := range cases {
		if c.Update.Type != bsoncore.TypeEmbeddedDocument {
			continue
		}
		doc := []byte(c.Doc)
		if doc == nil {
			doc = c.Filter
		}
		var af []byte
		if len(c.ArrayFilters) > 0 {
			af = c.ArrayFilters[0]
		}
		f.Add(doc, []byte(c.Update.Data), af, int8(1))
	}
	f.Fuzz(func(t *testing.T, doc, upd, af []byte, pos int8) {
		if len(doc) > 1<<16 || len(upd) > 1<<16 || hasLongNumber(upd) {
			t.Skip() // keep runs fast: huge paddings are tested elsewhere
		}
		var opts update.Options
		if len(af) > 0 {
			opts.ArrayFilters = []bsoncore.Document{af}
		}
		u, err := update.ParseDocument(upd, opts)
		if err != nil {
			return
		}
		valid := bsoncore.Document(doc).Validate() == nil
		out, modified, err := u.Apply(doc, update.ApplyContext{ArrayPos: int(pos)})
		if err == nil {
			if !modified && !bytes.Equal(out, doc) {
				t.Fatalf("no-op returned another document")
			}
			if valid && modified {
				if err := bsoncore.Document(out).Validate(); err != nil {
					t.Fatalf("Apply produced invalid BSON: %v", err)
				}
			}
		}
		if ins, err := u.Upsert(doc, update.ApplyContext{}); err == nil && valid {
			if err := bsoncore.Document(ins).Validate(); err != nil {
				t.Fatalf("Upsert produced invalid BSON: %v", err)
			}
		}
	})
}

// hasLongNumber reports a run of 5 or more digits: a path index that pads
// an array by tens of thousands of nulls.
func hasLongNumber(b []byte) bool {
	run := 0
	for _, c := range b {
		if c >= '0' && c <= '9' {
			if run++; run >= 5 {
				return true
			}
		} else {
			run = 0
		}
	}
	return false
}
