package shardsvr

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/shard"
)

// The balancer runs on the config servers' primary (a node that is not a
// shard and holds config.shards): every round it reads config.settings
// {_id: "balancer"} (stopped: true or mode: "off" skip the round, as
// balancerStop writes) and {_id: "chunksize"} (the range size in MB,
// 128 by default), asks each shard the data size of its chunks
// (_shardsvrChunkSizes), plans with shard.Plan (MongoDB 7.0's policy: by
// data size, three range sizes of imbalance) and runs the moves through
// the donors' _shardsvrMoveRange, one after another. A collection with
// noBalance (sh.disableBalancing) or permitMigrations: false
// (setAllowMigrations) is skipped; the commit refuses a migration of the
// latter too (commit.go), whoever started it.

// defaultRangeSize is MongoDB 7.0's default chunkSize.
const defaultRangeSize = 128 << 20

// OverrideBalanceRoundIntervalFailPoint (MongoDB's name) sets the wait
// between balancer rounds to its data's intervalMs while it is on: tests
// of the balancer run rounds in a fraction of a second instead of ten.
const OverrideBalanceRoundIntervalFailPoint = "overrideBalanceRoundInterval"

// balancerLoop runs a round every BalancerInterval (or the fail point's
// interval) on the config servers' primary, counting each round it ran,
// one that found the balancer stopped too (balancerStatus's
// numBalancerRounds, as MongoDB's). While it waits it looks at the fail
// point every second, so an interval set by configureFailPoint takes
// effect within a second rather than after the wait in progress.
func (n *Node) balancerLoop() {
	defer n.wg.Done()
	if n.opts.ShardSvr {
		return
	}
	t := time.NewTimer(time.Hour)
	defer t.Stop()
	// active is whether the point was on when interval was last read: the
	// wait reads it again only when that changes, so a point in a skip or
	// times mode is evaluated once a round, as MongoDB's is.
	interval, active := n.roundInterval(), n.overrideInterval.Active()
	last := time.Now()
	for {
		if on := n.overrideInterval.Active(); on != active {
			interval, active = n.roundInterval(), on
		}
		if wait := time.Until(last.Add(interval)); wait > 0 {
			t.Reset(min(wait, time.Second))
			select {
			case <-n.ctx.Done():
				return
			case <-t.C:
			}
			continue
		}
		last = time.Now()
		if n.opts.IsPrimary() && n.opts.ConfigServer != nil && n.opts.ConfigServer() {
			n.inRound.Store(true)
			if _, err := n.BalanceRound(n.ctx); err != nil && n.ctx.Err() == nil {
				n.opts.Log.Warn("balancer round failed", "err", err)
			}
			n.inRound.Store(false)
			n.rounds.Add(1)
		}
		interval, active = n.roundInterval(), n.overrideInterval.Active()
	}
}

// roundInterval is the wait between rounds: the fail point's intervalMs
// when it fires (configureFailPoint checked it is a positive number),
// else BalancerInterval.
func (n *Node) roundInterval() time.Duration {
	if data, ok := n.overrideInterval.Eval(nil); ok {
		if ms, ok := bsoncore.Document(data).Lookup("intervalMs").AsInt64OK(); ok && ms > 0 {
			return time.Duration(ms) * time.Millisecond
		}
	}
	return n.opts.BalancerInterval
}

// balancerStatus is _configsvrBalancerStatus, what a router's
// balancerStatus answers: the mode config.settings holds, whether a round
// is running on this config server, and how many it has run.
func (n *Node) balancerStatus(ctx context.Context) (bsoncore.Document, error) {
	settings, err := n.localFind(ctx, "config", "settings", bson.D{{Key: "_id", Value: "balancer"}})
	if err != nil {
		return nil, err
	}
	mode := "full"
	if len(settings) > 0 {
		if m, ok := settings[0].Lookup("mode").StringValueOK(); ok {
			mode = m
		} else if stopped, _ := settings[0].Lookup("stopped").BooleanOK(); stopped {
			mode = "off"
		}
	}
	return bsoncore.NewDocumentBuilder().AppendString("mode", mode).AppendBoolean("inBalancerRound", n.inRound.Load()).
		AppendInt64("numBalancerRounds", n.rounds.Load()).Build(), nil
}

