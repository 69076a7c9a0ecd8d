// Package txncheck checks histories of transactions for isolation
// anomalies, in the manner of Jepsen's Elle: a list-append history (each
// transaction appends unique values to lists under keys and reads whole
// lists) reveals the version order of every key — every read of a key is
// a prefix of the longest one — from which the dependencies between
// transactions follow (ww: appended the next element; wr: read a list
// ending with the other's element; rw: read a list the other extended).
// Cycles in that graph are the anomalies of Adya's hierarchy.
//
// Found: G0 (a cycle of ww edges: dirty writes), G1a (a committed read of
// a failed transaction's append), G1b (a committed read ending in a
// transaction's intermediate append), G1c (a cycle of ww and wr edges),
// G-single (a cycle with exactly one rw edge: read skew, and the lost
// update of a list-append history), lost updates directly (two committed
// transactions that read the same end of one list and both appended to
// it), and the impossible histories: reads that are not prefixes of one
// order, values no one appended, duplicates, a transaction not seeing its
// own appends, and committed appends missing from a final read. G2 (two
// or more rw edges: write skew) is what snapshot isolation allows and is
// not reported.
//
// Invariant "Every anomaly is named": Check never reports a history valid
// when it holds one of the anomalies above; TestCheckFindsAnomalies builds
// a history of each and a corrupted real one (the negative controls).
package txncheck

import (
	"fmt"
	"slices"
	"sort"
)

// Outcome is what the client learnt of a transaction.
type Outcome uint8

const (
	// OK: committed.
	OK Outcome = iota
	// Fail: certainly not committed (aborted, refused).
	Fail
	// Info: unknown (the commit's answer was lost): it may have committed.
	Info
)

// Mop is one micro-operation: an append of Value to Key's list, or a read
// of Key's list (Read, nil for a missing key).
type Mop struct {
	Append bool
	Key    string
	Value  int
	Read   []int
}

// Txn is one transaction of the history.
type Txn struct {
	ID      int
	Outcome Outcome
	Mops    []Mop
	// Final marks a read-only transaction run after every writer stopped:
	// every committed append must be in its reads.
	Final bool
}

// Anomaly is one finding.
type Anomaly struct {
	Kind string // "G0", "G1a", "G1b", "G1c", "G-single", "lost-update", "incompatible-order", …
	Msg  string
}

func (a Anomaly) String() string { return a.Kind + ": " + a.Msg }

type edgeKind uint8

const (
	ww edgeKind = iota
	wr
	rw
)

type edge struct {
	to   int
	kind edgeKind
	why  string
}

type appendRef struct {
	txn   int // index in the history
	pos   int // position of the mop in its transaction
	final bool
}

