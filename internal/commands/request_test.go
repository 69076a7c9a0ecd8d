package commands

import (
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
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
