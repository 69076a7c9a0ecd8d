package audit

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func event(atype string, result int32) Event {
	return Event{AType: atype, Conn: NewConnUUID(), Remote: "127.0.0.1:50000", Users: []Name{{"app", "admin"}},
		Roles: []Name{{"readWrite", "test"}}, Param: bsoncore.NewDocumentBuilder().AppendString("ns", "test.c").Build(), Result: result}
}

// TestAuditFile: JSON lines in MongoDB's audit message shape.
func TestAuditFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.json")
	l, err := Open(Options{Destination: DestFile, Path: path, Local: "127.0.0.1:27017"})
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Write(event("createCollection", 0)); err != nil {
		t.Fatal(err)
	}
	if err := l.Write(event("authCheck", 13)); err != nil {
		t.Fatal(err)
	}
	l.Close()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []map[string]any
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		lines = append(lines, m)
	}
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2", len(lines))
	}
	m := lines[0]
	for _, field := range []string{"atype", "ts", "uuid", "local", "remote", "users", "roles", "param", "result"} {
		if _, ok := m[field]; !ok {
			t.Errorf("no %s in %v", field, m)
		}
	}
	if m["atype"] != "createCollection" || m["local"].(map[string]any)["port"] != float64(27017) ||
		m["remote"].(map[string]any)["ip"] != "127.0.0.1" || m["param"].(map[string]any)["ns"] != "test.c" {
		t.Errorf("event %v", m)
	}
	if _, ok := m["ts"].(map[string]any)["$date"]; !ok {
		t.Errorf("ts is not {$date}: %v", m["ts"])
	}
	if u := m["uuid"].(map[string]any)["$binary"].(map[string]any); u["subType"] != "04" {
		t.Errorf("uuid is not a UUID binary: %v", u)
	}
	if lines[1]["result"] != float64(13) {
		t.Errorf("authCheck result %v", lines[1]["result"])
	}
	if info, _ := os.Stat(path); info.Mode().Perm()&0o077 != 0 {
		t.Errorf("audit log readable by others: %v", info.Mode())
	}
}

// TestAuditFilter: only events the filter matches are written, and the
// BSON format writes whole documents back to back.
func TestAuditFilter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "audit.bson")
	l, err := Open(Options{Destination: DestFile, Format: FormatBSON, Path: path,
		Filter: `{"atype": {"$in": ["authenticate", "dropCollection"]}, "result": 0}`})
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range []Event{event("createCollection", 0), event("dropCollection", 0), event("authenticate", 18), event("authenticate", 0)} {
		if err := l.Write(ev); err != nil {
			t.Fatal(err)
		}
	}
	l.Close()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for len(data) > 0 {
		doc, rest, ok := bsoncore.ReadDocument(data)
		if !ok {
			t.Fatalf("not BSON documents back to back")
		}
		got = append(got, doc.Lookup("atype").StringValue())
		data = rest
	}
	if strings.Join(got, ",") != "dropCollection,authenticate" {
		t.Errorf("filtered events %v", got)
	}
}

// TestAuditOptions: the combinations mongod refuses are refused.
func TestAuditOptions(t *testing.T) {
	for _, tc := range []struct {
		opts Options
		want string
	}{
		{Options{Destination: DestFile}, "needs --auditPath"},
		{Options{Destination: "elsewhere"}, "must be file, console or syslog"},
		{Options{Destination: DestConsole, Format: FormatBSON}, "BSON needs --auditDestination file"},
		{Options{Destination: DestConsole, Format: "XML"}, "must be JSON or BSON"},
		{Options{Destination: DestConsole, Filter: "{atype:"}, "not a JSON document"},
		{Options{Destination: DestConsole, Filter: `{"atype": {"$bogus": 1}}`}, "--auditFilter"},
		{Options{Path: "/x"}, "need --auditDestination"},
	} {
		if _, err := Open(tc.opts); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want %q", tc.opts, err, tc.want)
		}
	}
	if l, err := Open(Options{}); l != nil || err != nil {
		t.Errorf("no destination: %v, %v", l, err)
	}
}
