package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestLogFileStartup: without --logappend an existing log is renamed aside
// at startup (as mongod does); with it, appended to.
func TestLogFileStartup(t *testing.T) {
	for _, appendTo := range []bool{false, true} {
		dir := t.TempDir()
		path := filepath.Join(dir, "cairn.log")
		if err := os.WriteFile(path, []byte("old\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		l, err := openLogFile(path, appendTo)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := l.Write([]byte("new\n")); err != nil {
			t.Fatal(err)
		}
		l.Close()
		got, _ := os.ReadFile(path)
		aside, _ := filepath.Glob(path + ".*")
		want, wantAside := "new\n", 1
		if appendTo {
			want, wantAside = "old\nnew\n", 0
		}
		if string(got) != want || len(aside) != wantAside {
			t.Errorf("logappend %v: file %q, renamed aside %v", appendTo, got, aside)
		}
	}
}

// TestLogFileRotateNames: rotated files are named path.<UTC time>, with a
// counter when two rotations fall in the same second.
func TestLogFileRotateNames(t *testing.T) {
	path := filepath.Join(t.TempDir(), "cairn.log")
	l, err := openLogFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	l.now = func() time.Time { return time.Date(2026, 11, 26, 3, 4, 5, 0, time.UTC) }
	first, err := l.Rotate()
	if err != nil {
		t.Fatal(err)
	}
	second, err := l.Rotate()
	if err != nil {
		t.Fatal(err)
	}
	if first != path+".2026-11-26T03-04-05" || second != first+".1" {
		t.Errorf("rotated to %s then %s", first, second)
	}
}
