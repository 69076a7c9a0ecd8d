package bench

import (
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// progress shows a live line while a phase runs: operations done, the
// rate over the last interval and the elapsed time. On a terminal the line
// is rewritten in place every half second; otherwise (a log, CI) a line is
// printed every five seconds. Either way a final line records the phase.
type progress struct {
	w     io.Writer
	tty   bool
	label string
	total int64
	done  atomic.Int64
	start time.Time
	quit  chan struct{}
	wg    sync.WaitGroup
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func startProgress(w io.Writer, label string, total int64) *progress {
	p := &progress{w: w, tty: isTerminal(w), label: label, total: total, start: time.Now(), quit: make(chan struct{})}
	if w == nil {
		return p
	}
	every := 5 * time.Second
	if p.tty {
		every = 500 * time.Millisecond
	}
	p.wg.Go(func() {
		t := time.NewTicker(every)
		defer t.Stop()
		last, lastAt := int64(0), p.start
		for {
			select {
			case <-p.quit:
				return
			case now := <-t.C:
				n := p.done.Load()
				rate := float64(n-last) / now.Sub(lastAt).Seconds()
				last, lastAt = n, now
				line := fmt.Sprintf("%s: %d/%d ops, %s ops/s, %.1fs", p.label, n, p.total, groupDigits(rate), now.Sub(p.start).Seconds())
				if p.tty {
					fmt.Fprintf(p.w, "\r%-100s", line)
				} else {
					fmt.Fprintln(p.w, line)
				}
			}
		}
	})
	return p
}

// finish stops the live line and prints the phase's outcome.
func (p *progress) finish(outcome string) {
	close(p.quit)
	p.wg.Wait()
	if p.w == nil {
		return
	}
	if p.tty {
		fmt.Fprintf(p.w, "\r%-100s\r", "")
	}
	fmt.Fprintf(p.w, "%s: %s\n", p.label, outcome)
}
