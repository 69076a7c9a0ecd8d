package cairn_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"
	"go.mongodb.org/mongo-driver/v2/mongo/readpref"
)

// specCase is one stanza of testdata/txn_spec.txt (its header says the
// format).
type specCase struct {
	name, spec, gap string
	line            int
	data, final     []bson.D
	steps           []specStep
}

type specStep struct {
	line      int
	session   string
	db        string
	secondary bool
	cmd       bson.D
	// The expectation: ok (with reply fields and a name to save the
	// reply's operationTime under) or an error code name with labels.
	ok      bool
	fields  bson.D
	save    string
	code    string
	labels  []string
	without []string
}

// runTransactionSpecCases runs testdata/txn_spec.txt on rs (a subtest of
// TestTransactionProtocol, which shares its replica set): the server side
// of the drivers' transaction, snapshot-session and causal-consistency
// specification tests, command by command. A stanza with a gap line is an
// expected failure: it must fail.
func runTransactionSpecCases(t *testing.T, rs *replSet) {
	cases := parseSpecCases(t, "testdata/txn_spec.txt")
	// setup drops, fills and reads the collection outside the stanzas'
	// sessions: a client of its own, so its implicit sessions' retryable
	// writes never take an lsid the stanzas gave higher numbers.
	c, setup := rs.client(t), rs.client(t)
	ctx := context.Background()
	for i, sc := range cases {
		t.Run(sc.name, func(t *testing.T) {
			// The driver reuses ended sessions' lsids: each stanza's
			// transaction numbers start above every earlier stanza's.
			err := runSpecCase(ctx, c, setup, sc, int64(i)*1000)
			switch {
			case sc.gap == "" && err != nil:
				t.Errorf("%s (line %d, %s): %v", sc.name, sc.line, sc.spec, err)
			case sc.gap != "" && err == nil:
				t.Errorf("%s (line %d) passes now: remove its gap line (%s)", sc.name, sc.line, sc.gap)
			case sc.gap != "":
				t.Logf("expected failure (%s): %v", sc.gap, err)
			}
		})
	}
}

// runSpecCase runs one stanza and returns its first difference.
func runSpecCase(ctx context.Context, c, setup *mongo.Client, sc specCase, txnBase int64) error {
	db := setup.Database("transaction-tests")
	coll := db.Collection("test")
	if err := retry(ctx, func() error {
		if err := coll.Drop(ctx); err != nil {
			return err
		}
		if err := db.CreateCollection(ctx, "test"); err != nil {
			return err
		}
		if len(sc.data) > 0 {
			_, err := coll.InsertMany(ctx, sc.data)
			return err
		}
		return nil
	}); err != nil {
		return fmt.Errorf("setup: %w", err)
	}
	sessions := map[string]*mongo.Session{}
	defer func() {
		for _, s := range sessions {
			s.EndSession(ctx)
		}
	}()
	saved := map[string]bson.Timestamp{}
	for _, st := range sc.steps {
		s := sessions[st.session]
		if s == nil {
			var err error
			if s, err = c.StartSession(); err != nil {
				return err
			}
			sessions[st.session] = s
		}
		cmd, err := substitute(st.cmd, saved, txnBase)
		if err != nil {
			return fmt.Errorf("line %d: %w", st.line, err)
		}
		opts := options.RunCmd()
		if st.secondary {
			opts.SetReadPreference(readpref.Secondary())
		}
		var reply bson.D
		err = c.Database(st.db).RunCommand(mongo.NewSessionContext(ctx, s), cmd, opts).Decode(&reply)
		if err := checkSpecStep(st, reply, err, saved); err != nil {
			return fmt.Errorf("line %d: %w", st.line, err)
		}
	}
	if sc.final != nil {
		cur, err := coll.Find(ctx, bson.D{}, options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}))
		if err != nil {
			return err
		}
		got := []bson.D{}
		if err := cur.All(ctx, &got); err != nil {
			return err
		}
		if g, w := extJSON(got), extJSON(sc.final); g != w {
			return fmt.Errorf("final documents %s, want %s", g, w)
		}
	}
	return nil
}