// BalanceRound runs one balancer round and returns the migrations it
// made.
func (n *Node) BalanceRound(ctx context.Context) (int, error) {
	settings, err := n.localFind(ctx, "config", "settings", bson.D{})
	if err != nil {
		return 0, err
	}
	rangeSize := int64(defaultRangeSize)
	for _, s := range settings {
		switch id, _ := s.Lookup("_id").StringValueOK(); id {
		case "balancer":
			if stopped, _ := s.Lookup("stopped").BooleanOK(); stopped {
				return 0, nil
			}
			if mode, _ := s.Lookup("mode").StringValueOK(); mode == "off" {
				return 0, nil
			}
		case "chunksize":
			if mb, ok := s.Lookup("value").AsInt64OK(); ok && mb > 0 {
				rangeSize = mb << 20
			}
		}
	}
	shardDocs, err := n.localFind(ctx, "config", "shards", bson.D{})
	if err != nil || len(shardDocs) < 2 {
		return 0, err
	}
	hostOf := map[string]string{}
	var loads []shard.Load
	for _, d := range shardDocs {
		name, _ := d.Lookup("_id").StringValueOK()
		host, _ := d.Lookup("host").StringValueOK()
		draining, _ := d.Lookup("draining").BooleanOK()
		hostOf[name] = host
		loads = append(loads, shard.Load{Shard: name, Draining: draining})
	}
	colls, err := n.localFind(ctx, "config", "collections", bson.D{})
	if err != nil {
		return 0, err
	}
	moved := 0
	for _, cd := range colls {
		m, coll, err := mapOf(ctx, n.localChunks, cd)
		if err != nil {
			return moved, err
		}
		if coll.NoBalance || coll.NoMigrations {
			continue
		}
		sizes := make([]int64, len(m.Chunks))
		ls := append([]shard.Load(nil), loads...)
		for i := range ls {
			ls[i].Bytes = 0
			if err := n.chunkSizes(ctx, hostOf[ls[i].Shard], m, ls[i].Shard, sizes); err != nil {
				return moved, err
			}
		}
		for i, c := range m.Chunks {
			for j := range ls {
				if ls[j].Shard == c.Shard {
					ls[j].Bytes += sizes[i]
				}
			}
		}
		for _, mv := range shard.Plan(m, sizes, ls, rangeSize) {
			c := m.Chunks[mv.Chunk]
			cmd := bson.D{{Key: "_shardsvrMoveRange", Value: coll.NS}, {Key: "toShard", Value: mv.To}, {Key: "min", Value: rawDoc(c.Min)},
				{Key: "max", Value: rawDoc(c.Max)}, {Key: "fromShard", Value: mv.From}, {Key: "writeConcern", Value: majority}}
			if _, err := n.peers.RunPrimary(ctx, hostOf[mv.From], command("admin", cmd)); err != nil {
				n.opts.Log.Warn("balancer: a migration failed", "ns", coll.NS, "from", mv.From, "to", mv.To, "err", err)
				continue
			}
			moved++
		}
	}
	return moved, nil
}

// chunkSizes asks shardName the data size of its chunks of m and adds
// them to sizes (by chunk index).
func (n *Node) chunkSizes(ctx context.Context, host string, m *shard.Map, shardName string, sizes []int64) error {
	var bounds bson.A
	var idx []int
	for i, c := range m.Chunks {
		if c.Shard == shardName {
			bounds = append(bounds, bson.D{{Key: "min", Value: rawDoc(c.Min)}, {Key: "max", Value: rawDoc(c.Max)}})
			idx = append(idx, i)
		}
	}
	if len(idx) == 0 {
		return nil
	}
	reply, err := n.peers.RunPrimary(ctx, host, command("admin", bson.D{{Key: "_shardsvrChunkSizes", Value: m.NS},
		{Key: "shardKeyPattern", Value: rawDoc(m.Pattern.Doc)}, {Key: "chunks", Value: bounds}}))
	if err != nil {
		return err
	}
	arr, _ := reply.Lookup("sizes").ArrayOK()
	vals, _ := arr.Values()
	for k, v := range vals {
		if k < len(idx) {
			sizes[idx[k]], _ = v.AsInt64OK()
		}
	}
	return nil
}

// chunkSizesCmd is _shardsvrChunkSizes: the bytes of this shard's
// documents of ns in each given range (one index range scan each).
func (n *Node) chunkSizesCmd(ctx context.Context, body bsoncore.Document) (bsoncore.Document, error) {
	ns, _ := body.Index(0).Value().StringValueOK()
	key, _ := body.Lookup("shardKeyPattern").DocumentOK()
	p, err := shard.ParsePattern(key)
	if err != nil {
		return nil, err
	}
	arr, _ := body.Lookup("chunks").ArrayOK()
	vals, _ := arr.Values()
	rs := make([]keyRange, len(vals))
	for i, v := range vals {
		d, _ := v.DocumentOK()
		min, _ := d.Lookup("min").DocumentOK()
		max, _ := d.Lookup("max").DocumentOK()
		if rs[i], err = newRange(p, min, max); err != nil {
			return nil, err
		}
	}
	sizes := make([]int64, len(rs))
	for i, r := range rs {
		// Each range through the shard key's index; only the sizes
		// travel ($bsonSize), not the documents.
		err := n.eachInRange(ctx, ns, r, bson.D{{Key: "_id", Value: 0}, {Key: "s", Value: bson.D{{Key: "$bsonSize", Value: "$$ROOT"}}}}, func(d bsoncore.Document, projected bool) error {
			if !projected {
				sizes[i] += int64(len(d)) // a scan without the index: the document itself
			} else if s, ok := d.Lookup("s").AsInt64OK(); ok {
				sizes[i] += s
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	out := bsoncore.NewArrayBuilder()
	for _, s := range sizes {
		out.AppendInt64(s)
	}
	return bsoncore.NewDocumentBuilder().AppendArray("sizes", out.Build()).Build(), nil
}
