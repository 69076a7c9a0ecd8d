package commands

import (
	"encoding/binary"
	"math"
	"time"

	"github.com/cairndb/cairn/internal/bsonx"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
)

// Request is one command as the server received it.
type Request struct {
	// DB is the command's $db.
	DB string
	// Name is the command name: the body's first field.
	Name string
	// Body is the command document.
	Body bsoncore.Document
	// Sequences are OP_MSG kind-1 sections by identifier ("documents",
	// "updates", "deletes"); they extend the body's array of that name.
	Sequences map[string][]bsoncore.Document

	// elems are Body's fields, split once by Run (nil for a Request Run
	// did not see, such as explain's inner command), so that the dozens of
	// Arg calls a handler makes compare keys instead of re-walking the
	// document; elemBuf holds them without an allocation for up to 16.
	elems   []field
	elemBuf [16]field
	// keyMask has keyBit set for every key of elems: most fields a handler
	// asks for are absent, and the mask answers that without a scan.
	keyMask uint64
	// named is the registered command Name names, found when Reset named
	// the request (nil for a name the registry does not know).
	named *namedCommand
	// start is when Run began the command (zero for a Request Run did not
	// see): the one clock reading its operation entry, its duration and
	// its $$NOW share.
	start time.Time
	// lastColl is the collection name firstString last read (kept across
	// Reset), so that a connection naming the same collection command
	// after command allocates its string once, as DB does.
	lastColl string
}

// firstString is the body's first value as a string (a collection's name)
// when it is one, read as bsoncore.Value.StringValueOK reads it; a name
// equal to the last one read is that string.
func (r *Request) firstString() (string, bool) {
	v := r.First()
	if v.Type != bsoncore.TypeString || len(v.Data) < 4 {
		return "", false
	}
	n := int32(binary.LittleEndian.Uint32(v.Data))
	if n <= 0 || int64(len(v.Data)-4) < int64(n) {
		return "", false
	}
	b := v.Data[4 : 4+n-1]
	if string(b) != r.lastColl {
		r.lastColl = string(b)
	}
	return r.lastColl, true
}

// now is the command's $$NOW: when Run began it, or now for a Request Run
// did not see.
func (r *Request) now() time.Time {
	if r.start.IsZero() {
		return time.Now()
	}
	return r.start
}

// setFields records Body's fields as Run split them (see elems).
func (r *Request) setFields(elems []field) {
	r.elems, r.keyMask = elems, 0
	for i := range elems {
		k := elems[i].key()
		r.keyMask |= keyBit(len(k), firstByte(k), lastByte(k))
	}
}

// keyBit is a key's bit in keyMask, from its length and end bytes.
func keyBit(n int, first, last byte) uint64 {
	return 1 << keySlot(n, first, last)
}

// keySlot is the number of a key's bit (keyBit), 0 to 63; checkFields'
// fieldTable files names by it too.
func keySlot(n int, first, last byte) uint {
	return (uint(n)*7 + uint(first) + uint(last)*3) & 63
}

func firstByte(k []byte) byte {
	if len(k) == 0 {
		return 0
	}
	return k[0]
}

func lastByte(k []byte) byte {
	if len(k) == 0 {
		return 0
	}
	return k[len(k)-1]
}

// command is the registered command of r.Name, a copy of the registry's
// entry: the one Reset found, or looked up now for a Request whose Name
// was set otherwise.
func (r *Request) command() (*command, bool) {
	if n := r.named; n != nil && n.name == r.Name {
		return &n.cmd, true
	}
	c, ok := lookup(r.Name)
	return &c, ok
}

// Arg returns the body field name; ok is false when absent.
func (r *Request) Arg(name string) (bsoncore.Value, bool) {
	v := r.arg(name)
	return v, v.Type != 0
}

// arg is Arg as one value: the zero Value (Type 0) when name is absent,
// which no present field has. The typed readers below take such a value,
// so that a handler that reads its fields in one pass (Request.fields,
// parseFind) shares their rules and messages.
func (r *Request) arg(name string) bsoncore.Value {
	if r.elems != nil {
		var first, last byte
		if len(name) > 0 {
			first, last = name[0], name[len(name)-1]
		}
		if r.keyMask&keyBit(len(name), first, last) == 0 {
			return bsoncore.Value{}
		}
		for i := range r.elems {
			if f := &r.elems[i]; string(f.key()) == name {
				return f.value()
			}
		}
		return bsoncore.Value{}
	}
	v, err := r.Body.LookupErr(name)
	if err != nil {
		return bsoncore.Value{}
	}
	return v
}

