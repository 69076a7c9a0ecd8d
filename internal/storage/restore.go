package storage

import (
	"encoding/binary"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// restoreBatchBytes bounds one batch of a restore's copy.
const restoreBatchBytes = 4 << 20

// RestoreCheckpoint replaces the whole contents of the store with those of
// the checkpoint in dir (on the store's filesystem, DB.FS): another
// member's store as of replicated log index index, which becomes this
// store's AppliedIndex. A replica set member installs a snapshot so.
//
// Invariant "Restore is redone until whole": the first, synced, batch
// deletes every key but the format marker, the applied index with them, so a store that dies
// during the copy reopens with AppliedIndex 0, below the snapshot's index,
// and its owner restores again; the last batch, synced, writes the
// applied index. Readers meanwhile see a partial store (a member being
// restored serves no consistent reads until it is done). It must not run
// concurrently with a commit of the pipeline, as ApplyReplicated.
// progress, if not nil, is called after each batch is written, with the
// bytes copied so far (0 after the deleting batch).
func (db *DB) RestoreCheckpoint(index uint64, dir string, progress func(copied int64)) error {
	// Its batches make changes visible: one change for them all
	// ("Shared view current"), which may rewrite any document ("Document
	// cache exact": the whole cache goes).
	return db.visible.changeAll(func() error { return db.restoreCheckpoint(index, dir, progress) })
}

func (db *DB) restoreCheckpoint(index uint64, dir string, progress func(copied int64)) error {
	if e := db.pipe.halted.Load(); e != nil {
		return e
	}
	src, err := pebble.Open(dir, &pebble.Options{FS: db.opts.FS, ReadOnly: true, Logger: quietLogger{db.opts.Logger}})
	if err != nil {
		return fmt.Errorf("storage: open checkpoint %s: %w", dir, err)
	}
	defer src.Close()
	if v, c, err := src.Get(appliedKey); err == nil {
		at := binary.BigEndian.Uint64(v)
		c.Close()
		if at > index {
			return fmt.Errorf("storage: checkpoint %s holds index %d, past the snapshot's %d", dir, at, index)
		}
	}
	fail := func(err error) error {
		db.pipe.stopWrites(err)
		return fmt.Errorf("storage: restore checkpoint %s: %w", dir, err)
	}
	// Everything goes but the format marker, which Open needs to know the
	// directory for a Cairn store.
	format := SystemKey("format")
	db.pipe.unf.off.Store(true) // "Unflushed documents known": these writes are not noted
	del := db.pdb.NewBatch()
	_ = del.DeleteRange([]byte{}, format, nil)
	_ = del.DeleteRange(append(format, 0), []byte{0xff}, nil)
	err = del.Commit(pebble.Sync)
	del.Close()
	if err != nil {
		return fail(err)
	}
	if progress == nil {
		progress = func(int64) {}
	}
	progress(0)
	var copied int64
	it, err := src.NewIter(nil)
	if err != nil {
		return fail(err)
	}
	defer it.Close()
	b := db.pdb.NewBatch()
	for ok := it.First(); ok; ok = it.Next() {
		if k := string(it.Key()); k == string(appliedKey) || k == string(format) {
			continue
		}
		v, err := it.ValueAndErr()
		if err != nil {
			b.Close()
			return fail(err)
		}
		if err := b.Set(it.Key(), v, nil); err != nil {
			b.Close()
			return fail(err)
		}
		if b.Len() >= restoreBatchBytes {
			copied += int64(b.Len())
			if err := b.Commit(pebble.NoSync); err != nil {
				b.Close()
				return fail(err)
			}
			b.Close()
			b = db.pdb.NewBatch()
			progress(copied)
		}
	}
	if err := it.Error(); err != nil {
		b.Close()
		return fail(err)
	}
	var v [8]byte
	binary.BigEndian.PutUint64(v[:], index)
	if err := b.Set(appliedKey, v[:], nil); err != nil {
		b.Close()
		return fail(err)
	}
	copied += int64(b.Len())
	err = b.Commit(pebble.Sync)
	b.Close()
	if err != nil {
		return fail(err)
	}
	progress(copied)
	if ts, err := readClusterTime(db.pdb, "restored checkpoint"); err == nil {
		db.followClusterTime(ts)
	}
	return nil
}
