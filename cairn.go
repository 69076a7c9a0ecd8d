package cairn

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/cairndb/cairn/internal/engine"
	"github.com/cairndb/cairn/internal/mongoerr"
)

// Options configure an embedded database. A nil *Options means the defaults:
// every write is synced to disk before it returns.
type Options struct {
	// SyncInterval, when positive, lets writes return before they are synced
	// and syncs at this interval instead (faster; a crash can lose the last
	// interval of writes).
	SyncInterval time.Duration
	// Logger receives the database's structured logs. Default: slog.Default().
	Logger *slog.Logger
}

// DB is an open embedded Cairn database: the whole engine in this process,
// with no server and no socket. It is safe for concurrent use.
type DB struct {
	eng *engine.Engine
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
	return &DB{eng: eng}, nil
}

// Close waits for writes in flight and closes the database.
func (db *DB) Close() error { return db.eng.Close() }

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
