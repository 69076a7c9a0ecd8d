package cairn

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/commands"
	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// Options configure an embedded database. A nil *Options means the defaults:
// every write is synced to disk before it returns.
type Options struct {
	// SyncInterval, when positive, lets writes return once they are written
	// to the operating system, before they are synced, and syncs at this
	// interval instead (faster): a crash of the process loses no write that
	// returned; a power cut or an OS crash can lose the last interval of them.
	SyncInterval time.Duration
	// Logger receives the database's structured logs. Default: slog.Default().
	Logger *slog.Logger
}

// DB is an open embedded Cairn database: the whole engine in this process,
// with no server and no socket. It is safe for concurrent use.
//
// Every call runs the same command code a server runs for a driver, in
// process, so the embedded API and the wire protocol behave identically.
type DB struct {
	eng *engine.Engine
	env *commands.Env
}

// Open opens the database stored in dir, creating it if needed. Only one
// process may have a directory open at a time.
func Open(dir string, opts *Options) (*DB, error) {
	if opts == nil {
		opts = &Options{}
	}
	eng, err := engine.Open(dir, engine.Options{SyncInterval: opts.SyncInterval, Logger: opts.Logger})
	if err != nil {
		return nil, err
	}
	env := commands.NewEnv(eng, commands.Config{DBPath: dir, CairnVer: "embedded"}, opts.Logger)
	return &DB{eng: eng, env: env}, nil
}

// Close waits for writes in flight and closes the database.
func (db *DB) Close() error {
	db.env.Close()
	return db.eng.Close()
}

// Database returns a handle to the named database. Like MongoDB, a database
// comes into existence with its first collection.
func (db *DB) Database(name string) *Database { return &Database{db: db, name: name} }

// ListDatabaseNames lists the databases that hold at least one collection.
func (db *DB) ListDatabaseNames(ctx context.Context) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return db.eng.Catalog().Databases(), nil
}

// RunCommand runs a database command, as the driver's Database.RunCommand
// does, and returns its reply; a reply with ok: 0 is returned as an *Error.
func (db *DB) RunCommand(ctx context.Context, dbName string, cmd any) (bson.Raw, error) {
	body, err := marshalDoc(cmd)
	if err != nil {
		return nil, err
	}
	return db.run(ctx, dbName, body)
}

// run executes a command document in process.
func (db *DB) run(ctx context.Context, dbName string, body bsoncore.Document) (bson.Raw, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	req, err := commands.NewRequest(body, dbName, nil)
	if err != nil {
		return nil, err
	}
	sess := &commands.Session{Env: db.env, Remote: "embedded"}
	reply := bson.Raw(commands.Run(ctx, sess, req, nil))
	if ok, _ := reply.Lookup("ok").AsFloat64OK(); ok != 1 {
		if err := ctx.Err(); err != nil {
			return nil, err // the caller's context ended the command mid-way
		}
		return reply, replyError(reply)
	}
	return reply, nil
}

// replyError turns an {ok: 0} reply into an *Error with its code.
func replyError(reply bson.Raw) error {
	code, _ := reply.Lookup("code").AsInt64OK()
	msg, _ := reply.Lookup("errmsg").StringValueOK()
	return &Error{Code: mongoerr.Code(code), Msg: msg}
}

// Error is a failure with MongoDB's error code, as a server would reply it.
type Error = mongoerr.Error

// ErrNoDocuments is returned by SingleResult when no document matched.
var ErrNoDocuments = errors.New("cairn: no documents in result")

// ErrorCode reports the MongoDB error code carried by err (0 when none).
func ErrorCode(err error) int {
	var we *WriteException
	if errors.As(err, &we) && len(we.WriteErrors) > 0 {
		return we.WriteErrors[0].Code
	}
	if e, ok := mongoerr.As(err); ok {
		return int(e.Code)
	}
	return 0
}

// IsDuplicateKeyError reports whether err is (or holds) a duplicate key error.
func IsDuplicateKeyError(err error) bool { return ErrorCode(err) == int(mongoerr.DuplicateKey) }

// WriteError is the failure of one document or statement of a write.
type WriteError struct {
	Index   int
	Code    int
	Message string
	// Info is the error's errInfo when it has one: why a document failed
	// its collection's validator (DocumentValidationFailure, 121).
	Info bson.Raw
}

// WriteException reports the documents of a write that failed.
type WriteException struct {
	WriteErrors []WriteError
}

func (e *WriteException) Error() string {
	first := e.WriteErrors[0]
	if len(e.WriteErrors) == 1 {
		return fmt.Sprintf("write error at index %d: %s (code %d)", first.Index, first.Message, first.Code)
	}
	return fmt.Sprintf("%d write errors, first at index %d: %s (code %d)", len(e.WriteErrors), first.Index, first.Message, first.Code)
}

// writeErrorsOf reads a write reply's writeErrors, or nil when it has none.
func writeErrorsOf(reply bson.Raw) error {
	arr, ok := reply.Lookup("writeErrors").ArrayOK()
	if !ok {
		return nil
	}
	vals, _ := arr.Values()
	we := &WriteException{}
	for _, v := range vals {
		d := v.Document()
		idx, _ := d.Lookup("index").AsInt64OK()
		code, _ := d.Lookup("code").AsInt64OK()
		msg, _ := d.Lookup("errmsg").StringValueOK()
		info, _ := d.Lookup("errInfo").DocumentOK()
		we.WriteErrors = append(we.WriteErrors, WriteError{Index: int(idx), Code: int(code), Message: msg, Info: info})
	}
	if len(we.WriteErrors) == 0 {
		return nil
	}
	return we
}

func marshalDoc(d any) (bsoncore.Document, error) {
	switch v := d.(type) {
	case nil:
		return bsoncore.Document{5, 0, 0, 0, 0}, nil
	case bson.Raw:
		return bsoncore.Document(v), nil
	case bsoncore.Document:
		return v, nil
	}
	return bson.Marshal(d)
}

// toAny turns a BSON value into the Go value the driver would decode it to.
func toAny(v bson.RawValue) any {
	var out any
	if err := v.Unmarshal(&out); err != nil {
		return v
	}
	return out
}
