package commands

import (
	"fmt"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
)

// TestCheckFieldsLongCommands covers what the surface cases do not: a
// command with more fields than the scan handles (checkFields switches to a
// set past 32), where a duplicate must still be found, and keys that share
// their keyBit (the scan's filter: "ad" and "dc" do), which are no
// duplicates unless equal.
func TestCheckFieldsLongCommands(t *testing.T) {
	cmd, _ := lookup("currentOp") // open: any field is accepted once
	for _, tc := range []struct {
		name   string
		fields int
		dup    bool
		want   mongoerr.Code
		extra  []string
	}{
		{"short distinct", 5, false, 0, nil},
		{"short with a duplicate", 5, true, mongoerr.DuplicateField, nil},
		{"long distinct", 40, false, 0, nil},
		{"long with a duplicate", 40, true, mongoerr.DuplicateField, nil},
		{"two keys of one bit", 5, false, 0, []string{"ad", "dc"}},
		{"a repeat among keys of one bit", 5, false, mongoerr.DuplicateField, []string{"ad", "dc", "ad"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := bson.D{{Key: "currentOp", Value: 1}}
			for i := range tc.fields {
				d = append(d, bson.E{Key: fmt.Sprintf("f%d", i), Value: i})
			}
			if tc.dup {
				d = append(d, bson.E{Key: "f3", Value: 0})
			}
			for _, k := range tc.extra {
				d = append(d, bson.E{Key: k, Value: 0})
			}
			body, err := bson.Marshal(d)
			if err != nil {
				t.Fatal(err)
			}
			var buf [16]field
			elems, err := elementsOf(buf[:0], body)
			if err != nil {
				t.Fatal(err)
			}
			_, err = checkFields(&cmd, "currentOp", elems)
			if got := mongoerr.CodeOf(err); got != tc.want {
				t.Fatalf("code %d, want %d", got, tc.want)
			}
		})
	}
}

// TestElementsOfRefusesBadDocuments: a body whose length lies is
// FailedToParse, never a panic.
func TestElementsOfRefusesBadDocuments(t *testing.T) {
	good, _ := bson.Marshal(bson.D{{Key: "ping", Value: 1}})
	for _, doc := range [][]byte{nil, {5, 0, 0}, good[:len(good)-1], append(append([]byte(nil), good...), 0)} {
		if _, err := elementsOf(nil, doc); mongoerr.CodeOf(err) != mongoerr.FailedToParse {
			t.Errorf("elementsOf(%x) = %v, want FailedToParse", doc, err)
		}
	}
}

// BenchmarkSurfaceChecks measures what the one field rule and the generic
// arguments add to every command (a driver's point find).
func BenchmarkSurfaceChecks(b *testing.B) {
	body, _ := bson.Marshal(bson.D{{Key: "find", Value: "users"}, {Key: "filter", Value: bson.D{{Key: "_id", Value: 1}}},
		{Key: "limit", Value: 1}, {Key: "singleBatch", Value: true},
		{Key: "lsid", Value: bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: make([]byte, 16)}}}},
		{Key: "$clusterTime", Value: bson.D{{Key: "clusterTime", Value: bson.Timestamp{T: 1}}}}, {Key: "$db", Value: "test"}})
	cmd, _ := lookup("find")
	s := &Session{Env: &Env{Params: NewParams()}}
	req := &Request{DB: "test", Name: "find", Body: bsoncore.Document(body)}
	b.ReportAllocs()
	for b.Loop() {
		var buf [16]field
		elems, _ := elementsOf(buf[:0], req.Body)
		mask, err := checkFields(&cmd, "find", elems)
		if err != nil {
			b.Fatal(err)
		}
		if err := checkGeneric(s, &cmd, req, elems, mask); err != nil {
			b.Fatal(err)
		}
	}
}

// TestGenericKind: the quick answer agrees with genericArgs for every
// generic argument and for command fields, long keys and odd bytes.
func TestGenericKind(t *testing.T) {
	keys := []string{"", "filter", "limit", "singleBatch", "l", "lsiD", "$", "$dbx", "find", "documents",
		"aVeryLongFieldNameThatNoGenericArgumentHasAtAllReally", "\xff\xfe", "maxTimeMSOpOnlyX"}
	for name := range genericArgs {
		keys = append(keys, name)
	}
	for _, k := range keys {
		if got, want := genericKind([]byte(k)), genericArgs[k]; got != want {
			t.Errorf("genericKind(%q) = %d, genericArgs says %d", k, got, want)
		}
	}
}

// TestFieldTableMatchesClassify: every registered command's fieldTable
// classifies a key as classify does from the lists, for every name a list
// holds and for near misses of each (a letter more or less, another case,
// the name of another command's field), so the table is the rule's
// definition and not a second one.
func TestFieldTableMatchesClassify(t *testing.T) {
	var names []string
	for name := range genericArgs {
		names = append(names, name)
	}
	for _, c := range registry {
		names = append(append(append(names, c.fields...), c.notYet...), c.unstable...)
	}
	var keys []string
	for _, n := range names {
		keys = append(keys, n, n+"x", n[:len(n)-1], strings.ToUpper(n[:1])+n[1:], "$"+n)
	}
	keys = append(keys, "", "x", "find", "$", "\x00")
	checked := 0
	for cname, c := range registry {
		if c.table == nil {
			t.Fatalf("%s has no field table", cname)
		}
		for _, k := range keys {
			key := []byte(k)
			got := c.table.find(key, keySlot(len(key), firstByte(key), lastByte(key)))
			if want := classify(&c, key); got != want {
				t.Fatalf("%s: key %q is class %d in the table, %d by the lists", cname, k, got, want)
			}
			checked++
		}
	}
	if checked < 10000 {
		t.Fatalf("only %d keys checked", checked)
	}
}