// fields are Body's fields, the command name first: the ones Run split, or
// split now for a Request Run did not see (explain's inner command). A
// malformed body has none.
func (r *Request) fields() []field {
	if r.elems == nil {
		elems, err := elementsOf(r.elemBuf[:0], r.Body)
		if err != nil {
			return nil
		}
		r.setFields(elems)
	}
	return r.elems
}

// First is the value of the command-name field (e.g. the collection name of
// {find: "users"}).
func (r *Request) First() bsoncore.Value {
	if len(r.elems) > 0 {
		return r.elems[0].value()
	}
	el, err := r.Body.IndexErr(0)
	if err != nil {
		return bsoncore.Value{}
	}
	return el.Value()
}

// Collection is the command-name field as a collection name, or a
// TypeMismatch/InvalidNamespace error shaped as MongoDB's.
func (r *Request) Collection() (string, error) {
	v := r.First()
	if v.Type != bsoncore.TypeString {
		return "", mongoerr.New(mongoerr.InvalidNamespace, "collection name has invalid type %s", typeName(v.Type))
	}
	name, ok := r.firstString()
	if !ok {
		name = v.StringValue() // malformed: StringValue's panic, as before
	}
	if name == "" {
		return "", mongoerr.New(mongoerr.InvalidNamespace, "Invalid namespace specified '%s.'", r.DB)
	}
	return name, nil
}

// Docs returns the documents of array argument name, from the body or from a
// document sequence (drivers use either).
func (r *Request) Docs(name string) ([]bsoncore.Document, error) {
	var docs []bsoncore.Document
	if v, ok := r.Arg(name); ok {
		arr, ok := v.ArrayOK()
		if !ok {
			return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '%s.%s' is the wrong type '%s', expected type 'array'", r.Name, name, typeName(v.Type))
		}
		// Read in place, as bsoncore's Values reads (each value validated),
		// without the slice of every value it allocates per write command.
		length, rest, ok := bsoncore.ReadLength(arr)
		if !ok {
			return nil, mongoerr.New(mongoerr.BadValue, "invalid array %s: %v", name, bsoncore.NewInsufficientBytesError(arr, rest))
		}
		length -= 4
		for i := 0; length > 1; i++ {
			e, next, ok := bsoncore.ReadElement(rest)
			length -= int32(len(e))
			if !ok {
				return nil, mongoerr.New(mongoerr.BadValue, "invalid array %s: %v", name, bsoncore.NewInsufficientBytesError(arr, next))
			}
			rest = next
			el := e.Value()
			if err := el.Validate(); err != nil {
				return nil, mongoerr.New(mongoerr.BadValue, "invalid array %s: %v", name, err)
			}
			d, ok := el.DocumentOK()
			if !ok {
				return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '%s.%s.%d' is the wrong type '%s', expected type 'object'", r.Name, name, i, typeName(el.Type))
			}
			docs = append(docs, d)
		}
	}
	return append(docs, r.Sequences[name]...), nil
}

// Bool reads an optional boolean argument (numbers count, as MongoDB's
// "trueValue" does).
func (r *Request) Bool(name string, def bool) (bool, error) {
	return r.boolOf(name, r.arg(name), def)
}

// boolOf is Bool of field name's value v (Type 0 when absent).
func (r *Request) boolOf(name string, v bsoncore.Value, def bool) (bool, error) {
	if v.Type == 0 || v.Type == bsoncore.TypeNull {
		return def, nil
	}
	switch v.Type {
	case bsoncore.TypeBoolean:
		return v.Boolean(), nil
	case bsoncore.TypeInt32, bsoncore.TypeInt64, bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		f, _ := bsonx.AsFloat64(v)
		return f != 0, nil
	}
	return false, mongoerr.New(mongoerr.TypeMismatch, "BSON field '%s.%s' is the wrong type '%s', expected type 'bool'", r.Name, name, typeName(v.Type))
}

