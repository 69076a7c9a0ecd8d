package commands

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
)

// LogRing is a slog.Handler that passes records on and keeps the most recent
// ones as JSON lines for getLog "global".
type LogRing struct {
	next  slog.Handler
	state *ringState
	json  slog.Handler
}

type ringState struct {
	mu    sync.Mutex
	lines []string
	size  int
	total int64
	buf   bytes.Buffer
}

// NewLogRing keeps the last size records of everything logged through it.
func NewLogRing(size int, next slog.Handler) *LogRing {
	st := &ringState{size: size}
	return &LogRing{next: next, state: st, json: slog.NewJSONHandler(&st.buf, nil)}
}

// Enabled reports whether the wrapped handler wants the level.
func (l *LogRing) Enabled(ctx context.Context, lvl slog.Level) bool { return l.next.Enabled(ctx, lvl) }

// Handle records r and passes it on.
func (l *LogRing) Handle(ctx context.Context, r slog.Record) error {
	st := l.state
	st.mu.Lock()
	st.buf.Reset()
	if err := l.json.Handle(ctx, r); err == nil {
		line := string(bytes.TrimRight(st.buf.Bytes(), "\n"))
		if len(st.lines) >= st.size {
			st.lines = st.lines[1:]
		}
		st.lines = append(st.lines, line)
		st.total++
	}
	st.mu.Unlock()
	return l.next.Handle(ctx, r)
}

// WithAttrs returns a handler with attrs on both sides.
func (l *LogRing) WithAttrs(attrs []slog.Attr) slog.Handler {
	return &LogRing{next: l.next.WithAttrs(attrs), state: l.state, json: l.json.WithAttrs(attrs)}
}

// WithGroup returns a handler with the group on both sides.
func (l *LogRing) WithGroup(name string) slog.Handler {
	return &LogRing{next: l.next.WithGroup(name), state: l.state, json: l.json.WithGroup(name)}
}

// Lines returns the kept lines and how many were ever written.
func (l *LogRing) Lines() ([]string, int64) {
	l.state.mu.Lock()
	defer l.state.mu.Unlock()
	return append([]string(nil), l.state.lines...), l.state.total
}