// checkSpecStep compares a command's outcome with its expectation.
func checkSpecStep(st specStep, reply bson.D, err error, saved map[string]bson.Timestamp) error {
	if !st.ok {
		var ce mongo.CommandError
		if !errors.As(err, &ce) {
			return fmt.Errorf("%v, want error %s", err, st.code)
		}
		if ce.Name != st.code {
			return fmt.Errorf("error %s (%d): %s, want %s", ce.Name, ce.Code, ce.Message, st.code)
		}
		for _, l := range st.labels {
			if !ce.HasErrorLabel(l) {
				return fmt.Errorf("error %s lacks the label %s (labels %v)", ce.Name, l, ce.Labels)
			}
		}
		for _, l := range st.without {
			if ce.HasErrorLabel(l) {
				return fmt.Errorf("error %s has the label %s", ce.Name, l)
			}
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("%w, want ok", err)
	}
	raw, _ := bson.Marshal(reply)
	for _, f := range st.fields {
		v, lerr := bson.Raw(raw).LookupErr(strings.Split(f.Key, ".")...)
		if lerr != nil {
			return fmt.Errorf("reply %s has no %s", bson.Raw(raw), f.Key)
		}
		want, _ := bson.MarshalExtJSON(bson.D{{Key: "v", Value: f.Value}}, false, false)
		got, _ := bson.MarshalExtJSON(bson.D{{Key: "v", Value: v}}, false, false)
		if string(want) != string(got) {
			return fmt.Errorf("reply's %s is %s, want %s", f.Key, got, want)
		}
	}
	if st.save != "" {
		ts, i, ok := bson.Raw(raw).Lookup("operationTime").TimestampOK()
		if !ok {
			return fmt.Errorf("reply %s has no operationTime to save", bson.Raw(raw))
		}
		saved[st.save] = bson.Timestamp{T: ts, I: i}
	}
	return nil
}

// substitute replaces "$NAME" strings by saved operation times and sends
// txnNumber as a long, as drivers do, txnBase above the file's.
func substitute(d bson.D, saved map[string]bson.Timestamp, txnBase int64) (bson.D, error) {
	out := make(bson.D, 0, len(d))
	for _, e := range d {
		switch v := e.Value.(type) {
		case string:
			if name, ok := strings.CutPrefix(v, "$"); ok {
				ts, found := saved[name]
				if !found {
					return nil, fmt.Errorf("no saved time %s", name)
				}
				e.Value = ts
			}
		case int32:
			if e.Key == "txnNumber" {
				e.Value = txnBase + int64(v)
			}
		case bson.D:
			sub, err := substitute(v, saved, txnBase)
			if err != nil {
				return nil, err
			}
			e.Value = sub
		}
		out = append(out, e)
	}
	return out, nil
}

func extJSON(docs []bson.D) string {
	b, _ := bson.MarshalExtJSON(bson.D{{Key: "v", Value: docs}}, false, false)
	return string(b)
}

// parseSpecCases reads the stanzas of path.
func parseSpecCases(t *testing.T, path string) []specCase {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var cases []specCase
	docs := func(line int, s string) []bson.D {
		var w struct{ V []bson.D }
		if err := bson.UnmarshalExtJSON([]byte(`{"v": `+s+`}`), false, &w); err != nil {
			t.Fatalf("%s:%d: %v", path, line, err)
		}
		if w.V == nil {
			w.V = []bson.D{}
		}
		return w.V
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if name, ok := strings.CutPrefix(line, "== "); ok {
			cases = append(cases, specCase{name: name, line: n})
			continue
		}
		if len(cases) == 0 {
			t.Fatalf("%s:%d: a line before the first stanza", path, n)
		}
		c := &cases[len(cases)-1]
		switch {
		case strings.HasPrefix(line, "spec: "):
			c.spec = line[len("spec: "):]
		case strings.HasPrefix(line, "gap: "):
			c.gap = line[len("gap: "):]
		case strings.HasPrefix(line, "data: "):
			c.data = docs(n, line[len("data: "):])
		case strings.HasPrefix(line, "final: "):
			c.final = docs(n, line[len("final: "):])
		case strings.HasPrefix(line, "=> "):
			if len(c.steps) == 0 {
				t.Fatalf("%s:%d: an expectation without a command", path, n)
			}
			st := &c.steps[len(c.steps)-1]
			parseSpecExpect(t, path, n, line[len("=> "):], st)
		case strings.HasPrefix(line, "s"):
			head, body, found := strings.Cut(line, " {")
			words := strings.Fields(head)
			if !found || len(words) < 2 {
				t.Fatalf("%s:%d: want sN DB [secondary] {command}", path, n)
			}
			st := specStep{line: n, session: words[0], db: words[1], secondary: slices.Contains(words[2:], "secondary")}
			if err := bson.UnmarshalExtJSON([]byte("{"+body), false, &st.cmd); err != nil {
				t.Fatalf("%s:%d: %v", path, n, err)
			}
			c.steps = append(c.steps, st)
		default:
			t.Fatalf("%s:%d: unknown line %q", path, n, line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for _, c := range cases {
		if c.spec == "" {
			t.Fatalf("%s:%d: stanza %q names no spec file", path, c.line, c.name)
		}
	}
	return cases
}

// parseSpecExpect reads "ok [{fields}] [save NAME]" or "error Code
// [+Label] [-Label]".
func parseSpecExpect(t *testing.T, path string, n int, s string, st *specStep) {
	t.Helper()
	if rest, ok := strings.CutPrefix(s, "error "); ok {
		words := strings.Fields(rest)
		st.code = words[0]
		for _, w := range words[1:] {
			switch w[0] {
			case '+':
				st.labels = append(st.labels, w[1:])
			case '-':
				st.without = append(st.without, w[1:])
			default:
				t.Fatalf("%s:%d: a label must start with + or -: %q", path, n, w)
			}
		}
		return
	}
	rest, ok := strings.CutPrefix(s, "ok")
	if !ok {
		t.Fatalf("%s:%d: want ok or error", path, n)
	}
	st.ok = true
	rest = strings.TrimSpace(rest)
	if strings.HasPrefix(rest, "{") {
		end := strings.LastIndex(rest, "}")
		if err := bson.UnmarshalExtJSON([]byte(rest[:end+1]), false, &st.fields); err != nil {
			t.Fatalf("%s:%d: %v", path, n, err)
		}
		rest = strings.TrimSpace(rest[end+1:])
	}
	if name, ok := strings.CutPrefix(rest, "save "); ok {
		st.save = strings.TrimSpace(name)
	} else if rest != "" {
		t.Fatalf("%s:%d: unknown %q", path, n, rest)
	}
}
