package commands

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/mongoerr"
	"github.com/cairndb/cairn/internal/storage"
)

var testLSID = bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: []byte("0123456789abcdef")}}}

// withTxn adds lsid and txnNumber to cmd.
func withTxn(cmd bson.D, txn int64) bson.D {
	return append(cmd, bson.E{Key: "lsid", Value: testLSID}, bson.E{Key: "txnNumber", Value: txn})
}

func runDoc(t *testing.T, s *Session, db string, cmd bson.D) bsoncore.Document {
	t.Helper()
	return Run(context.Background(), s, testRequest(t, db, cmd), nil)
}

func replyCode(d bsoncore.Document) int32 {
	if ok, _ := d.Lookup("ok").AsFloat64OK(); ok == 1 {
		return 0
	}
	c, _ := d.Lookup("code").AsInt32OK()
	return c
}

func replyInt(t *testing.T, d bsoncore.Document, path ...string) int64 {
	t.Helper()
	v, err := d.LookupErr(path...)
	if err != nil {
		t.Fatalf("reply %s has no %v", d, path)
	}
	n, ok := v.AsInt64OK()
	if !ok {
		t.Fatalf("reply %s: %v is %s", d, path, v.Type)
	}
	return n
}

// docA reads field a of the document with _id id in test.c.
func docA(t *testing.T, s *Session, id int) int64 {
	t.Helper()
	r := runDoc(t, s, "test", bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "_id", Value: id}}}})
	v, err := r.LookupErr("cursor", "firstBatch", "0", "a")
	if err != nil {
		return -1
	}
	n, _ := v.AsInt64OK()
	return n
}

