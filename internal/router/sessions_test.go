package router

import (
	"bytes"
	"crypto/sha256"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/auth"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// TestSessionFields: the router reads a command's session fields as
// mongos does, step by step on one session (each step's command, its
// code, and whether the command's reply would carry
// TransientTransactionError), before any shard is asked.
func TestSessionFields(t *testing.T) {
	r, err := New(Options{ConfigDB: "cfg/127.0.0.1:1"})
	if err != nil {
		t.Fatal(err)
	}
	const lsid = `"lsid": {"id": {"$binary": {"base64": "3bRFJtsySImyXSwV5AOZtg==", "subType": "04"}}}`
	for i, c := range []struct {
		cmd     string
		code    mongoerr.Code
		passed  bool // the shards see the session
		inTxn   bool
		retried bool // a retryable write
	}{
		{`{"find": "c"}`, 0, false, false, false},
		{`{"find": "c", "txnNumber": {"$numberLong": "1"}}`, mongoerr.InvalidOptions, false, false, false},
		{`{"find": "c", "autocommit": false}`, mongoerr.InvalidOptions, false, false, false},
		{`{"find": "c", "lsid": 1}`, mongoerr.TypeMismatch, false, false, false},
		{`{"find": "c", "lsid": {"id": 1}}`, mongoerr.TypeMismatch, false, false, false},
		{`{"find": "c", ` + lsid + `}`, 0, true, false, false},
		{`{"create": "c", ` + lsid + `}`, 0, false, false, false},
		{`{"find": "c", ` + lsid + `, "txnNumber": {"$numberLong": "1"}}`, mongoerr.NotARetryableWriteCommand, false, false, false},
		{`{"insert": "c", ` + lsid + `, "txnNumber": 1}`, mongoerr.TypeMismatch, false, false, false},
		{`{"insert": "c", ` + lsid + `, "txnNumber": {"$numberLong": "-1"}}`, mongoerr.BadValue, false, false, false},
		{`{"insert": "c", ` + lsid + `, "txnNumber": {"$numberLong": "1"}}`, 0, true, false, true},
		{`{"insert": "c", ` + lsid + `, "autocommit": false}`, mongoerr.InvalidOptions, false, false, false},
		{`{"insert": "c", ` + lsid + `, "txnNumber": {"$numberLong": "2"}, "autocommit": true, "startTransaction": true}`, mongoerr.InvalidOptions, false, false, false},
		{`{"insert": "c", ` + lsid + `, "txnNumber": {"$numberLong": "2"}, "autocommit": false, "startTransaction": false}`, mongoerr.InvalidOptions, false, false, false},
		{`{"count": "c", ` + lsid + `, "txnNumber": {"$numberLong": "2"}, "autocommit": false, "startTransaction": true}`, mongoerr.OperationNotSupportedInTransaction, false, false, false},
		{`{"insert": "c", ` + lsid + `, "txnNumber": {"$numberLong": "2"}, "autocommit": false, "startTransaction": true, "writeConcern": {"w": 1}}`, mongoerr.InvalidOptions, false, false, false},
		{`{"insert": "c", ` + lsid + `, "txnNumber": {"$numberLong": "2"}, "autocommit": false, "startTransaction": true, "readConcern": {"level": "linearizable"}}`, mongoerr.InvalidOptions, false, false, false},
		{`{"find": "c", ` + lsid + `, "txnNumber": {"$numberLong": "2"}, "autocommit": false}`, mongoerr.NoSuchTransaction, false, false, false},
		{`{"insert": "c", ` + lsid + `, "txnNumber": {"$numberLong": "2"}, "autocommit": false, "startTransaction": true, "readConcern": {"level": "snapshot"}}`, 0, true, true, false},
		{`{"find": "c", ` + lsid + `, "txnNumber": {"$numberLong": "2"}, "autocommit": false}`, 0, true, true, false},
		{`{"find": "c", ` + lsid + `, "txnNumber": {"$numberLong": "2"}, "autocommit": false, "readConcern": {"level": "local"}}`, mongoerr.InvalidOptions, false, false, false},
		{`{"find": "c", ` + lsid + `, "txnNumber": {"$numberLong": "2"}, "autocommit": false, "startTransaction": true}`, mongoerr.ConflictingOperationInProgress, false, false, false},
		{`{"find": "c", ` + lsid + `, "txnNumber": {"$numberLong": "1"}, "autocommit": false, "startTransaction": true}`, mongoerr.TransactionTooOld, false, false, false},
		{`{"find": "c", ` + lsid + `, "txnNumber": {"$numberLong": "3"}, "autocommit": false}`, mongoerr.NoSuchTransaction, false, false, false},
		{`{"commitTransaction": 1, ` + lsid + `, "txnNumber": {"$numberLong": "2"}, "autocommit": false, "startTransaction": true}`, mongoerr.InvalidOptions, false, false, false},
		{`{"commitTransaction": 1, ` + lsid + `, "txnNumber": {"$numberLong": "2"}, "autocommit": false}`, 0, true, true, false},
	} {
		body := doc(t, c.cmd)
		req := &request{name: body.Index(0).Key(), db: "db", body: body}
		op, err := r.beginSession(req)
		if mongoerr.CodeOf(err) != c.code || (op != nil) != c.passed || (op != nil && op.txn != nil) != c.inTxn || (op != nil && op.retryable) != c.retried {
			t.Errorf("step %d %s: op %+v, err %v; want code %d, passed %v, in a transaction %v, retryable %v", i, c.cmd, op, err, c.code, c.passed, c.inTxn, c.retried)
		}
	}
	// A snapshot transaction reads every shard at one time: each
	// participant's first statement starts it with the same
	// atClusterTime, gossiped as $clusterTime; later statements carry
	// neither.
	body := doc(t, `{"find": "c", `+lsid+`, "txnNumber": {"$numberLong": "2"}, "autocommit": false}`)
	op, err := r.beginSession(&request{name: "find", db: "db", body: body})
	if err != nil {
		t.Fatal(err)
	}
	fields := func(shard string) bsoncore.Document {
		t.Helper()
		idx, dst := bsoncore.AppendDocumentStart(nil)
		dst, err := op.appendSession(dst, shard, "find")
		if err != nil {
			t.Fatal(err)
		}
		dst, _ = bsoncore.AppendDocumentEnd(dst, idx)
		return dst
	}
	var times []bsoncore.Value
	for _, s := range []string{"s0", "s1"} {
		f := fields(s)
		at, gossip := f.Lookup("readConcern", "atClusterTime"), f.Lookup("$clusterTime", "clusterTime")
		start, _ := f.Lookup("startTransaction").BooleanOK()
		level, _ := f.Lookup("readConcern", "level").StringValueOK()
		if !start || at.Type != bsoncore.TypeTimestamp || !at.Equal(gossip) || level != "snapshot" {
			t.Fatalf("%s's first statement of a snapshot transaction: %s", s, f)
		}
		times = append(times, at)
	}
	if !times[0].Equal(times[1]) {
		t.Fatalf("two participants read at %s and %s", times[0], times[1])
	}
	if f := fields("s0"); f.Lookup("readConcern").Type != 0 || f.Lookup("$clusterTime").Type != 0 {
		t.Fatalf("a participant's second statement: %s", f)
	}
}

// TestSessionsAreUsers: a session is its lsid's id and its user's uid: the
// same id used by two users names two sessions, a client may name only its
// own uid, and the lsid the shards get names the user's uid (so their
// session is the user's, not the router's __system).
func TestSessionsAreUsers(t *testing.T) {
	id := bsoncore.NewDocumentBuilder().AppendBinary("id", 4, []byte("0123456789abcdef")).Build()
	ann := &connAuth{user: &auth.User{Name: "ann", DB: "admin"}}
	bob := &connAuth{user: &auth.User{Name: "bob", DB: "admin"}}
	lsidOf := func(a *connAuth) (bsoncore.Document, sessionKey) {
		t.Helper()
		lsid, key, err := parseLSID(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: id}, uidOf(a))
		if err != nil {
			t.Fatal(err)
		}
		return lsid, key
	}
	annLSID, annKey := lsidOf(ann)
	_, bobKey := lsidOf(bob)
	_, noneKey := lsidOf(nil)
	if annKey == bobKey || annKey == noneKey || annKey.id != bobKey.id {
		t.Errorf("one id, three users: keys %x %x %x", annKey.uid[:4], bobKey.uid[:4], noneKey.uid[:4])
	}
	annUID := sha256.Sum256([]byte("ann@admin"))
	if _, uid := annLSID.Lookup("uid").Binary(); !bytes.Equal(uid, annUID[:]) {
		t.Errorf("the shards' lsid %s does not name ann's uid", annLSID)
	}
	if _, _, err := parseLSID(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: annLSID}, uidOf(bob)); mongoerr.CodeOf(err) != mongoerr.Unauthorized {
		t.Errorf("bob naming ann's uid: %v, want Unauthorized", err)
	}
	if _, key, err := parseLSID(bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: annLSID}, uidOf(ann)); err != nil || key != annKey {
		t.Errorf("ann naming her own uid: %v", err)
	}
	r := &sessions{}
	r.touch(annKey)
	r.touch(bobKey)
	if got := r.keysOf(uidOf(ann)); len(got) != 1 || got[0] != annKey {
		t.Errorf("ann's sessions: %v", got)
	}
}
