package engine

import (
	"math/rand/v2"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/bsonx/bsonxtest"
)

// TestScanTopAgrees checks invariant "Top-level scan agrees": whenever
// scanTop accepts a document, bsoncore's Validate accepts it too and the
// walk's counts are countKey's, LookupErr's and idIsFirst's. The documents
// are random (seed logged): fields named _id, a or b (so _id is missing,
// first, later or repeated), values of every type from bsonxtest, some of
// them damaged, then sometimes the whole document's bytes damaged
// (bsonxtest's Document). Both
// outcomes must occur often, so that neither side of the check is vacuous.
func TestScanTopAgrees(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 2))
	gen := bsonxtest.New(rng)
	gen.Malformed = 0.05
	names := []string{"_id", "a", "b", "_id", "c"}
	accepted, refused := 0, 0
	for i := 0; i < 20000; i++ {
		doc := gen.Document(names, 5)
		s, ok := scanTop(doc, true)
		if !ok {
			refused++
			continue
		}
		accepted++
		if err := bsoncore.Document(doc).Validate(); err != nil {
			t.Fatalf("scanTop accepted %x, Validate refused it: %v", doc, err)
		}
		if n := countKey(doc, "_id"); s.ids != n {
			t.Fatalf("%x: scanTop counted %d _id fields, countKey %d", doc, s.ids, n)
		}
		id, err := bsoncore.Document(doc).LookupErr("_id")
		if (err == nil) != (s.ids > 0) || err == nil && (id.Type != s.id.Type || string(id.Data) != string(s.id.Data)) {
			t.Fatalf("%x: scanTop's _id %v, LookupErr's %v (%v)", doc, s.id, id, err)
		}
		if first := idIsFirst(doc); first != s.idFirst {
			t.Fatalf("%x: scanTop says _id first %v, idIsFirst %v", doc, s.idFirst, first)
		}
		if deep := tooDeep(doc[4:len(doc)-1], 1); !s.depthChecked || deep != s.tooDeep {
			t.Fatalf("%x: scanTop says too deep %v (checked %v), tooDeep %v", doc, s.tooDeep, s.depthChecked, deep)
		}
	}
	t.Logf("accepted %d, refused %d", accepted, refused)
	if accepted < 1000 || refused < 1000 {
		t.Fatalf("accepted %d, refused %d: one side of the check barely ran", accepted, refused)
	}
}

// TestScanTopCases: the walk's answers on documents written by hand, and
// what it refuses that bsoncore accepts (its framing is stricter: the
// caller then asks bsoncore).
func TestScanTopCases(t *testing.T) {
	build := func(f func(dst []byte) []byte) []byte {
		idx, d := bsoncore.AppendDocumentStart(nil)
		d, _ = bsoncore.AppendDocumentEnd(f(d), idx)
		return d
	}
	for _, c := range []struct {
		name        string
		doc         []byte
		ok          bool
		ids         int
		idFirst     bool
		validateToo bool // bsoncore accepts it as well
	}{
		{"empty", build(func(d []byte) []byte { return d }), true, 0, false, true},
		{"id first", build(func(d []byte) []byte {
			return bsoncore.AppendInt32Element(bsoncore.AppendInt32Element(d, "_id", 1), "a", 2)
		}), true, 1, true, true},
		{"id later", build(func(d []byte) []byte {
			return bsoncore.AppendInt32Element(bsoncore.AppendInt32Element(d, "a", 2), "_id", 1)
		}), true, 1, false, true},
		{"two ids", build(func(d []byte) []byte {
			return bsoncore.AppendInt32Element(bsoncore.AppendInt32Element(d, "_id", 1), "_id", 2)
		}), true, 2, true, true},
		{"a boolean byte of 2", build(func(d []byte) []byte {
			return append(bsoncore.AppendBooleanElement(d, "a", true)[:len(d)+3], 2)
		}), false, 0, false, true},
		{"length short of the bytes", append(build(func(d []byte) []byte { return d }), 0), false, 0, false, true},
		{"no final NUL", []byte{5, 0, 0, 0, 1}, false, 0, false, false},
	} {
		s, ok := scanTop(c.doc, false)
		if ok != c.ok || ok && (s.ids != c.ids || s.idFirst != c.idFirst) {
			t.Errorf("%s: scanTop(%x) = %+v, %v; want %d ids, first %v, ok %v", c.name, c.doc, s, ok, c.ids, c.idFirst, c.ok)
		}
		if err := bsoncore.Document(c.doc).Validate(); (err == nil) != c.validateToo {
			t.Errorf("%s: Validate = %v, want accepted %v", c.name, err, c.validateToo)
		}
	}
}
