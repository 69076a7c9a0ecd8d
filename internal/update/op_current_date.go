package update

import (
	"encoding/binary"

	"github.com/cairndb/cairn/internal/bsonx"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// $currentDate: set a field to the current time, as a date (true, false, or
// {$type: "date"}) or a timestamp ({$type: "timestamp"}).

func init() { register("$currentDate", parseCurrentDate) }

type currentDateNode struct{ timestamp bool }

func parseCurrentDate(_ path, arg bsoncore.Value) (updNode, error) {
	switch arg.Type {
	case bsoncore.TypeBoolean:
		return currentDateNode{}, nil
	case bsoncore.TypeEmbeddedDocument:
		n, found := currentDateNode{}, false
		elems := arg.Data[4 : len(arg.Data)-1]
		for len(elems) > 0 {
			t, key, val, rest, ok := bsonx.NextElement(elems)
			if !ok {
				break
			}
			elems = rest
			if string(key) != "$type" {
				return nil, badValue("Unrecognized $currentDate option: %s", key)
			}
			if t == bsoncore.TypeString {
				switch s, _ := (bsoncore.Value{Type: t, Data: val}).StringValueOK(); s {
				case "date":
					n.timestamp, found = false, true
				case "timestamp":
					n.timestamp, found = true, true
				}
			}
		}
		if !found {
			return nil, badValue("The '$type' string field is required to be 'date' or 'timestamp': {$currentDate: {field : {$type: 'date'}}}")
		}
		return n, nil
	}
	return nil, badValue("%s is not valid type for $currentDate. Please use a boolean ('true') or a $type expression ({$type: 'timestamp/date'}).", typeName(arg.Type))
}

func (n currentDateNode) apply(s *applyState, c cursor) error {
	var v bsoncore.Value
	if n.timestamp {
		t, i := s.ctx.timestamp()
		v = bsoncore.Value{Type: bsoncore.TypeTimestamp, Data: binary.LittleEndian.AppendUint32(binary.LittleEndian.AppendUint32(nil, i), t)}
	} else {
		v = bsoncore.Value{Type: bsoncore.TypeDateTime, Data: binary.LittleEndian.AppendUint64(nil, uint64(s.ctx.Now.UnixMilli()))}
	}
	if !c.complete() {
		return s.create(c, newNode(v))
	}
	if sameBytes(c.elem.value(), v) {
		return nil
	}
	c.elem.set(v)
	return s.replaced(c)
}