// TestRetryableWrites: each statement of a write with lsid and txnNumber
// runs at most once; a retry answers what the first run did.
func TestRetryableWrites(t *testing.T) {
	s := testSession(t, engine.Options{})
	type step struct {
		name string
		cmd  bson.D
		txn  int64
		code int32
		n    int64 // the reply's n, when code is 0
		a    int64 // document 1's a afterwards (-1: gone)
	}
	ins := bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 0}}, bson.D{{Key: "_id", Value: 2}}}}}
	inc := bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "u", Value: bson.D{{Key: "$inc", Value: bson.D{{Key: "a", Value: 1}}}}}}}}}
	del := bson.D{{Key: "delete", Value: "c"}, {Key: "deletes", Value: bson.A{bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: 2}}}, {Key: "limit", Value: 1}}}}}
	fam := bson.D{{Key: "findAndModify", Value: "c"}, {Key: "query", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "update", Value: bson.D{{Key: "$inc", Value: bson.D{{Key: "a", Value: 1}}}}}, {Key: "new", Value: true}}
	multi := bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: bson.D{}}, {Key: "u", Value: bson.D{{Key: "$inc", Value: bson.D{{Key: "a", Value: 1}}}}}, {Key: "multi", Value: true}}}}}
	steps := []step{
		{name: "insert", cmd: ins, txn: 1, n: 2, a: 0},
		{name: "insert retried: no duplicate key, same n", cmd: ins, txn: 1, n: 2, a: 0},
		{name: "update", cmd: inc, txn: 2, n: 1, a: 1},
		{name: "update retried: not applied again", cmd: inc, txn: 2, n: 1, a: 1},
		{name: "delete", cmd: del, txn: 3, n: 1, a: 1},
		{name: "delete retried: same n", cmd: del, txn: 3, n: 1, a: 1},
		{name: "findAndModify", cmd: fam, txn: 4, n: 1, a: 2},
		{name: "findAndModify retried", cmd: fam, txn: 4, n: 1, a: 2},
		{name: "an older txnNumber is TransactionTooOld", cmd: inc, txn: 3, code: int32(mongoerr.TransactionTooOld), a: 2},
		{name: "a newer txnNumber runs again", cmd: inc, txn: 5, n: 1, a: 3},
		{name: "a multi update is not retryable", cmd: multi, txn: 6, n: 0, a: 3},
	}
	for _, st := range steps {
		r := runDoc(t, s, "test", withTxn(st.cmd, st.txn))
		if got := replyCode(r); got != st.code {
			t.Fatalf("%s: code %d, want %d: %s", st.name, got, st.code, r)
		}
		if st.code == 0 {
			n := int64(-1)
			if st.cmd[0].Key == "findAndModify" {
				n = replyInt(t, r, "lastErrorObject", "n")
				if v := replyInt(t, r, "value", "a"); v != st.a {
					t.Errorf("%s: value.a %d, want %d", st.name, v, st.a)
				}
			} else {
				n = replyInt(t, r, "n")
			}
			if n != st.n {
				t.Errorf("%s: n %d, want %d: %s", st.name, n, st.n, r)
			}
		}
		if a := docA(t, s, 1); a != st.a {
			t.Errorf("%s: a %d, want %d", st.name, a, st.a)
		}
	}
	r := runDoc(t, s, "test", withTxn(multi, 7))
	if c, _ := r.Lookup("writeErrors", "0", "code").AsInt32OK(); c != int32(mongoerr.InvalidOptions) {
		t.Errorf("multi update: %s, want a write error 72", r)
	}
	// config.transactions shows the newest transaction number that wrote
	// (5: the multi updates of 6 and 7 failed and recorded nothing).
	r = runDoc(t, s, "config", bson.D{{Key: "find", Value: "transactions"}})
	if n := replyInt(t, r, "cursor", "firstBatch", "0", "txnNum"); n != 5 {
		t.Errorf("config.transactions txnNum %d, want 5: %s", n, r)
	}
	// A point upsert that inserts does so in Modify's own request (one read
	// per point write): its record rides there, and a retry inserts nothing
	// more and applies nothing twice.
	ups := bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: 9}}}, {Key: "u", Value: bson.D{{Key: "$inc", Value: bson.D{{Key: "b", Value: 1}}}}}, {Key: "upsert", Value: true}}}}}
	for try := range 2 {
		r := runDoc(t, s, "test", withTxn(ups, 20))
		if n := replyInt(t, r, "n"); n != 1 || r.Lookup("upserted", "0", "_id").Type == 0 {
			t.Fatalf("point upsert, try %d: %s, want n 1 and the upserted _id", try, r)
		}
		f := runDoc(t, s, "test", bson.D{{Key: "find", Value: "c"}, {Key: "filter", Value: bson.D{{Key: "_id", Value: 9}}}})
		if b := replyInt(t, f, "cursor", "firstBatch", "0", "b"); b != 1 {
			t.Fatalf("point upsert, try %d: b %d, want 1 (applied once)", try, b)
		}
	}
}

// TestSessionFieldErrors: the codes of bad session fields.
func TestSessionFieldErrors(t *testing.T) {
	s := testSession(t, engine.Options{})
	find := bson.D{{Key: "find", Value: "c"}}
	for _, c := range []struct {
		name string
		cmd  bson.D
		code mongoerr.Code
	}{
		{"txnNumber on find", withTxn(find, 1), mongoerr.NotARetryableWriteCommand},
		{"txnNumber without lsid", append(find, bson.E{Key: "txnNumber", Value: int64(1)}), mongoerr.InvalidOptions},
		{"txnNumber as int32", append(find, bson.E{Key: "lsid", Value: testLSID}, bson.E{Key: "txnNumber", Value: int32(1)}), mongoerr.TypeMismatch},
		{"lsid without id", append(find, bson.E{Key: "lsid", Value: bson.D{}}), mongoerr.IDLMissingField},
		{"lsid with a non-UUID id", append(find, bson.E{Key: "lsid", Value: bson.D{{Key: "id", Value: 1}}}), mongoerr.TypeMismatch},
		// Without access control anyone may name a uid (mongod's impersonate
		// check passes); with it, only __system (server TestAuthSessionUID).
		{"lsid with another user's uid, no access control", append(find, bson.E{Key: "lsid", Value: bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: make([]byte, 16)}}, {Key: "uid", Value: bson.Binary{Data: make([]byte, 32)}}}}), 0},
		{"lsid with a short uid", append(find, bson.E{Key: "lsid", Value: bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: make([]byte, 16)}}, {Key: "uid", Value: bson.Binary{Data: make([]byte, 31)}}}}), mongoerr.TypeMismatch},
	} {
		if got := replyCode(runDoc(t, s, "test", c.cmd)); got != int32(c.code) {
			t.Errorf("%s: code %d, want %d", c.name, got, c.code)
		}
	}
}