// Int reads an optional integral numeric argument.
func (r *Request) Int(name string, def int64) (int64, error) {
	v, ok := r.Arg(name)
	if !ok || v.Type == bsoncore.TypeNull {
		return def, nil
	}
	n, ok := numberAsInt(v)
	if !ok {
		return 0, mongoerr.New(mongoerr.TypeMismatch, "BSON field '%s.%s' is the wrong type '%s', expected types '[long, int, decimal, double]'", r.Name, name, typeName(v.Type))
	}
	return n, nil
}

// SafeInt reads an optional numeric argument as MongoDB's IDL type
// safeInt64 does: any number type, a fractional one truncated toward zero
// (batchSize: 2.7 is 2).
func (r *Request) SafeInt(name string, def int64) (int64, error) {
	return r.safeIntOf(name, r.arg(name), def)
}

// safeIntOf is SafeInt of field name's value v (Type 0 when absent).
func (r *Request) safeIntOf(name string, v bsoncore.Value, def int64) (int64, error) {
	if v.Type == 0 || v.Type == bsoncore.TypeNull {
		return def, nil
	}
	if n, ok := safeNumber(v); ok {
		return n, nil
	}
	return 0, notSafeInt(r.Name+"."+name, v) // the path is built for a refusal only
}

// safeInt64 is MongoDB's safeNumberLong: a number truncated toward zero,
// NaN as 0, out-of-range values clamped; path names the field in the
// TypeMismatch of a non-number.
func safeInt64(path string, v bsoncore.Value) (int64, error) {
	if n, ok := safeNumber(v); ok {
		return n, nil
	}
	return 0, notSafeInt(path, v)
}

// safeNumber is safeInt64's conversion; ok is false for a non-number.
func safeNumber(v bsoncore.Value) (int64, bool) {
	switch v.Type {
	case bsoncore.TypeInt32:
		return int64(v.Int32()), true
	case bsoncore.TypeInt64:
		return v.Int64(), true
	case bsoncore.TypeDouble, bsoncore.TypeDecimal128:
		f, _ := bsonx.AsFloat64(v)
		switch {
		case f != f:
			return 0, true
		case f >= math.MaxInt64:
			return math.MaxInt64, true
		case f <= math.MinInt64:
			return math.MinInt64, true
		}
		return int64(f), true
	}
	return 0, false
}

// notSafeInt is safeInt64's refusal of a non-number at path.
func notSafeInt(path string, v bsoncore.Value) error {
	return mongoerr.New(mongoerr.TypeMismatch, "BSON field '%s' is the wrong type '%s', expected types '[long, int, decimal, double]'", path, typeName(v.Type))
}

// Document reads an optional document argument; nil when absent.
func (r *Request) Document(name string) (bsoncore.Document, error) {
	return r.documentOf(name, r.arg(name))
}

// documentOf is Document of field name's value v (Type 0 when absent).
func (r *Request) documentOf(name string, v bsoncore.Value) (bsoncore.Document, error) {
	if v.Type == 0 || v.Type == bsoncore.TypeNull {
		return nil, nil
	}
	d, ok := v.DocumentOK()
	if !ok {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '%s.%s' is the wrong type '%s', expected type 'object'", r.Name, name, typeName(v.Type))
	}
	return d, nil
}

// String reads an optional string argument.
func (r *Request) String(name, def string) (string, error) {
	v, ok := r.Arg(name)
	if !ok || v.Type == bsoncore.TypeNull {
		return def, nil
	}
	s, ok := v.StringValueOK()
	if !ok {
		return "", mongoerr.New(mongoerr.TypeMismatch, "BSON field '%s.%s' is the wrong type '%s', expected type 'string'", r.Name, name, typeName(v.Type))
	}
	return s, nil
}

// numberAsInt reads a number that holds an integer (see bsonx.AsInt64).
func numberAsInt(v bsoncore.Value) (int64, bool) { return bsonx.AsInt64(v) }

// typeName is MongoDB's name for a BSON type, as its error messages use.
func typeName(t bsoncore.Type) string { return bsonx.TypeName(t) }

// arrayValues are the elements of array argument name; nil when it is
// absent or not an array (for lenient readers such as the handshake's).
func (r *Request) arrayValues(name string) []bsoncore.Value {
	v, ok := r.Arg(name)
	if !ok {
		return nil
	}
	arr, ok := v.ArrayOK()
	if !ok {
		return nil
	}
	vals, _ := arr.Values()
	return vals
}
