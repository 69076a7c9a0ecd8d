package server_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
)

// BenchmarkUpdateByID is issue 5's measurement over the wire with durable
// writes: $set of one field on each of 100,000 documents by _id, from 16
// concurrent clients, next to inserting the same documents in the same run;
// and $push onto a 1,000-element array. Run:
//
//	go test -run XXX -bench UpdateByID -benchtime 1x ./internal/server/
func BenchmarkUpdateByID(b *testing.B) {
	const docs, clients = 100_000, 16
	s := startServer(b)
	c := s.client(b)
	ctx := context.Background()
	coll := c.Database("ubench").Collection("docs")
	for b.Loop() {
		_ = coll.Drop(ctx)
		insertRate := parallelOps(b, clients, docs, func(i int) error {
			_, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: i}, {Key: "name", Value: fmt.Sprintf("user%d", i)}, {Key: "n", Value: 0}})
			return err
		})
		setRate := parallelOps(b, clients, docs, func(i int) error {
			res, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: i}}, bson.D{{Key: "$set", Value: bson.D{{Key: "n", Value: 1}}}})
			if err == nil && res.ModifiedCount != 1 {
				err = fmt.Errorf("document %d not modified", i)
			}
			return err
		})
		b.ReportMetric(insertRate, "insert-ops/s")
		b.ReportMetric(setRate, "set-ops/s")
		b.ReportMetric(setRate/insertRate, "set/insert")
		b.ReportMetric(pushRate(b, c.Database("ubench").Collection("arrays")), "push-1000-ops/s")
	}
}

// parallelOps runs op(0..n-1) from clients goroutines and returns ops/s.
func parallelOps(b *testing.B, clients, n int, op func(i int) error) float64 {
	var next atomic.Int64
	var wg sync.WaitGroup
	var firstErr atomic.Value
	start := time.Now()
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := op(i); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := firstErr.Load(); err != nil {
		b.Fatal(err)
	}
	return float64(n) / time.Since(start).Seconds()
}

// pushRate measures $push onto an array that already holds 1,000 elements,
// sequentially (each push rewrites the document).
func pushRate(b *testing.B, coll *mongo.Collection) float64 {
	ctx := context.Background()
	arr := make(bson.A, 1000)
	for i := range arr {
		arr[i] = i
	}
	if _, err := coll.InsertOne(ctx, bson.D{{Key: "_id", Value: 1}, {Key: "a", Value: arr}}); err != nil {
		b.Fatal(err)
	}
	const pushes = 2000
	return parallelOps(b, 1, pushes, func(i int) error {
		_, err := coll.UpdateOne(ctx, bson.D{{Key: "_id", Value: 1}}, bson.D{{Key: "$push", Value: bson.D{{Key: "a", Value: i}}}})
		return err
	})
}