// TestRetryAfterCrash: a retryable write acknowledged before a crash (the
// disk keeps only what was synced, as after kill -9 with --sync=always) is
// not applied again when the client retries it after the restart: the
// record rode in the write's own commit.
func TestRetryAfterCrash(t *testing.T) {
	fs := vfs.NewCrashableMem()
	log := slog.New(slog.DiscardHandler)
	open := func(fs vfs.FS) (*Session, func()) {
		eng, err := engine.Open("db", engine.Options{FS: fs, Logger: log})
		if err != nil {
			t.Fatal(err)
		}
		env := NewEnv(eng, Config{DBPath: "db"}, log)
		return &Session{Env: env}, func() { env.Close(); _ = eng.Close() }
	}
	s, closeFirst := open(fs)
	ins := bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 0}}}}}
	inc := bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "u", Value: bson.D{{Key: "$inc", Value: bson.D{{Key: "a", Value: 1}}}}}}}}}
	if r := runDoc(t, s, "test", ins); replyCode(r) != 0 {
		t.Fatal(r)
	}
	if r := runDoc(t, s, "test", withTxn(inc, 9)); replyInt(t, r, "nModified") != 1 {
		t.Fatal(r)
	}
	crashed := fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
	closeFirst()
	s2, closeSecond := open(crashed)
	defer closeSecond()
	r := runDoc(t, s2, "test", withTxn(inc, 9))
	if replyCode(r) != 0 || replyInt(t, r, "n") != 1 || replyInt(t, r, "nModified") != 1 {
		t.Errorf("retry after the crash: %s, want n 1, nModified 1 from the record", r)
	}
	if a := docA(t, s2, 1); a != 1 {
		t.Errorf("after the retry a = %d, want 1: the retried write ran again", a)
	}
}

// TestSessionCursors: a cursor belongs to the session that opened it: a
// getMore from no session or another one is refused with MongoDB's codes,
// and killing the session closes the cursor.
func TestSessionCursors(t *testing.T) {
	s := testSession(t, engine.Options{})
	runDoc(t, s, "test", bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "_id", Value: 2}}, bson.D{{Key: "_id", Value: 3}}}}})
	other := bson.D{{Key: "id", Value: bson.Binary{Subtype: 4, Data: []byte("fedcba9876543210")}}}
	open := func(lsid bson.D) int64 {
		cmd := bson.D{{Key: "find", Value: "c"}, {Key: "batchSize", Value: 1}}
		if lsid != nil {
			cmd = append(cmd, bson.E{Key: "lsid", Value: lsid})
		}
		return replyInt(t, runDoc(t, s, "test", cmd), "cursor", "id")
	}
	getMore := func(id int64, lsid bson.D) int32 {
		cmd := bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "c"}, {Key: "batchSize", Value: 1}}
		if lsid != nil {
			cmd = append(cmd, bson.E{Key: "lsid", Value: lsid})
		}
		return replyCode(runDoc(t, s, "test", cmd))
	}
	inSession, noSession := open(testLSID), open(nil)
	for _, c := range []struct {
		name string
		id   int64
		lsid bson.D
		code mongoerr.Code
	}{
		{"no lsid on a session's cursor", inSession, nil, mongoerr.GetMoreNoLSID},
		{"another session", inSession, other, mongoerr.CursorInUse},
		{"a session on a cursor of none", noSession, testLSID, mongoerr.GetMoreNoSessionCursor},
		{"the cursor's own session", inSession, testLSID, 0},
	} {
		if got := getMore(c.id, c.lsid); got != int32(c.code) {
			t.Errorf("%s: code %d, want %d", c.name, got, c.code)
		}
	}
	if r := runDoc(t, s, "admin", bson.D{{Key: "killSessions", Value: bson.A{testLSID}}}); replyCode(r) != 0 {
		t.Fatal(r)
	}
	if got := getMore(inSession, testLSID); got != int32(mongoerr.CursorNotFound) {
		t.Errorf("getMore after killSessions: code %d, want 43", got)
	}
	if got := getMore(noSession, nil); got != 0 {
		t.Errorf("a cursor of no session survives killSessions: code %d", got)
	}
}

