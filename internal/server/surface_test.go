package server_test

import (
	"fmt"
	"net"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/commands"
	"github.com/cairndb/cairn/internal/query"
	"github.com/cairndb/cairn/internal/testcorpus"
	"github.com/cairndb/cairn/internal/wire"
)

// The surface test holds Cairn to "nothing accepted is ignored": every
// field a command declares (commands.Surface) and every generic argument
// must have a case in testdata/surface that proves it honoured (a reply
// showing its effect) or refused (an error code), run over the wire. A
// field added to the registry without a case fails TestSurfaceWalk.
//
// A case is a stanza:
//
//	case: what it shows
//	covers: find.batchSize *.comment    (command.field; * for a generic argument)
//	db: admin                           (optional; default: a fresh database)
//	run: {...}                          (setup: must answer ok: 1)
//	cmd: {...}                          (then reply: or error:)
//	reply: {...}                        (a query filter the reply must match)
//	error: 40415                        (the code the reply must carry)
//	waited: 200                         (the last cmd took at least 200 ms)
//	sleep: 1500                         (wait before the next step)
//	xfail: why                          (a known gap: the case must fail)
//
// run, cmd, reply and error may repeat, in order. Commands are sent as
// written (a raw OP_MSG, so duplicate fields reach the server) with $db
// appended; "$$cursor" in a command stands for the last cursor id a reply
// returned (for getMore and killCursors), "$$topologyVersion" for the last
// topologyVersion a reply carried (for the awaitable hello).

type surfaceStep struct {
	kind, text string
	line       int
}

type surfaceCase struct {
	file, name, db, xfail string
	line                  int
	covers                []string
	steps                 []surfaceStep
}

