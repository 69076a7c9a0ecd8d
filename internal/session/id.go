package session

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
)

// ID is a logical session id: the client's UUID and the SHA-256 of the
// user that owns the session (of "" with no user), as MongoDB's lsid.
type ID struct {
	UUID [16]byte
	UID  [32]byte
}

// UIDOf is the uid of a user, "name@db" ("" for none), as MongoDB makes it.
func UIDOf(user string) [32]byte { return sha256.Sum256([]byte(user)) }

// Parse reads an lsid ({id: UUID, uid: BinData}) sent by a client whose
// user has uid user. A uid the client gives must be its own, unless the
// client may impersonate (a router forwarding its client's session as
// __system, or a server without access control: MongoDB's impersonate
// privilege), when the session is the named uid's.
func Parse(lsid bsoncore.Document, user [32]byte, impersonate bool) (ID, error) {
	if id, ok := parseDriverLSID(lsid, user); ok {
		return id, nil
	}
	return parseWalk(lsid, user, impersonate)
}

// driverLSIDSize is the size of the lsid every driver sends: {id: UUID},
// 4 length bytes, the element (type, "id\x00", 4 length bytes, the
// subtype, 16 bytes) and the terminating 0.
const driverLSIDSize = 4 + 1 + 3 + 4 + 1 + 16 + 1

// parseDriverLSID is Parse of exactly that layout, read in place: every
// command of a driver's session carries it, and the walk validates each
// element and reads its key twice. ok is false for any other bytes, which
// parseWalk reads; for these it gives what parseWalk gives
// (TestParseDriverLSIDMatchesWalk).
func parseDriverLSID(lsid bsoncore.Document, user [32]byte) (id ID, ok bool) {
	if len(lsid) != driverLSIDSize || binary.LittleEndian.Uint32(lsid) != driverLSIDSize ||
		lsid[4] != byte(bsoncore.TypeBinary) || string(lsid[5:8]) != "id\x00" ||
		binary.LittleEndian.Uint32(lsid[8:]) != 16 || lsid[12] != 4 || lsid[driverLSIDSize-1] != 0 {
		return id, false
	}
	copy(id.UUID[:], lsid[13:29])
	id.UID = user
	return id, true
}

// parseWalk is Parse of any lsid: its elements walked one by one.
func parseWalk(lsid bsoncore.Document, user [32]byte, impersonate bool) (ID, error) {
	var id ID
	named, hasUID := [32]byte{}, false
	// Every command of a driver's session carries its lsid: walk it in
	// place rather than through Elements, which allocates a slice.
	n, rest, ok := bsoncore.ReadLength(lsid)
	if !ok || int(n) != len(lsid) || n < 5 || lsid[len(lsid)-1] != 0 {
		return id, mongoerr.New(mongoerr.InvalidBSON, "invalid lsid: not a well-formed document")
	}
	rest = rest[:len(rest)-1]
	hasID := false
	for len(rest) > 0 {
		el, r, ok := bsoncore.ReadElement(rest)
		if !ok {
			return id, mongoerr.New(mongoerr.InvalidBSON, "invalid lsid: a malformed element")
		}
		rest = r
		v := el.Value()
		switch el.Key() {
		case "id":
			sub, data, ok := v.BinaryOK()
			if !ok || sub != 4 || len(data) != 16 {
				return id, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'OperationSessionInfo.lsid.id' is the wrong type '%s', expected type 'UUID'", typeName(v))
			}
			copy(id.UUID[:], data)
			hasID = true
		case "uid":
			_, data, ok := v.BinaryOK()
			if !ok || len(data) != 32 {
				return id, mongoerr.New(mongoerr.TypeMismatch, "BSON field 'OperationSessionInfo.lsid.uid' is the wrong type '%s', expected type 'binData'", typeName(v))
			}
			named, hasUID = [32]byte(data), true
			if named != user && !impersonate {
				return id, mongoerr.New(mongoerr.Unauthorized, "Only a session's own user may name its uid")
			}
		default:
			return id, mongoerr.New(mongoerr.UnknownField, "BSON field 'OperationSessionInfo.lsid.%s' is an unknown field.", el.Key())
		}
	}
	if !hasID {
		return id, mongoerr.New(mongoerr.IDLMissingField, "BSON field 'OperationSessionInfo.lsid.id' is missing but a required field")
	}
	id.UID = user
	if hasUID {
		id.UID = named
	}
	return id, nil
}

func typeName(v bsoncore.Value) string {
	if v.Type == bsoncore.TypeBinary {
		return "binData"
	}
	return v.Type.String()
}

// Doc is the lsid as MongoDB shows it: {id: UUID, uid: BinData}.
func (id ID) Doc() bsoncore.Document {
	d := bsoncore.NewDocumentBuilder().
		AppendBinary("id", 4, id.UUID[:]).
		AppendBinary("uid", 0, id.UID[:])
	return d.Build()
}

// Value is Doc as a BSON value (an _id).
func (id ID) Value() bsoncore.Value {
	return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: id.Doc()}
}

// String is the session as MongoDB's messages print it.
func (id ID) String() string {
	u := hex.EncodeToString(id.UUID[:])
	return u[0:8] + "-" + u[8:12] + "-" + u[12:16] + "-" + u[16:20] + "-" + u[20:] + " - " + hex.EncodeToString(id.UID[:])
}

// key is the session's prefix in the retry keyspace: fixed length, so no
// session's key is a prefix of another's.
func (id ID) key(dst []byte) []byte {
	dst = append(dst, id.UUID[:]...)
	return append(dst, id.UID[:]...)
}