// TestSessionTable: config.system.sessions holds the live sessions after a
// flush, with MongoDB's TTL index, and loses the ended ones.
func TestSessionTable(t *testing.T) {
	s := testSession(t, engine.Options{})
	runDoc(t, s, "test", bson.D{{Key: "ping", Value: 1}, {Key: "lsid", Value: testLSID}})
	started := runDoc(t, s, "admin", bson.D{{Key: "startSession", Value: 1}})
	if err := s.Env.Sessions.Flush(); err != nil {
		t.Fatal(err)
	}
	count := func() int64 {
		return replyInt(t, runDoc(t, s, "config", bson.D{{Key: "count", Value: "system.sessions"}}), "n")
	}
	if n := count(); n != 2 {
		t.Errorf("config.system.sessions holds %d sessions, want 2", n)
	}
	ix := runDoc(t, s, "config", bson.D{{Key: "listIndexes", Value: "system.sessions"}})
	if name, _ := ix.Lookup("cursor", "firstBatch", "1", "name").StringValueOK(); name != "lsidTTLIndex" {
		t.Errorf("indexes of config.system.sessions: %s, want lsidTTLIndex", ix)
	}
	id, _ := started.Lookup("id").DocumentOK()
	runDoc(t, s, "admin", bson.D{{Key: "endSessions", Value: bson.A{bson.Raw(id)}}})
	if err := s.Env.Sessions.Flush(); err != nil {
		t.Fatal(err)
	}
	if n := count(); n != 1 {
		t.Errorf("after endSessions config.system.sessions holds %d, want 1", n)
	}
}

// TestOplogThroughFind: local.oplog.rs reads with find in $natural order,
// a retryable write's entries carry its lsid, txnNumber and stmtIds, and a
// tailable cursor on it sees later changes.
func TestOplogThroughFind(t *testing.T) {
	s := testSession(t, engine.Options{})
	ins := bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "_id", Value: 2}}}}}
	if r := runDoc(t, s, "test", withTxn(ins, 3)); replyCode(r) != 0 {
		t.Fatal(r)
	}
	r := runDoc(t, s, "local", bson.D{{Key: "find", Value: "oplog.rs"}, {Key: "filter", Value: bson.D{{Key: "ns", Value: "test.c"}}}, {Key: "tailable", Value: true}})
	for i := range 2 {
		e, err := r.LookupErr("cursor", "firstBatch", string(rune('0'+i)))
		if err != nil {
			t.Fatalf("entry %d missing: %s", i, r)
		}
		d := e.Document()
		if op, _ := d.Lookup("op").StringValueOK(); op != "i" {
			t.Errorf("entry %d: op %q", i, op)
		}
		if n, _ := d.Lookup("txnNumber").Int64OK(); n != 3 {
			t.Errorf("entry %d: txnNumber %d, want 3", i, n)
		}
		if st, _ := d.Lookup("stmtId").Int32OK(); st != int32(i) {
			t.Errorf("entry %d: stmtId %d, want %d", i, st, i)
		}
	}
	id := replyInt(t, r, "cursor", "id")
	if id == 0 {
		t.Fatal("a tailable find on local.oplog.rs closed its cursor")
	}
	runDoc(t, s, "test", bson.D{{Key: "delete", Value: "c"}, {Key: "deletes", Value: bson.A{bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: 1}}}, {Key: "limit", Value: 1}}}}})
	r = runDoc(t, s, "local", bson.D{{Key: "getMore", Value: id}, {Key: "collection", Value: "oplog.rs"}})
	if op, _ := r.Lookup("cursor", "nextBatch", "0", "op").StringValueOK(); op != "d" {
		t.Errorf("the tailable cursor's next batch: %s, want the delete's entry", r)
	}
}

