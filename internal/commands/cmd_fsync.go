package commands

import (
	"context"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/mongoerr"
)

// cmdFsync serves fsync: the write-ahead log is synced and the memtable
// flushed to tables. With lock: true, writes are then held (they wait, they
// do not fail) until as many fsyncUnlock commands as fsync locks, for a
// filesystem snapshot of the data directory; reads go on. Every write
// acknowledged before the lock is in the files.
func cmdFsync(_ context.Context, s *Session, req *Request, dst []byte) (bsoncore.Document, error) {
	lock, err := req.Bool("lock", false)
	if err != nil {
		return nil, err
	}
	db := s.Env.Engine.Storage()
	if !lock {
		if err := db.SyncNow(); err != nil {
			return nil, err
		}
		if err := db.Flush(); err != nil {
			return nil, err
		}
		return NewReply(dst).Int32("numFiles", 1).Finish(), nil
	}
	l := &s.Env.fsync
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.count == 0 {
		if err := db.SyncNow(); err != nil {
			return nil, err
		}
		if err := db.LockWrites(); err != nil {
			return nil, err
		}
		s.Env.Log.Info("writes locked (fsync lock: true)", "remote", s.Remote)
	}
	l.count++
	return NewReply(dst).String("info", "now locked against writes, use db.fsyncUnlock() to unlock").
		Int64("lockCount", int64(l.count)).
		String("seeAlso", "http://dochub.mongodb.org/core/fsynccommand").Finish(), nil
}

// cmdFsyncUnlock serves fsyncUnlock: it takes back one fsync lock; writes
// resume when none is left.
func cmdFsyncUnlock(_ context.Context, s *Session, _ *Request, dst []byte) (bsoncore.Document, error) {
	l := &s.Env.fsync
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.count == 0 {
		return nil, mongoerr.New(mongoerr.IllegalOperation, "fsyncUnlock called when not locked")
	}
	l.count--
	if l.count == 0 {
		s.Env.Engine.Storage().UnlockWrites()
		s.Env.Log.Info("writes unlocked (fsyncUnlock)", "remote", s.Remote)
	}
	return NewReply(dst).String("info", "fsyncUnlock completed").Int64("lockCount", int64(l.count)).Finish(), nil
}

// ReleaseFsyncLock lets writes go on whatever fsync locks are held, for a
// shutdown: held writes would otherwise keep their connections, and the
// shutdown, waiting.
func (e *Env) ReleaseFsyncLock() {
	l := &e.fsync
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.count > 0 {
		l.count = 0
		e.Engine.Storage().UnlockWrites()
	}
}

// FsyncLockCount is how many fsync locks are held.
func (e *Env) FsyncLockCount() int {
	e.fsync.mu.Lock()
	defer e.fsync.mu.Unlock()
	return e.fsync.count
}
