package bench

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// TestSortedKeysAgainstSlice checks the floor's ordered index against a
// plain sorted slice under random inserts, removals and range reads.
func TestSortedKeysAgainstSlice(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	var s sortedKeys
	var model []string
	for i := range 20000 {
		k := "user" + strconv.Itoa(r.IntN(5000))
		switch r.IntN(3) {
		case 0, 1:
			s.insert(k)
			if j, found := slices.BinarySearch(model, k); !found {
				model = slices.Insert(model, j, k)
			}
		case 2:
			s.remove(k)
			if j, found := slices.BinarySearch(model, k); found {
				model = slices.Delete(model, j, j+1)
			}
		}
		if i%500 == 0 {
			from := "user" + strconv.Itoa(r.IntN(5000))
			var got []string
			s.ascend(from, func(k string) bool { got = append(got, k); return len(got) < 100 })
			j, _ := slices.BinarySearch(model, from)
			want := model[j:min(j+100, len(model))]
			if !slices.Equal(got, want) {
				t.Fatalf("step %d: ascend(%s) = %v…, want %v…", i, from, got[:min(3, len(got))], want[:min(3, len(want))])
			}
		}
	}
	var all []string
	s.ascend("", func(k string) bool { all = append(all, k); return true })
	if !slices.Equal(all, model) {
		t.Fatalf("full scan has %d keys, want %d", len(all), len(model))
	}
}

func TestApplySetAndWithField(t *testing.T) {
	doc, _ := bson.Marshal(bson.D{{"_id", "k"}, {"a", "1"}, {"b", "2"}})
	set, _ := bson.Marshal(bson.D{{"b", "x"}, {"c", "y"}})
	got, err := applySet(doc, set)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := bson.Marshal(bson.D{{"_id", "k"}, {"a", "1"}, {"b", "x"}, {"c", "y"}})
	if !slices.Equal([]byte(got), want) {
		t.Errorf("applySet = %s, want %s", got, bson.Raw(want))
	}
	got2, err := withField(nil, bsoncore.Document(doc), "a", []byte("z"))
	if err != nil {
		t.Fatal(err)
	}
	want2, _ := bson.Marshal(bson.D{{"_id", "k"}, {"a", "z"}, {"b", "2"}})
	if !slices.Equal(got2, want2) {
		t.Errorf("withField = %s, want %s", bson.Raw(got2), bson.Raw(want2))
	}
}

// TestRecordsAreDeterministic: an update rebuilds a record from its key
// number, so the same number must give the same bytes, and a changed field
// must change only that field.
func TestRecordsAreDeterministic(t *testing.T) {
	r := newRecords(10, 100, 1)
	a := r.appendRecord(nil, 42, -1, nil)
	b := r.appendRecord(nil, 42, -1, nil)
	if !slices.Equal(a, b) {
		t.Fatal("the same key number gave two records")
	}
	if err := bsoncore.Document(a).Validate(); err != nil {
		t.Fatal(err)
	}
	if len(a) < 10*100 {
		t.Errorf("record of %d bytes, want more than 1000", len(a))
	}
	c := r.appendRecord(nil, 42, 3, []byte("new"))
	want, _ := withField(nil, a, "field3", []byte("new"))
	if !slices.Equal(c, want) {
		t.Errorf("changing field3 changed more than field3")
	}
	if id, _ := bsoncore.Document(a).Lookup("_id").StringValueOK(); id != key(42) {
		t.Errorf("_id %q, want %q", id, key(42))
	}
}