// TestOplogSeek: a find on local.oplog.rs bounded below on ts reads from
// that entry on, not from the oldest one.
func TestOplogSeek(t *testing.T) {
	s := testSession(t, engine.Options{})
	for i := range 50 {
		runDoc(t, s, "test", bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{bson.D{{Key: "_id", Value: i}}}}})
	}
	r := runDoc(t, s, "local", bson.D{{Key: "find", Value: "oplog.rs"}, {Key: "filter", Value: bson.D{{Key: "o._id", Value: 40}}}})
	tt, ti, ok := r.Lookup("cursor", "firstBatch", "0", "ts").TimestampOK()
	if !ok {
		t.Fatalf("no entry for _id 40: %s", r)
	}
	filter := bson.D{{Key: "ts", Value: bson.D{{Key: "$gte", Value: bson.Timestamp{T: tt, I: ti}}}}, {Key: "ns", Value: "test.c"}}
	r = runDoc(t, s, "local", bson.D{{Key: "explain", Value: bson.D{{Key: "find", Value: "oplog.rs"}, {Key: "filter", Value: filter}}}, {Key: "verbosity", Value: "executionStats"}})
	if n := replyInt(t, r, "executionStats", "nReturned"); n != 10 {
		t.Errorf("nReturned %d, want 10", n)
	}
	if n := replyInt(t, r, "executionStats", "totalDocsExamined"); n > 10 {
		t.Errorf("totalDocsExamined %d: the read did not seek to the ts bound", n)
	}
}

// TestRetryableTimeseriesInsert: a retried insert into a time series
// collection (which has no unique _id to stop a second copy) stores each
// measurement once; a new txnNumber stores them again.
func TestRetryableTimeseriesInsert(t *testing.T) {
	s := testSession(t, engine.Options{})
	if r := runDoc(t, s, "test", bson.D{{Key: "create", Value: "w"}, {Key: "timeseries", Value: bson.D{{Key: "timeField", Value: "t"}}}}); replyCode(r) != 0 {
		t.Fatalf("create: %s", r)
	}
	ins := bson.D{{Key: "insert", Value: "w"}, {Key: "documents", Value: bson.A{
		bson.D{{Key: "t", Value: bson.DateTime(1000)}}, bson.D{{Key: "t", Value: "not a date"}}, bson.D{{Key: "t", Value: bson.DateTime(2000)}}}}, {Key: "ordered", Value: false}}
	count := func() int64 {
		return replyInt(t, runDoc(t, s, "test", bson.D{{Key: "count", Value: "w"}}), "n")
	}
	for _, st := range []struct {
		name      string
		txn, n, c int64
	}{{"insert", 1, 2, 2}, {"retried: nothing stored twice", 1, 2, 2}, {"a new txnNumber inserts again", 2, 2, 4}} {
		r := runDoc(t, s, "test", withTxn(ins, st.txn))
		if replyCode(r) != 0 || replyInt(t, r, "n") != st.n || count() != st.c {
			t.Fatalf("%s: reply %s, %d measurements (want n %d, %d measurements)", st.name, r, count(), st.n, st.c)
		}
	}
}

