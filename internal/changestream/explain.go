package changestream

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/hlc"
)

// Explained is a change stream as MongoDB 7.0's explain shows it: the read of the oplog ($cursor, its plan a forward COLLSCAN
// of local.oplog.rs from the start point) and the $changeStream stages the
// stage unfolds into, {$changeStream: {stage: "internal…", …}}, in
// MongoDB's order and under its names, each one a step Cairn's Stream takes:
// unwinding applyOps (internalUnwindTransaction), building events
// (internalTransform, with the stage's options and the start point filled
// in as MongoDB fills it), ending with an invalidate (internalCheckInvalidate),
// checking the history and dropping events up to the resume point
// (internalCheckResumability), pre- and post-images (internalAddPreImage,
// internalAddPostImage) and checking that the resume token's event is
// there (internalEnsureResumeTokenPresent).
//
// Deviations: the COLLSCAN's filter is the oplog range Cairn reads ({ts:
// {$gte: start}}); MongoDB's also holds its rewrite of the namespace and
// operation filters, which Cairn applies while building events
// (internalTransform), and MongoDB's internalUnwindTransaction carries that
// filter too. The classic operation types' $match that MongoDB adds without
// showExpandedEvents is part of Cairn's internalTransform.
type Explained struct {
	// Plan is the $cursor's queryPlanner.winningPlan; Stages follow it.
	Plan   bsoncore.Document
	Stages []bsoncore.Document
	// Entries are the oplog entries the plan read (ExplainRun).
	Entries int64
}

// Explain is how a stream of spec opened on log now would explain: its start
// point is the token's event, startAtOperationTime, or the first ts after
// the last committed (MongoDB: one tick past the last applied).
func Explain(spec Spec, log Log) Explained {
	start := log.LastCommitted() + 1
	return explain(spec, start, nil)
}

// ExplainRun is Explain at executionStats verbosity for a counting stream
// s of spec that read to the log's end: each $changeStream stage with the
// nReturned s counted (internalUnwindTransaction the operations,
// internalTransform the events, internalCheckInvalidate those and the
// invalidates, the later stages those past the resume point). Cairn's
// resume point drops the token's own event where MongoDB's
// internalEnsureResumeTokenPresent swallows it: MongoDB's
// internalCheckResumability counts that one event more.
func ExplainRun(spec Spec, s *Stream) Explained {
	st := s.Stats()
	return explain(spec, s.Begin(), &st)
}

func explain(spec Spec, start hlc.Timestamp, st *ReadStats) Explained {
	tok := spec.resumeToken()
	switch {
	case tok != nil:
		start = tok.ClusterTime
	case spec.HasStartAt:
		start = spec.StartAtOperationTime
	}
	ts := func(b *bsoncore.DocumentBuilder, key string, t hlc.Timestamp) *bsoncore.DocumentBuilder {
		return b.AppendTimestamp(key, t.T(), t.I())
	}
	filter := bsoncore.NewDocumentBuilder().AppendDocument("ts", ts(bsoncore.NewDocumentBuilder(), "$gte", start).Build()).Build()
	var x Explained
	x.Plan = bsoncore.NewDocumentBuilder().AppendString("stage", "COLLSCAN").AppendDocument("filter", filter).AppendString("direction", "forward").Build()
	var counts []int64 // each stage's nReturned, in order (with st)
	if st != nil {
		counts = []int64{st.Operations, st.Events, st.Events + st.Invalidates}
	}
	stage := func(name string, more func(b *bsoncore.DocumentBuilder)) {
		b := bsoncore.NewDocumentBuilder().AppendString("stage", name)
		if more != nil {
			more(b)
		}
		d := bsoncore.NewDocumentBuilder().AppendDocument("$changeStream", b.Build())
		if st != nil {
			n := st.Kept
			if i := len(x.Stages); i < len(counts) {
				n = counts[i]
			}
			d.AppendInt64("nReturned", n)
		}
		x.Stages = append(x.Stages, d.Build())
	}
	if st != nil {
		x.Entries = st.Entries
	}
	stage("internalUnwindTransaction", nil)
	stage("internalTransform", func(b *bsoncore.DocumentBuilder) {
		o := bsoncore.NewDocumentBuilder()
		switch {
		case spec.ResumeAfter != nil:
			o.AppendDocument("resumeAfter", spec.ResumeAfter.Doc())
		case spec.StartAfter != nil:
			o.AppendDocument("startAfter", spec.StartAfter.Doc())
		default:
			ts(o, "startAtOperationTime", start)
		}
		o.AppendString("fullDocument", spec.FullDocument).AppendString("fullDocumentBeforeChange", spec.FullDocumentBeforeChange)
		if spec.AllChangesForCluster {
			o.AppendBoolean("allChangesForCluster", true)
		}
		if spec.ShowExpandedEvents {
			o.AppendBoolean("showExpandedEvents", true)
		}
		b.AppendDocument("options", o.Build())
	})
	stage("internalCheckInvalidate", nil)
	resume := Token{ClusterTime: start, HighWater: true}.Doc()
	if tok != nil {
		resume = tok.Doc()
	}
	stage("internalCheckResumability", func(b *bsoncore.DocumentBuilder) { b.AppendDocument("resumeToken", resume) })
	if spec.FullDocumentBeforeChange != "off" {
		stage("internalAddPreImage", func(b *bsoncore.DocumentBuilder) {
			b.AppendString("fullDocumentBeforeChange", spec.FullDocumentBeforeChange)
		})
	}
	if spec.FullDocument != "default" {
		stage("internalAddPostImage", func(b *bsoncore.DocumentBuilder) { b.AppendString("fullDocument", spec.FullDocument) })
	}
	if tok != nil && !tok.HighWater {
		stage("internalEnsureResumeTokenPresent", func(b *bsoncore.DocumentBuilder) { b.AppendDocument("resumeToken", resume) })
	}
	return x
}
