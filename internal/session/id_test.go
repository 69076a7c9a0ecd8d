package session

import (
	"crypto/sha256"
	"errors"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
)

// TestParseLSID: an lsid as drivers send it, and each malformed one with
// MongoDB's code; the walk in place must agree with a full parse.
func TestParseLSID(t *testing.T) {
	uuid := make([]byte, 16)
	uuid[0] = 7
	good := bsoncore.NewDocumentBuilder().AppendBinary("id", 4, uuid).Build()
	var user [32]byte
	user[1] = 9
	withUID := bsoncore.NewDocumentBuilder().AppendBinary("id", 4, uuid).AppendBinary("uid", 0, user[:]).Build()
	otherUID := bsoncore.NewDocumentBuilder().AppendBinary("id", 4, uuid).AppendBinary("uid", 0, make([]byte, 32)).Build()
	var other [32]byte
	for _, tc := range []struct {
		name        string
		lsid        bsoncore.Document
		want        mongoerr.Code
		impersonate bool     // the client may name any uid (__system, no access control)
		uid         [32]byte // the session's uid when it parses (zero: user)
	}{
		{"a driver's lsid", good, 0, false, user},
		{"with the user's own uid", withUID, 0, false, user},
		{"another user's uid", otherUID, mongoerr.Unauthorized, false, user},
		{"another user's uid, impersonating", otherUID, 0, true, other},
		{"no uid, impersonating: the client's own", good, 0, true, user},
		{"truncated", good[:len(good)-3], mongoerr.InvalidBSON, false, user},
		{"length beyond the bytes", append(bsoncore.Document{0xff, 0, 0, 0}, good[4:]...), mongoerr.InvalidBSON, false, user},
		{"no id", bsoncore.NewDocumentBuilder().Build(), mongoerr.IDLMissingField, false, user},
		{"an unknown field", bsoncore.NewDocumentBuilder().AppendBinary("id", 4, uuid).AppendInt32("x", 1).Build(), mongoerr.UnknownField, false, user},
		{"id not a UUID", bsoncore.NewDocumentBuilder().AppendString("id", "x").Build(), mongoerr.TypeMismatch, false, user},
	} {
		id, err := Parse(tc.lsid, user, tc.impersonate)
		var me *mongoerr.Error
		var got mongoerr.Code
		if errors.As(err, &me) {
			got = me.Code
		} else if err != nil {
			t.Fatalf("%s: %v is not a MongoDB error", tc.name, err)
		}
		if got != tc.want {
			t.Errorf("%s: code %d, want %d (%v)", tc.name, got, tc.want, err)
		}
		if tc.want == 0 && (id.UUID[0] != 7 || id.UID != tc.uid) {
			t.Errorf("%s: parsed %+v", tc.name, id)
		}
	}
}

// TestUIDOfUserKept: the kept hashes are the hashes, on the first call and
// on the ones after it (the table answers from memory).
func TestUIDOfUserKept(t *testing.T) {
	for _, c := range []struct{ user, hashed string }{
		{"", ""},
		{"admin.bob", "bob@admin"},
		{"test.a.b", "a.b@test"},
	} {
		want := sha256.Sum256([]byte(c.hashed))
		for range 2 {
			if got := UIDOfUser(c.user); got != want {
				t.Fatalf("UIDOfUser(%q) = %x, want sha256(%q)", c.user, got, c.hashed)
			}
		}
	}
}

// TestParseDriverLSIDMatchesWalk: the in-place read of a driver's lsid
// takes its layout and nothing else: for the driver's bytes and for every
// one-byte change of them, whenever it answers, the walk answers the same
// ID without an error (and the driver's own bytes take it).
func TestParseDriverLSIDMatchesWalk(t *testing.T) {
	uuid := []byte("0123456789abcdef")
	good := bsoncore.NewDocumentBuilder().AppendBinary("id", 4, uuid).Build()
	var user [32]byte
	user[3] = 5
	if id, ok := parseDriverLSID(good, user); !ok || string(id.UUID[:]) != string(uuid) || id.UID != user {
		t.Fatalf("a driver's lsid %x: %v %v", []byte(good), id, ok)
	}
	taken := 0
	for i := range good {
		for _, b := range []byte{0, 1, 2, 4, 5, 16, 30, 'd', 'i', 0xff, good[i] ^ 1, good[i] + 1} {
			lsid := append(bsoncore.Document(nil), good...)
			lsid[i] = b
			id, ok := parseDriverLSID(lsid, user)
			if !ok {
				continue
			}
			taken++
			want, err := parseWalk(lsid, user, false)
			if err != nil || want != id {
				t.Fatalf("byte %d = %#x: in place %v, the walk %v %v", i, b, id, want, err)
			}
		}
	}
	if taken < 16 { // the UUID's bytes change freely
		t.Fatalf("only %d of the changed lsids were read in place", taken)
	}
}