// TestStatementRecordFields: a retryable statement's record (the value of
// its key in the retry keyspace) holds what a retry of it answers, and no
// more: an update's and a delete's counts and an upsert's _id, never the
// document (an update's retry answers n and nModified), and a
// findAndModify's images, which its retry answers. Each step uses a new
// txnNumber, so the session's only record is its own.
func TestStatementRecordFields(t *testing.T) {
	s := testSession(t, engine.Options{})
	big := strings.Repeat("x", 2000) // a document a record would show by its size
	ins := bson.D{{Key: "insert", Value: "c"}, {Key: "documents", Value: bson.A{
		bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: 0}, {Key: "pad", Value: big}},
		bson.D{{Key: "_id", Value: 2}, {Key: "pad", Value: big}}}}}
	upd := func(id int, upsert bool) bson.D {
		return bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: id}}},
			{Key: "u", Value: bson.D{{Key: "$inc", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "$set", Value: bson.D{{Key: "pad", Value: big}}}}}, {Key: "upsert", Value: upsert}}}}}
	}
	fam := func(id int, upsert, isNew bool) bson.D {
		return bson.D{{Key: "findAndModify", Value: "c"}, {Key: "query", Value: bson.D{{Key: "_id", Value: id}}},
			{Key: "update", Value: bson.D{{Key: "$inc", Value: bson.D{{Key: "a", Value: 1}}}, {Key: "$set", Value: bson.D{{Key: "pad", Value: big}}}}}, {Key: "upsert", Value: upsert}, {Key: "new", Value: isNew}}
	}
	del := bson.D{{Key: "delete", Value: "c"}, {Key: "deletes", Value: bson.A{bson.D{{Key: "q", Value: bson.D{{Key: "_id", Value: 2}}}, {Key: "limit", Value: 1}}}}}
	for i, c := range []struct {
		name   string
		cmd    bson.D
		fields string // the record's field names, in order
	}{
		{"insert", ins, ""},
		{"update", upd(1, false), "nm"},
		{"update, upsert: true, of an existing document", upd(1, true), "nm"},
		{"update that upserts (point: in Modify's request)", upd(3, true), "u"},
		{"update that upserts (not a point filter: after the pipeline)", bson.D{{Key: "update", Value: "c"}, {Key: "updates", Value: bson.A{bson.D{
			{Key: "q", Value: bson.D{{Key: "k", Value: 4}}}, {Key: "u", Value: bson.D{{Key: "$set", Value: bson.D{{Key: "pad", Value: big}}}}}, {Key: "upsert", Value: true}}}}}, "u"},
		{"update that matches nothing", upd(99, false), ""},
		{"findAndModify, new: false", fam(1, false, false), "nmba"},
		{"findAndModify, new: true", fam(1, false, true), "nmba"},
		{"findAndModify that upserts", fam(5, true, true), "ua"},
		{"delete", del, "n"},
	} {
		r := runDoc(t, s, "test", withTxn(c.cmd, int64(i+1)))
		if replyCode(r) != 0 || r.Lookup("writeErrors").Type != 0 {
			t.Fatalf("%s: %s", c.name, r)
		}
		it, err := s.Env.Engine.Storage().NewIter([]byte{storage.SpaceRetry}, []byte{storage.SpaceRetry + 1})
		if err != nil {
			t.Fatal(err)
		}
		var recs []bsoncore.Document
		for ok := it.First(); ok; ok = it.Next() {
			v, err := it.Value()
			if err != nil {
				t.Fatal(err)
			}
			recs = append(recs, append(bsoncore.Document(nil), v...))
		}
		if err := it.Close(); err != nil {
			t.Fatal(err)
		}
		wantRecs := 1
		if c.cmd[0].Key == "insert" {
			wantRecs = 2
		}
		if len(recs) != wantRecs {
			t.Fatalf("%s: %d statement records, want %d", c.name, len(recs), wantRecs)
		}
		els, _ := recs[0].Elements()
		names := ""
		for _, el := range els {
			names += el.Key()
		}
		if names != c.fields {
			t.Errorf("%s: record fields %q, want %q (%d bytes)", c.name, names, c.fields, len(recs[0]))
		}
	}
}
