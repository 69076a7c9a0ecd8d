package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// logFile is the log destination of --logpath: a file that can be renamed
// aside and started anew (logRotate, SIGUSR1) or reopened under the same name
// (SIGHUP, or logRotate with --logRotate reopen, after an outside tool has
// moved it).
type logFile struct {
	mu   sync.Mutex
	path string
	f    *os.File
	// now names rotated files; a clock seam for tests.
	now func() time.Time
}

// openLogFile opens path for logging. Without appendTo an existing file is
// renamed aside first, as mongod does without --logappend.
func openLogFile(path string, appendTo bool) (*logFile, error) {
	l := &logFile{path: path, now: time.Now}
	if !appendTo {
		if _, err := os.Stat(path); err == nil {
			if _, err := l.renameAside(); err != nil {
				return nil, err
			}
		}
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("cannot open the log file: %w", err)
	}
	l.f = f
	return l, nil
}

// Write writes one log record.
func (l *logFile) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Write(p)
}

// renameAside renames the file to path.<UTC time>, mongod's name for a
// rotated log (mongod.log.2026-11-26T03-04-05), adding a counter if that
// name is taken.
func (l *logFile) renameAside() (string, error) {
	base := l.path + "." + l.now().UTC().Format("2006-01-02T15-04-05")
	to := base
	for i := 1; ; i++ {
		if _, err := os.Stat(to); os.IsNotExist(err) {
			break
		}
		to = fmt.Sprintf("%s.%d", base, i)
	}
	if err := os.Rename(l.path, to); err != nil {
		return "", fmt.Errorf("cannot rename the log file aside: %w", err)
	}
	return to, nil
}

// Rotate renames the current file aside and starts a new one; it returns
// the rotated file's name.
func (l *logFile) Rotate() (string, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	to, err := l.renameAside()
	if err != nil {
		return "", err
	}
	return to, l.reopenLocked()
}

// Reopen closes the file and opens path again (appending), so a file an
// outside tool has moved away is replaced by a new one.
func (l *logFile) Reopen() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.reopenLocked()
}

func (l *logFile) reopenLocked() error {
	f, err := os.OpenFile(l.path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		// Keep writing to the old file rather than lose the log.
		return fmt.Errorf("cannot reopen the log file: %w", err)
	}
	_ = l.f.Close()
	l.f = f
	return nil
}

// Close closes the file.
func (l *logFile) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Close()
}

var _ io.Writer = (*logFile)(nil)
