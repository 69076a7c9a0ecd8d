package audit

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/query"
)

// The destinations and formats, by mongod's names.
const (
	DestFile    = "file"
	DestConsole = "console"
	DestSyslog  = "syslog"
	FormatJSON  = "JSON"
	FormatBSON  = "BSON"
)

// Options are the auditLog section's settings.
type Options struct {
	Destination string // "" is no audit log
	Format      string // JSON (default) or BSON, for a file
	Path        string // the file, for DestFile
	Filter      string // a query document in extended JSON ("" matches every event)
	// Local is the server's address ("host:port"), every event's local.
	Local string
}

// Log is an open audit log. A nil *Log audits nothing.
type Log struct {
	format string
	filter *query.Filter
	local  bsoncore.Document

	mu sync.Mutex
	w  io.Writer
	c  io.Closer
}

// Open opens the audit log opts describe; nil, nil when no destination is
// set.
func Open(opts Options) (*Log, error) {
	if opts.Destination == "" {
		if opts.Path != "" || opts.Filter != "" || opts.Format != "" {
			return nil, errors.New("audit: --auditPath, --auditFormat and --auditFilter need --auditDestination (auditLog.destination)")
		}
		return nil, nil
	}
	l := &Log{format: opts.Format, local: endpoint(opts.Local)}
	if l.format == "" {
		l.format = FormatJSON
	}
	if l.format != FormatJSON && l.format != FormatBSON {
		return nil, fmt.Errorf("audit: --auditFormat must be JSON or BSON, got %q", opts.Format)
	}
	if opts.Filter != "" {
		var raw bson.Raw
		if err := bson.UnmarshalExtJSON([]byte(opts.Filter), false, &raw); err != nil {
			return nil, fmt.Errorf("audit: --auditFilter is not a JSON document: %w", err)
		}
		f, err := query.Parse(bsoncore.Document(raw))
		if err != nil {
			return nil, fmt.Errorf("audit: --auditFilter: %w", err)
		}
		l.filter = f
	}
	switch opts.Destination {
	case DestFile:
		if opts.Path == "" {
			return nil, errors.New("audit: --auditDestination file needs --auditPath (auditLog.path)")
		}
		f, err := os.OpenFile(opts.Path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return nil, fmt.Errorf("audit: cannot open the audit log: %w", err)
		}
		l.w, l.c = f, f
	case DestConsole:
		if l.format != FormatJSON {
			return nil, errors.New("audit: --auditFormat BSON needs --auditDestination file")
		}
		l.w = os.Stdout
	case DestSyslog:
		if l.format != FormatJSON {
			return nil, errors.New("audit: --auditFormat BSON needs --auditDestination file")
		}
		w, err := openSyslog()
		if err != nil {
			return nil, fmt.Errorf("audit: cannot open syslog: %w", err)
		}
		l.w, l.c = w, w
	default:
		return nil, fmt.Errorf("audit: --auditDestination must be file, console or syslog, got %q", opts.Destination)
	}
	return l, nil
}

// Close closes the destination.
func (l *Log) Close() error {
	if l == nil || l.c == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.c.Close()
}

// Name is a user or a role: {user|role, db}.
type Name struct{ Name, DB string }

// Event is one audited action.
type Event struct {
	AType  string
	Conn   [16]byte // the client connection's UUID
	Remote string   // "host:port"
	Users  []Name
	Roles  []Name
	Param  bsoncore.Document // nil: {}
	Result int32             // 0, or the error code
}

// Enabled reports whether events are written at all (so callers skip
// building them).
func (l *Log) Enabled() bool { return l != nil }

// Write records ev if the filter matches it ("Filter first"). An error
// writing is returned for the caller to log; the event is lost.
func (l *Log) Write(ev Event) error {
	if l == nil {
		return nil
	}
	doc := l.doc(ev, time.Now())
	if l.filter != nil && !l.filter.Match(doc) {
		return nil
	}
	var out []byte
	if l.format == FormatBSON {
		out = doc
	} else {
		js, err := bson.MarshalExtJSON(bson.Raw(doc), false, false)
		if err != nil {
			return err
		}
		out = append(js, '\n')
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	_, err := l.w.Write(out)
	return err
}

// doc is ev in MongoDB's audit message shape.
func (l *Log) doc(ev Event, now time.Time) bsoncore.Document {
	idx, b := bsoncore.AppendDocumentStart(nil)
	b = bsoncore.AppendStringElement(b, "atype", ev.AType)
	b = bsoncore.AppendDateTimeElement(b, "ts", now.UnixMilli())
	b = bsoncore.AppendBinaryElement(b, "uuid", 4, ev.Conn[:])
	b = bsoncore.AppendDocumentElement(b, "local", l.local)
	b = bsoncore.AppendDocumentElement(b, "remote", endpoint(ev.Remote))
	b = appendNames(b, "users", "user", ev.Users)
	b = appendNames(b, "roles", "role", ev.Roles)
	param := ev.Param
	if param == nil {
		param = bsoncore.NewDocumentBuilder().Build()
	}
	b = bsoncore.AppendDocumentElement(b, "param", param)
	b = bsoncore.AppendInt32Element(b, "result", ev.Result)
	b, _ = bsoncore.AppendDocumentEnd(b, idx)
	return b
}

func appendNames(b []byte, field, key string, names []Name) []byte {
	aidx, b := bsoncore.AppendArrayElementStart(b, field)
	for i, n := range names {
		didx, bb := bsoncore.AppendDocumentElementStart(b, strconv.Itoa(i))
		bb = bsoncore.AppendStringElement(bb, key, n.Name)
		bb = bsoncore.AppendStringElement(bb, "db", n.DB)
		b, _ = bsoncore.AppendDocumentEnd(bb, didx)
	}
	b, _ = bsoncore.AppendArrayEnd(b, aidx)
	return b
}

// endpoint is {ip, port} of a "host:port" address ({} when it has none).
func endpoint(addr string) bsoncore.Document {
	b := bsoncore.NewDocumentBuilder()
	if host, port, err := net.SplitHostPort(addr); err == nil {
		p, _ := strconv.Atoi(port)
		b.AppendString("ip", host).AppendInt32("port", int32(p))
	}
	return b.Build()
}

// NewConnUUID is a random (version 4) UUID for a client connection.
func NewConnUUID() [16]byte {
	var u [16]byte
	rand.Read(u[:])
	u[6], u[8] = u[6]&0x0f|0x40, u[8]&0x3f|0x80
	return u
}
