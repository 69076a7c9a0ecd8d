package shard

import "sort"

// Load is one shard's share of a collection as the balancer sees it.
type Load struct {
	Shard    string
	Bytes    int64 // the collection's data on the shard
	Draining bool  // being removed: everything leaves it
}

// Migration moves chunk Chunk (an index into the map's chunks) from one
// shard to another.
type Migration struct {
	Chunk    int
	From, To string
}

// Plan chooses one round of migrations with MongoDB 7.0's policy: chunks
// leave draining shards first; otherwise data moves from the shard
// holding the most of the collection to the one holding the least while
// they differ by at least three range sizes. A shard takes part in at
// most one migration per round. chunkBytes holds each chunk's data size.
func Plan(m *Map, chunkBytes []int64, loads []Load, rangeSize int64) []Migration {
	load := map[string]*Load{}
	for i := range loads {
		load[loads[i].Shard] = &loads[i]
	}
	busy := map[string]bool{}
	var out []Migration
	targets := func() []*Load {
		var ts []*Load
		for i := range loads {
			if !loads[i].Draining && !busy[loads[i].Shard] {
				ts = append(ts, &loads[i])
			}
		}
		sort.SliceStable(ts, func(i, j int) bool { return ts[i].Bytes < ts[j].Bytes })
		return ts
	}
	move := func(i int, from, to *Load) {
		out = append(out, Migration{Chunk: i, From: from.Shard, To: to.Shard})
		busy[from.Shard], busy[to.Shard] = true, true
		from.Bytes -= chunkBytes[i]
		to.Bytes += chunkBytes[i]
	}
	for i, c := range m.Chunks {
		from := load[c.Shard]
		if from == nil || !from.Draining || busy[from.Shard] {
			continue
		}
		if ts := targets(); len(ts) > 0 {
			move(i, from, ts[0])
		}
	}
	for {
		ts := targets()
		if len(ts) < 2 {
			return out
		}
		to, from := ts[0], ts[len(ts)-1]
		if from.Bytes-to.Bytes < 3*rangeSize {
			return out
		}
		// The largest chunk that does not overshoot: at most half the gap.
		best := -1
		for i, c := range m.Chunks {
			if c.Shard == from.Shard && chunkBytes[i] > 0 && chunkBytes[i] <= (from.Bytes-to.Bytes)/2 &&
				(best < 0 || chunkBytes[i] > chunkBytes[best]) {
				best = i
			}
		}
		if best < 0 {
			return out // only chunks too big to move without overshooting: split them first
		}
		move(best, from, to)
	}
}