// Check returns the anomalies of history h (none: consistent with snapshot
// isolation as far as list-append can tell).
func Check(h []Txn) []Anomaly {
	var out []Anomaly
	add := func(kind, format string, args ...any) {
		out = append(out, Anomaly{Kind: kind, Msg: fmt.Sprintf(format, args...)})
	}
	// Who appended each (key, value), and whether it was its transaction's
	// last append to the key.
	writer := map[string]map[int]appendRef{}
	for i, t := range h {
		last := map[string]int{}
		for j, m := range t.Mops {
			if m.Append {
				last[m.Key] = j
			}
		}
		for j, m := range t.Mops {
			if !m.Append {
				continue
			}
			if writer[m.Key] == nil {
				writer[m.Key] = map[int]appendRef{}
			}
			if _, dup := writer[m.Key][m.Value]; dup {
				add("duplicate-append", "value %d appended to %s twice", m.Value, m.Key)
			}
			writer[m.Key][m.Value] = appendRef{txn: i, pos: j, final: last[m.Key] == j}
		}
	}
	seen := func(t Txn) bool { return t.Outcome != Fail }
	// Version order per key: the longest committed read, every other read
	// a prefix of it.
	order := map[string][]int{}
	for _, t := range h {
		if t.Outcome != OK {
			continue
		}
		for _, m := range t.Mops {
			if m.Append {
				continue
			}
			cur := order[m.Key]
			long, short := m.Read, cur
			if len(cur) > len(m.Read) {
				long, short = cur, m.Read
			}
			if !slices.Equal(long[:len(short)], short) {
				add("incompatible-order", "key %s read as %v and as %v: not prefixes of one order", m.Key, cur, m.Read)
				continue
			}
			order[m.Key] = long
		}
	}
	// Reads' own consistency and G1a/G1b.
	for i, t := range h {
		if t.Outcome != OK {
			continue
		}
		own := map[string][]int{} // the transaction's appends so far, per key
		for _, m := range t.Mops {
			if m.Append {
				own[m.Key] = append(own[m.Key], m.Value)
				continue
			}
			dups := map[int]bool{}
			for _, v := range m.Read {
				if dups[v] {
					add("duplicate-element", "txn %d read %s = %v: %d twice", t.ID, m.Key, m.Read, v)
				}
				dups[v] = true
				w, ok := writer[m.Key][v]
				switch {
				case !ok:
					add("garbage-read", "txn %d read %d in %s, which no transaction appended", t.ID, v, m.Key)
				case h[w.txn].Outcome == Fail:
					add("G1a", "txn %d read %d in %s, appended by txn %d, which failed", t.ID, v, m.Key, h[w.txn].ID)
				}
			}
			if n := len(m.Read); n > 0 {
				if w, ok := writer[m.Key][m.Read[n-1]]; ok && w.txn != i && !w.final {
					add("G1b", "txn %d read %s ending in %d, an intermediate append of txn %d", t.ID, m.Key, m.Read[n-1], h[w.txn].ID)
				}
			}
			if mine := own[m.Key]; len(mine) > 0 {
				if len(m.Read) < len(mine) || !slices.Equal(m.Read[len(m.Read)-len(mine):], mine) {
					add("internal", "txn %d read %s = %v after appending %v", t.ID, m.Key, m.Read, mine)
				}
			}
		}
	}
	// Committed appends missing from a final read.
	for _, t := range h {
		if !t.Final || t.Outcome != OK {
			continue
		}
		for _, m := range t.Mops {
			if m.Append {
				continue
			}
			in := map[int]bool{}
			for _, v := range m.Read {
				in[v] = true
			}
			for v, w := range writer[m.Key] {
				if h[w.txn].Outcome == OK && !in[v] {
					add("lost-append", "txn %d's committed append of %d to %s is missing from the final read %v", h[w.txn].ID, v, m.Key, m.Read)
				}
			}
		}
	}
	// Lost updates: committed transactions that read the same end of a
	// key's list and both appended to it.
	type readEnd struct {
		key string
		end int // -1: empty
	}
	readers := map[readEnd][]int{}
	for i, t := range h {
		if t.Outcome != OK {
			continue
		}
		appended := map[string]bool{}
		for _, m := range t.Mops {
			if m.Append {
				appended[m.Key] = true
			}
		}
		// Only a read before the transaction's own append to the key says
		// what it read of others' writes.
		done := map[string]bool{}
		for _, m := range t.Mops {
			if m.Append {
				done[m.Key] = true
				continue
			}
			if !appended[m.Key] || done[m.Key] {
				continue
			}
			done[m.Key] = true
			end := -1
			if n := len(m.Read); n > 0 {
				end = m.Read[n-1]
			}
			readers[readEnd{m.Key, end}] = append(readers[readEnd{m.Key, end}], i)
		}
	}
	for re, ts := range readers {
		if len(ts) > 1 {
			ids := make([]int, len(ts))
			for k, i := range ts {
				ids[k] = h[i].ID
			}
			add("lost-update", "txns %v all read %s ending at %d and all appended to it", ids, re.key, re.end)
		}
	}
	// The dependency graph over transactions that may have committed.
	g := make([][]edge, len(h))
	link := func(from, to int, k edgeKind, why string) {
		if from != to && seen(h[from]) && seen(h[to]) {
			g[from] = append(g[from], edge{to: to, kind: k, why: why})
		}
	}
	for key, vs := range order {
		for k := 1; k < len(vs); k++ {
			a, b := writer[key][vs[k-1]], writer[key][vs[k]]
			link(a.txn, b.txn, ww, fmt.Sprintf("%s: %d then %d", key, vs[k-1], vs[k]))
		}
	}
	for i, t := range h {
		if t.Outcome != OK {
			continue
		}
		for _, m := range t.Mops {
			if m.Append {
				continue
			}
			vs := order[m.Key]
			n := len(m.Read)
			if n > 0 {
				if w, ok := writer[m.Key][m.Read[n-1]]; ok {
					link(w.txn, i, wr, fmt.Sprintf("%s read up to %d", m.Key, m.Read[n-1]))
				}
			}
			if n < len(vs) {
				if w, ok := writer[m.Key][vs[n]]; ok {
					link(i, w.txn, rw, fmt.Sprintf("%s read %d elements, then %d", m.Key, n, vs[n]))
				}
			}
		}
	}
	out = append(out, cycles(h, g)...)
	sort.SliceStable(out, func(a, b int) bool { return out[a].Kind < out[b].Kind })
	return out
}

// cycles finds G0, G1c and G-single cycles in g.
func cycles(h []Txn, g [][]edge) []Anomaly {
	var out []Anomaly
	reach := func(from, to int, allowed func(edgeKind) bool) []int {
		// BFS; returns the path from..to or nil.
		prev := map[int]int{from: -1}
		q := []int{from}
		for len(q) > 0 {
			x := q[0]
			q = q[1:]
			for _, e := range g[x] {
				if !allowed(e.kind) {
					continue
				}
				if _, ok := prev[e.to]; ok {
					continue
				}
				prev[e.to] = x
				if e.to == to {
					var path []int
					for y := to; y != -1; y = prev[y] {
						path = append(path, h[y].ID)
					}
					slices.Reverse(path)
					return path
				}
				q = append(q, e.to)
			}
		}
		return nil
	}
	onlyWW := func(k edgeKind) bool { return k == ww }
	noRW := func(k edgeKind) bool { return k != rw }
	reported := map[string]bool{}
	for a := range g {
		for _, e := range g[a] {
			var kind string
			var path []int
			switch e.kind {
			case ww:
				if path = reach(e.to, a, onlyWW); path != nil {
					kind = "G0"
				} else if path = reach(e.to, a, noRW); path != nil {
					kind = "G1c"
				}
			case wr:
				if path = reach(e.to, a, noRW); path != nil {
					kind = "G1c"
				}
			case rw:
				if path = reach(e.to, a, noRW); path != nil {
					kind = "G-single"
				}
			}
			if kind == "" {
				continue
			}
			msg := fmt.Sprintf("txn %d -> %v (%s)", h[a].ID, path, e.why)
			if !reported[kind+msg] {
				reported[kind+msg] = true
				out = append(out, Anomaly{Kind: kind, Msg: msg})
			}
		}
	}
	return out
}

// Bank checks a bank history: every read of all the accounts (a snapshot
// read) sums to total.
func Bank(reads [][]int, total int) []Anomaly {
	var out []Anomaly
	for i, r := range reads {
		sum := 0
		for _, v := range r {
			sum += v
		}
		if sum != total {
			out = append(out, Anomaly{Kind: "bank-total", Msg: fmt.Sprintf("read %d: balances %v sum to %d, not %d", i, r, sum, total)})
		}
	}
	return out
}
