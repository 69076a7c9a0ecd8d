package bench

import (
	"fmt"
	"strconv"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Workload is one of YCSB's core workloads: a mix of operations and the
// distribution that picks the records they touch.
type Workload struct {
	// Name is the YCSB letter, "a" to "f".
	Name string
	// Title says what the workload models.
	Title string
	// Proportions of each operation; they sum to 1.
	Read, Update, Insert, Scan, ReadModifyWrite float64
	// Distribution is YCSB's requestdistribution for the workload.
	Distribution string
	// MaxScan is the longest scan (scan lengths are uniform in 1..MaxScan).
	MaxScan int
}

// Workloads are YCSB's core workloads A–F with YCSB's parameters.
var Workloads = []Workload{
	{Name: "a", Title: "update heavy: 50% read, 50% update", Read: 0.5, Update: 0.5, Distribution: DistZipfian},
	{Name: "b", Title: "read mostly: 95% read, 5% update", Read: 0.95, Update: 0.05, Distribution: DistZipfian},
	{Name: "c", Title: "read only: 100% read", Read: 1, Distribution: DistZipfian},
	{Name: "d", Title: "read latest: 95% read, 5% insert", Read: 0.95, Insert: 0.05, Distribution: DistLatest},
	{Name: "e", Title: "short ranges: 95% scan (1–100 records), 5% insert", Scan: 0.95, Insert: 0.05, Distribution: DistZipfian, MaxScan: 100},
	{Name: "f", Title: "read-modify-write: 50% read, 50% read-modify-write", Read: 0.5, ReadModifyWrite: 0.5, Distribution: DistZipfian},
}

// ParseWorkloads turns "a,c", "A C" or "all" into workloads, in the order
// given.
func ParseWorkloads(spec []string) ([]Workload, error) {
	var out []Workload
	for _, s := range spec {
		for _, name := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return r == ',' || r == ' ' }) {
			if name == "all" {
				out = append(out, Workloads...)
				continue
			}
			w, ok := workloadByName(name)
			if !ok {
				return nil, fmt.Errorf("unknown workload %q (want a–f or all)", name)
			}
			out = append(out, w)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no workload given")
	}
	return out, nil
}

func workloadByName(name string) (Workload, bool) {
	for _, w := range Workloads {
		if w.Name == name {
			return w, true
		}
	}
	return Workload{}, false
}

// opKind is an operation type; each has its own latency histogram.
type opKind int

const (
	opRead opKind = iota
	opUpdate
	opInsert
	opScan
	opReadModifyWrite
	numOps
)

var opNames = [numOps]string{"read", "update", "insert", "scan", "read-modify-write"}

func (o opKind) String() string { return opNames[o] }

// choose picks an operation for a uniform draw u in [0, 1).
func (w Workload) choose(u float64) opKind {
	for _, c := range []struct {
		p  float64
		op opKind
	}{{w.Read, opRead}, {w.Update, opUpdate}, {w.Insert, opInsert}, {w.Scan, opScan}} {
		if u < c.p {
			return c.op
		}
		u -= c.p
	}
	return opReadModifyWrite
}

// UpdateStyle is how a YCSB update reaches the server.
type UpdateStyle string

// The update styles. YCSB's MongoDB binding updates with $set of the one
// changed field (UpdateSet), the default. UpdateReplace sends the whole
// record with that field changed (the driver's ReplaceOne), for servers
// without update operators (Cairn before its update language landed).
// Every target receives the same requests either way.
//
// SWITCH: DefaultUpdateStyle picks the style when --update is not given.
const (
	UpdateReplace UpdateStyle = "replace"
	UpdateSet     UpdateStyle = "set"

	DefaultUpdateStyle = UpdateSet
)

// records generates YCSB records: _id "user<hash>" and fields field0..N-1
// of fieldLength printable characters. A record's content is a pure
// function of its key number (and the seed), so an update can send the
// whole record with one field changed without reading it first.
type records struct {
	fieldCount, fieldLength int
	seed                    uint64
	names                   []string
}

func newRecords(fieldCount, fieldLength int, seed int64) *records {
	r := &records{fieldCount: fieldCount, fieldLength: fieldLength, seed: uint64(seed)}
	for i := range fieldCount {
		r.names = append(r.names, "field"+strconv.Itoa(i))
	}
	return r
}

// key is the record key of key number n: YCSB's hashed insert order.
func key(n int64) string { return "user" + strconv.FormatInt(fnv64(n), 10) }

// RecordKey is the _id of the load phase's record n, for harnesses that
// read a loaded collection from outside the package (test/pointread).
func RecordKey(n int64) string { return key(n) }

// valueAlphabet is 64 printable characters, one per 6 random bits.
const valueAlphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// appendValue appends length pseudo-random printable characters drawn from
// the splitmix64 stream seeded with state.
func appendValue(dst []byte, length int, state uint64) []byte {
	for length > 0 {
		state += 0x9E3779B97F4A7C15
		z := state
		z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9
		z = (z ^ (z >> 27)) * 0x94D049BB133111EB
		z ^= z >> 31
		for i := 0; i < 10 && length > 0; i++ {
			dst = append(dst, valueAlphabet[z&63])
			z >>= 6
			length--
		}
	}
	return dst
}

// loadValue appends field f's value as the load phase wrote it for key
// number n.
func (r *records) loadValue(dst []byte, n int64, f int) []byte {
	return appendValue(dst, r.fieldLength, r.seed^uint64(n)*0x2545F4914F6CDD1D^uint64(f+1)*0x9E3779B97F4A7C15)
}

// appendRecord appends the BSON record of key number n; when changed >= 0,
// field changed holds value instead of its load-time value.
func (r *records) appendRecord(dst []byte, n int64, changed int, value []byte) []byte {
	start, dst := bsoncore.AppendDocumentStart(dst)
	dst = bsoncore.AppendStringElement(dst, "_id", key(n))
	for f, name := range r.names {
		dst = bsoncore.AppendHeader(dst, bsoncore.TypeString, name)
		lenAt := len(dst)
		dst = append(dst, 0, 0, 0, 0)
		if f == changed {
			dst = append(dst, value...)
		} else {
			dst = r.loadValue(dst, n, f)
		}
		dst = append(dst, 0)
		putInt32(dst[lenAt:], int32(len(dst)-lenAt-4))
	}
	dst, _ = bsoncore.AppendDocumentEnd(dst, start)
	return dst
}

func putInt32(b []byte, v int32) {
	b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
}

// withField returns doc with top-level string field name set to value
// (appended at the end when doc lacks it), appended to dst: the "modify" of
// a read-modify-write, and what $set does to a document.
func withField(dst []byte, doc bsoncore.Document, name string, value []byte) ([]byte, error) {
	elems, err := doc.Elements()
	if err != nil {
		return dst, err
	}
	start, dst := bsoncore.AppendDocumentStart(dst)
	found := false
	for _, el := range elems {
		if el.Key() == name {
			dst = appendStringElement(dst, name, value)
			found = true
			continue
		}
		dst = append(dst, el...)
	}
	if !found {
		dst = appendStringElement(dst, name, value)
	}
	return bsoncore.AppendDocumentEnd(dst, start)
}

// appendStringElement is bsoncore.AppendStringElement for a []byte value,
// without converting it to a string.
func appendStringElement(dst []byte, name string, value []byte) []byte {
	dst = bsoncore.AppendHeader(dst, bsoncore.TypeString, name)
	dst = bsoncore.AppendInt32(dst, int32(len(value)+1))
	dst = append(dst, value...)
	return append(dst, 0)
}
