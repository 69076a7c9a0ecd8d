package exec

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// Tail is the read of a tailable cursor over a capped collection: the
// collection's documents in natural (insertion) order, from where the
// cursor stands, matched by the selection's filter and projected. It is
// the one read not planned by Open: a tailable read is always a forward
// collection scan (MongoDB plans nothing else for one), and it must resume
// from an insertion position that no plan of Open keeps.
//
// A Tail remembers the insertion sequence number of the last document it
// examined; each refill opens a fresh snapshot and reads on from there,
// so it sees documents inserted since. Next returning nil means nothing
// more now (Finished tells whether the limit ended it for good). If the
// document at its position has been removed (the collection went round
// and evicted it, or a delete took it), the cursor lost its place:
// CappedPositionLost, as in MongoDB; if the collection was dropped or
// replaced, QueryPlanKilled.
type Tail struct {
	env      *Env
	sel      Selection
	seq      uint64 // the last document examined (0: none yet)
	collID   uint64 // the collection it tails (0: not read yet)
	skipped  int64
	sent     int64
	finished bool
	buf      []bsoncore.Document
	out      []byte
}

// tailRefill bounds how many documents one refill reads from a snapshot.
const tailRefill = 1024

// Tail starts a tailable read of sel (its filter, projection, skip and
// limit; the caller checked that the collection is capped and the sort
// is none or {$natural: 1}).
func (e *Env) Tail(sel Selection) *Tail { return &Tail{env: e, sel: sel} }

// Namespace is the collection the cursor tails.
func (t *Tail) Namespace() engine.Namespace { return t.sel.NS }

// Sent counts the documents Next has returned.
func (t *Tail) Sent() int64 { return t.sent }

// Finished reports that the limit was reached: the cursor is done.
func (t *Tail) Finished() bool { return t.finished }

// Next returns the next matching document, or nil when there is none now.
func (t *Tail) Next() (bsoncore.Document, error) {
	for len(t.buf) == 0 {
		if t.finished {
			return nil, nil
		}
		more, err := t.refill()
		if err != nil || !more {
			return nil, err
		}
	}
	d := t.buf[0]
	t.buf = t.buf[1:]
	t.sent++
	if t.sel.Limit > 0 && t.sent >= t.sel.Limit {
		t.finished = true
		t.buf = nil
	}
	return d, nil
}

// Close releases nothing: a Tail holds no snapshot between refills.
func (t *Tail) Close() error { return nil }

// refill reads on from the cursor's position in a new snapshot; more is
// false when it examined no document.
func (t *Tail) refill() (more bool, err error) {
	r, err := t.env.eng.NewReader(t.sel.NS)
	if err != nil {
		return false, err
	}
	defer func() {
		if cerr := r.Close(); err == nil {
			err = cerr
		}
	}()
	switch id := r.CollectionID(); {
	case t.collID == 0:
		t.collID = id
	case id != t.collID: // dropped, or replaced (convertToCapped)
		return false, mongoerr.New(mongoerr.QueryPlanKilled, "collection dropped or replaced: %s", t.sel.NS)
	}
	if t.seq > 0 {
		ok, err := r.HasPosition(t.seq)
		if err != nil {
			return false, err
		}
		if !ok {
			return false, mongoerr.New(mongoerr.CappedPositionLost, "CollectionScan died due to position in capped collection being deleted. Last seen record id: RecordId(%d)", t.seq)
		}
	}
	after := t.seq
	if after == 0 && r.IsOplog() {
		after = engine.OplogStart(t.sel.rawFilter()) // a ts bound seeks
	}
	c, err := r.Natural(after, false)
	if err != nil {
		return false, err
	}
	defer c.Close()
	t.out = t.out[:0]
	var ends []int
	n := 0
	for n < tailRefill && c.Next() {
		n++
		t.seq = c.Seq()
		d, err := c.Value()
		if err != nil {
			return false, err
		}
		pos := -1
		if t.sel.Filter != nil {
			res, err := t.sel.Filter.Exec(d)
			if err != nil {
				return false, err
			}
			if !res.Matched {
				continue
			}
			pos = res.ArrayPos
		}
		if t.skipped < t.sel.Skip {
			t.skipped++
			continue
		}
		if t.sel.Proj != nil {
			if t.out, err = t.sel.Proj.Apply(t.out, d, pos); err != nil {
				return false, err
			}
		} else {
			t.out = append(t.out, d...)
		}
		ends = append(ends, len(t.out))
	}
	out := append([]byte(nil), t.out...) // the buffered documents own their bytes
	start := 0
	for _, end := range ends {
		t.buf = append(t.buf, out[start:end:end])
		start = end
	}
	return n > 0, nil
}
