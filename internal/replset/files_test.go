package replset

import (
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"

	"github.com/cairndb/cairn/internal/repl"
)

// TestMemberIDSurvivesPowerCut: the id file's write (a synced temporary
// file renamed over member-id, the directory synced) survives a power cut
// that keeps none of the unsynced data, both when it creates member-id and
// when it replaces an earlier id ("Member files durable before use"). A
// whole member cannot show this: Pebble's creation of replset/raft/ syncs
// replset/ right after the first write. Fails when writeFileSynced skips
// its directory sync (the cut loses the new member-id, or keeps the old id
// after a replacement) and when mkdirSynced skips the parent's.
func TestMemberIDSurvivesPowerCut(t *testing.T) {
	for _, tc := range []struct {
		name   string
		writes []uint64 // ids written in turn before the cut
	}{
		{"created", []uint64{7}},
		{"replaced", []uint64{7, 9}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := vfs.NewCrashableMem()
			if err := fs.MkdirAll("/data", 0o755); err != nil {
				t.Fatal(err)
			}
			// The data directory itself exists before the member runs
			// (its engine made it): synced here, as the engine does.
			if err := repl.SyncDir(fs, "/"); err != nil {
				t.Fatal(err)
			}
			m := &Member{opts: Options{Dir: "/data"}, fs: fs}
			for i, id := range tc.writes {
				if err := m.writeID(id); err != nil {
					t.Fatal(err)
				}
				if i == 0 && len(tc.writes) > 1 {
					// The first id durable (as after a clean restart)
					// before the one that replaces it.
					fs = fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})
					m.fs = fs
				}
			}
			cut := &Member{opts: m.opts, fs: fs.CrashClone(vfs.CrashCloneCfg{UnsyncedDataPercent: 0})}
			id, ok, err := cut.readID()
			want := tc.writes[len(tc.writes)-1]
			if err != nil || !ok || id != want {
				t.Fatalf("after the power cut member-id reads %d (found %v, err %v), want %d", id, ok, err, want)
			}
		})
	}
}
