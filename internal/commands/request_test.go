package commands

import (
	"bytes"
	"fmt"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestArgAfterSplit: once Run has split a command's fields (setFields),
// Arg finds every present field, with its value, and no absent one —
// including absent names whose keyMask bit a present key shares.
func TestArgAfterSplit(t *testing.T) {
	body, _ := bson.Marshal(bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "a", Value: 1}}},
		{Key: "limit", Value: 3}, {Key: "", Value: "empty"}, {Key: "$db", Value: "t"}})
	req, err := NewRequest(body, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	elems, err := elementsOf(req.elemBuf[:0], req.Body)
	if err != nil {
		t.Fatal(err)
	}
	req.setFields(elems)
	for _, name := range []string{"find", "filter", "limit", "", "$db"} {
		got, ok := req.Arg(name)
		want, err := req.Body.LookupErr(name)
		if !ok || err != nil || !got.Equal(want) {
			t.Errorf("Arg(%q) = %v, %v; want %v", name, got, ok, want)
		}
	}
	// Absent names, among them ones that collide with a present key's bit.
	absent := []string{"skip", "sort", "hint", "fil", "filters", "limiT", "x"}
	for n := 1; n < 40; n++ {
		b := make([]byte, n)
		for i := range b {
			b[i] = 'a' + byte(i%26)
		}
		absent = append(absent, string(b))
	}
	collided := 0
	for _, name := range absent {
		if req.keyMask&keyBit(len(name), firstByte([]byte(name)), lastByte([]byte(name))) != 0 {
			collided++
		}
		if v, ok := req.Arg(name); ok {
			t.Errorf("Arg(%q) found %v in a command without it", name, v)
		}
	}
	if collided == 0 {
		t.Error("no absent name shared a present key's bit: the scan behind the mask went untested")
	}
}

// TestResetSplit: a Request reset from a body and its elements split by
// the caller (the wire's) is the one Reset builds from the body alone.
func TestResetSplit(t *testing.T) {
	for _, d := range []bson.D{
		{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "_id", Value: "k"}}}, {Key: "limit", Value: 1}, {Key: "$db", Value: "t"}},
		{{Key: "ping", Value: 1}, {Key: "$db", Value: "admin"}},
		{{Key: "find", Value: "c"}}, // no $db: the same error
	} {
		body, _ := bson.Marshal(d)
		elems, err := bsoncore.Document(body).Elements()
		if err != nil {
			t.Fatal(err)
		}
		var a, b Request
		errA, errB := a.Reset(body, "", nil), b.ResetSplit(body, elems, "", nil)
		if fmt.Sprint(errA) != fmt.Sprint(errB) || a.Name != b.Name || a.DB != b.DB || a.keyMask != b.keyMask || len(a.elems) != len(b.elems) {
			t.Fatalf("%v: Reset %q %q %v, ResetSplit %q %q %v", d, a.Name, a.DB, errA, b.Name, b.DB, errB)
		}
		for i := range a.elems {
			if !bytes.Equal(a.elems[i].el, b.elems[i].el) || a.elems[i].kn != b.elems[i].kn {
				t.Fatalf("%v: field %d differs", d, i)
			}
		}
	}
}
