package changestream

import (
	"bytes"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
)

// TestSplitLargeEvent: an event above MaxEventSize comes out as fragments
// of at most MaxEventSize, numbered {fragment, of}, holding together every
// field of the event once (smallest first), each with its own token that
// sorts after the event's; a stream resumed from a fragment's token gets
// the fragments after it, and refusals have MongoDB's codes.
func TestSplitLargeEvent(t *testing.T) {
	big := strings.Repeat("q", 10<<20)
	l := &fakeLog{}
	l.add(10, logEntry(t, 10, op("i", "db.c", bson.D{{Key: "_id", Value: 1}, {Key: "value", Value: big}}, nil)))
	l.add(11, logEntry(t, 11, op("u", "db.c", bson.D{{Key: "$v", Value: 2}, {Key: "diff", Value: bson.D{{Key: "u", Value: bson.D{{Key: "value", Value: "z" + big}}}}}}, bson.D{{Key: "_id", Value: 1}})))
	l.add(12, logEntry(t, 12, op("i", "db.c", bson.D{{Key: "_id", Value: 2}}, nil)))
	// The update's event holds the new value in updateDescription and,
	// with a post-image, in fullDocument too: about 20 MB.
	l.docs = map[string]bsoncore.Document{}
	spec := Spec{HasStartAt: true, StartAtOperationTime: 11, FullDocument: "updateLookup", FullDocumentBeforeChange: "off"}
	l.docs["db.c/"+bsoncore.Value{Type: bsoncore.TypeInt32, Data: bsoncore.AppendInt32(nil, 1)}.String()] = doc(t, bson.D{{Key: "_id", Value: 1}, {Key: "value", Value: "z" + big}})
	s := open(t, l, Scope{DB: "db", Coll: "c"}, spec)
	ev, err := s.Next()
	if err != nil || ev == nil {
		t.Fatal(ev, err)
	}
	if len(ev) <= MaxEventSize {
		t.Fatalf("the update's event is %d bytes, want more than %d", len(ev), MaxEventSize)
	}
	frags, err := NewSplitter(spec).Split(ev)
	if err != nil {
		t.Fatal(err)
	}
	if len(frags) != 2 {
		t.Fatalf("%d fragments, want 2", len(frags))
	}
	evTok, _ := ev.Lookup("_id").DocumentOK()
	evData, _ := evTok.Lookup("_data").StringValueOK()
	fields := map[string]bsoncore.Value{}
	prevData := evData
	for i, f := range frags {
		if len(f) > MaxEventSize {
			t.Errorf("fragment %d is %d bytes", i, len(f))
		}
		var se struct{ Fragment, Of int32 }
		if err := bson.Unmarshal(f.Lookup("splitEvent").Document(), &se); err != nil || se.Fragment != int32(i+1) || se.Of != 2 {
			t.Errorf("fragment %d's splitEvent: %+v %v", i, se, err)
		}
		tok, err := ParseToken(f.Lookup("_id"))
		if err != nil || !tok.HasFragment || tok.Fragment != int32(i) {
			t.Fatalf("fragment %d's token: %+v %v", i, tok, err)
		}
		data, _ := f.Lookup("_id", "_data").StringValueOK()
		if data <= prevData {
			t.Errorf("fragment %d's token does not sort after the one before", i)
		}
		prevData = data
		els, _ := f.Elements()
		last := 0
		for _, e := range els[2:] {
			if _, dup := fields[e.Key()]; dup {
				t.Errorf("field %s in two fragments", e.Key())
			}
			if len(e) < last {
				t.Errorf("fragment %d: %s is smaller than the field before it", i, e.Key())
			}
			last = len(e)
			fields[e.Key()] = e.Value()
		}
	}
	els, _ := ev.Elements()
	for _, e := range els[1:] {
		if v, ok := fields[e.Key()]; !ok || !v.Equal(e.Value()) {
			t.Errorf("the event's %s is not in the fragments as it was", e.Key())
		}
	}
	if len(fields) != len(els)-1 {
		t.Errorf("the fragments hold %d fields, the event %d besides _id", len(fields), len(els)-1)
	}

	// Resumed from each fragment's token, the stream reads the event again
	// and returns the fragments after it, then the next event.
	for i, f := range frags {
		tok, _ := ParseToken(f.Lookup("_id"))
		rs := Spec{ResumeAfter: &tok, FullDocument: "updateLookup", FullDocumentBeforeChange: "off"}
		r := open(t, l, Scope{DB: "db", Coll: "c"}, rs)
		sp := NewSplitter(rs)
		var got []bsoncore.Document
		for {
			d, err := r.Next()
			if err != nil {
				t.Fatal(err)
			}
			if d == nil {
				break
			}
			out, err := sp.Split(d)
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, out...)
		}
		if len(got) != len(frags)-i {
			t.Fatalf("resumed after fragment %d: %d documents, want %d", i, len(got), len(frags)-i)
		}
		for k, d := range got[:len(got)-1] {
			if !bytes.Equal(d, frags[i+1+k]) {
				t.Errorf("resumed after fragment %d: document %d is not fragment %d", i, k, i+1+k)
			}
		}
		if op, _ := got[len(got)-1].Lookup("operationType").StringValueOK(); op != "insert" {
			t.Errorf("resumed after fragment %d: the last document is %v, want the next insert", i, op)
		}
	}

	// Refusals: a fragment's token of an event the resumed stream does not
	// split (here: without the post-image, it is small), and a field too
	// large for any fragment.
	tok, _ := ParseToken(frags[0].Lookup("_id"))
	small := Spec{ResumeAfter: &tok, FullDocument: "default", FullDocumentBeforeChange: "off"}
	r := open(t, l, Scope{DB: "db", Coll: "c"}, small)
	d, err := r.Next()
	if err != nil || d == nil {
		t.Fatal(d, err)
	}
	if _, err := NewSplitter(small).Split(d); mongoerr.CodeOf(err) != mongoerr.ChangeStreamFatalError {
		t.Errorf("resuming a fragment of an event no longer split: %v, want 280", err)
	}
	huge := doc(t, bson.D{{Key: "_id", Value: evTok}, {Key: "operationType", Value: "insert"}, {Key: "fullDocument", Value: bson.D{{Key: "v", Value: strings.Repeat("x", 17<<20)}}}})
	if _, err := NewSplitter(Spec{}).Split(huge); mongoerr.CodeOf(err) != mongoerr.SplitFragmentTooLarge {
		t.Errorf("a field above the fragment size: %v, want %d", err, mongoerr.SplitFragmentTooLarge)
	}
}