func loadSurface(t *testing.T) []surfaceCase {
	t.Helper()
	files, err := filepath.Glob("testdata/surface/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no surface cases: %v", err)
	}
	sort.Strings(files)
	var cases []surfaceCase
	for _, f := range files {
		err := testcorpus.ReadStanzas(f, func(st []testcorpus.Entry) error {
			c := surfaceCase{file: filepath.Base(f), line: st[0].Line + 1}
			for _, e := range st {
				switch e.Key {
				case "case":
					c.name = e.Value
				case "covers":
					c.covers = strings.Fields(e.Value)
				case "db":
					c.db = e.Value
				case "xfail":
					c.xfail = e.Value
				case "run", "cmd", "reply", "error", "waited", "sleep":
					c.steps = append(c.steps, surfaceStep{kind: e.Key, text: e.Value, line: e.Line + 1})
				default:
					return fmt.Errorf("%s:%d: unknown key %q", f, e.Line+1, e.Key)
				}
			}
			if c.name == "" || len(c.covers) == 0 || len(c.steps) == 0 {
				return fmt.Errorf("%s:%d: a case needs case:, covers: and steps", f, c.line)
			}
			cases = append(cases, c)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return cases
}

// surfaceAliases are registry names that share another's declaration; a
// case for the canonical name covers them.
var surfaceAliases = map[string]string{
	"buildinfo": "buildInfo", "dbstats": "dbStats", "findandmodify": "findAndModify",
	"isMaster": "hello", "ismaster": "hello",
}

// TestSurfaceWalk fails on any declared field or generic argument without a
// case, on a notYet field whose case does not show its refusal, and on a
// case covering a field nobody declares.
func TestSurfaceWalk(t *testing.T) {
	cmds, generic := commands.Surface()
	cases := loadSurface(t)
	covered := map[string][]surfaceCase{}
	for _, c := range cases {
		for _, cv := range c.covers {
			covered[cv] = append(covered[cv], c)
		}
	}
	declared := map[string]bool{}
	missingSet := map[string]bool{}
	for name, decl := range cmds {
		canon := name
		if a, ok := surfaceAliases[name]; ok {
			canon = a
		}
		for _, f := range decl.Fields {
			declared[canon+"."+f] = true
			if len(covered[canon+"."+f]) == 0 {
				missingSet[canon+"."+f] = true
			}
		}
		for f, subs := range decl.Nested {
			for _, sub := range subs {
				key := canon + "." + f + "." + sub
				declared[key] = true
				if len(covered[key]) == 0 {
					missingSet[key] = true
				}
			}
		}
		for _, f := range decl.NotYet {
			key := canon + "." + f
			declared[key] = true
			refused := false
			for _, c := range covered[key] {
				for _, st := range c.steps {
					refused = refused || (st.kind == "error" && st.text == "72")
				}
			}
			if !refused {
				missingSet[key+" (not yet honoured: needs a case refusing it with 72)"] = true
			}
		}
	}
	for g := range generic {
		declared["*."+g] = true
		if len(covered["*."+g]) == 0 {
			missingSet["*."+g] = true
		}
	}
	missing := make([]string, 0, len(missingSet))
	for m := range missingSet {
		missing = append(missing, m)
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("accepted but no case proves it honoured or refused: %s", m)
	}
	for key, cs := range covered {
		if !declared[key] {
			t.Errorf("%s:%d covers %s, which no command declares", cs[0].file, cs[0].line, key)
		}
	}
}

// TestSurfaceCases runs every case over the wire, on a server started with
// --setParameter enableTestCommands=1 so the test-only commands' fields
// have cases too.
func TestSurfaceCases(t *testing.T) {
	s := startTestCommandsServer(t)
	cases := loadSurface(t)
	for i, c := range cases {
		t.Run(fmt.Sprintf("%s:%d/%s", c.file, c.line, c.name), func(t *testing.T) {
			nc := dial(t, s)
			db := c.db
			if db == "" {
				db = "surface" + strconv.Itoa(i)
			}
			err := runSurfaceCase(nc, db, c)
			if db != "admin" {
				_, _ = sendSurface(nc, `{"dropDatabase": 1}`, db)
			}
			switch {
			case c.xfail != "" && err == nil:
				t.Errorf("passes but is marked xfail (%s); remove the xfail", c.xfail)
			case c.xfail != "":
				t.Logf("expected failure (%s): %v", c.xfail, err)
			case err != nil:
				t.Error(err)
			}
		})
	}
}

func runSurfaceCase(nc net.Conn, db string, c surfaceCase) error {
	var last bsoncore.Document
	var cursor int64
	topology := "{}"
	var took time.Duration
	for _, st := range c.steps {
		where := fmt.Sprintf("%s:%d", c.file, st.line)
		switch st.kind {
		case "run", "cmd":
			text := strings.ReplaceAll(st.text, `"$$cursor"`, fmt.Sprintf(`{"$numberLong": "%d"}`, cursor))
			text = strings.ReplaceAll(text, `"$$topologyVersion"`, topology)
			began := time.Now()
			reply, err := sendSurface(nc, text, db)
			took = time.Since(began)
			if err != nil {
				return fmt.Errorf("%s: %v", where, err)
			}
			if tv, ok := reply.Lookup("topologyVersion").DocumentOK(); ok {
				topology = bson.Raw(tv).String()
			}
			if id, ok := reply.Lookup("cursor", "id").Int64OK(); ok && id != 0 {
				cursor = id
			}
			if st.kind == "run" && reply.Lookup("ok").AsFloat64() != 1 {
				return fmt.Errorf("%s: setup failed: %s", where, reply)
			}
			last = reply
		case "reply":
			if last.Lookup("ok").AsFloat64() != 1 {
				return fmt.Errorf("%s: want ok: 1, got %s", where, last)
			}
			filter, err := testcorpus.ParseDoc(st.text)
			if err != nil {
				return fmt.Errorf("%s: %v", where, err)
			}
			f, err := query.Parse(filter)
			if err != nil {
				return fmt.Errorf("%s: reply filter: %v", where, err)
			}
			if !f.Match(last) {
				return fmt.Errorf("%s: reply %s does not match %s", where, last, st.text)
			}
		case "sleep":
			ms, err := strconv.Atoi(st.text)
			if err != nil {
				return fmt.Errorf("%s: sleep: wants milliseconds: %v", where, err)
			}
			time.Sleep(time.Duration(ms) * time.Millisecond)
		case "waited":
			ms, err := strconv.Atoi(st.text)
			if err != nil {
				return fmt.Errorf("%s: waited: wants milliseconds: %v", where, err)
			}
			if took < time.Duration(ms)*time.Millisecond {
				return fmt.Errorf("%s: answered in %v, want at least %d ms", where, took, ms)
			}
		case "error":
			want, err := strconv.Atoi(st.text)
			if err != nil {
				return fmt.Errorf("%s: error: wants a code: %v", where, err)
			}
			if last.Lookup("ok").AsFloat64() != 0 || last.Lookup("code").AsInt64() != int64(want) {
				return fmt.Errorf("%s: want error %d, got %s", where, want, last)
			}
		}
	}
	return nil
}

// sendSurface sends one command as written, with $db appended.
func sendSurface(nc net.Conn, text, db string) (bsoncore.Document, error) {
	doc, err := testcorpus.ParseDoc(text)
	if err != nil {
		return nil, fmt.Errorf("command %s: %v", text, err)
	}
	body := append(bsoncore.Document(nil), doc[:len(doc)-1]...)
	body = bsoncore.AppendStringElement(body, "$db", db)
	body = append(body, 0)
	body = bsoncore.UpdateLength(body, 0, int32(len(body)))
	if _, err := nc.Write(wire.AppendMsg(nil, 1, 0, 0, body)); err != nil {
		return nil, err
	}
	m, err := wire.NewReader(nc, 0).ReadMessage()
	if err != nil {
		return nil, err
	}
	return append(bsoncore.Document(nil), m.Msg.Body...), nil
}
