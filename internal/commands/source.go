package commands

import (
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"

	"github.com/cairndb/cairn/internal/engine"
)

// sliceSource serves documents already in memory.
type sliceSource struct{ docs []bsoncore.Document }

func (s *sliceSource) Next() (bsoncore.Document, error) {
	if len(s.docs) == 0 {
		return nil, nil
	}
	d := s.docs[0]
	s.docs = s.docs[1:]
	return d, nil
}

func (s *sliceSource) Close() error { s.docs = nil; return nil }

// scanSource filters a collection scan.
type scanSource struct {
	it    *engine.DocIter
	match matcher
}

func (s *scanSource) Next() (bsoncore.Document, error) {
	for s.it.Next() {
		if d := s.it.Doc(); s.match(d) {
			return d, nil
		}
	}
	return nil, s.it.Err()
}

func (s *scanSource) Close() error { return s.it.Close() }

// skipLimit applies skip and limit (0 = none) to a source.
type skipLimit struct {
	src         Source
	skip, limit int64
	n           int64
}

func limitSource(src Source, skip, limit int64) Source {
	if skip == 0 && limit == 0 {
		return src
	}
	return &skipLimit{src: src, skip: skip, limit: limit}
}

func (s *skipLimit) Next() (bsoncore.Document, error) {
	for s.skip > 0 {
		d, err := s.src.Next()
		if d == nil || err != nil {
			return nil, err
		}
		s.skip--
	}
	if s.limit > 0 && s.n >= s.limit {
		return nil, nil
	}
	d, err := s.src.Next()
	if d != nil {
		s.n++
	}
	return d, err
}

func (s *skipLimit) Close() error { return s.src.Close() }
