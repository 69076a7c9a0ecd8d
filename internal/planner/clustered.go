package planner

import "go.mongodb.org/mongo-driver/v2/bson"

// A clustered collection (created with clusteredIndex) reads an _id range
// straight from its documents, as every Cairn collection does; MongoDB
// shows that read as one CLUSTERED_IXSCAN stage with the filter and the
// range's ends (minRecord, maxRecord) rather than FETCH over IXSCAN, and
// so does explain here.

// clusteredScan reports whether s is the FETCH over a clustered _id scan.
func clusteredScan(s stage) (*fetch, *ixScan, bool) {
	f, ok := s.(*fetch)
	if !ok {
		return nil, nil, false
	}
	kids := f.children()
	if len(kids) != 1 {
		return nil, nil, false
	}
	scan, ok := kids[0].(*ixScan)
	if !ok || !scan.clustered || scan.countOnly || scan.distinct {
		return nil, nil, false
	}
	return f, scan, true
}

// describeClustered renders f over scan as MongoDB's CLUSTERED_IXSCAN.
func describeClustered(d *doc, f *fetch, scan *ixScan, withStats bool) {
	put(d, "stage", "CLUSTERED_IXSCAN")
	if len(f.rawFilter) > 5 {
		put(d, "filter", bson.Raw(f.rawFilter))
	}
	put(d, "direction", direction(scan.reverse))
	if ivs := scan.idIntervals(); len(ivs) > 0 {
		if lo := ivs[0].Lo; lo.Type != minKey.Type {
			put(d, "minRecord", bson.RawValue{Type: bson.Type(lo.Type), Value: lo.Data})
		}
		if hi := ivs[len(ivs)-1].Hi; hi.Type != maxKey.Type {
			put(d, "maxRecord", bson.RawValue{Type: bson.Type(hi.Type), Value: hi.Data})
		}
	}
	if withStats {
		addCommon(d, &f.stats)
		put(d, "docsExamined", scan.keys)
	}
}

// idIntervals are the scan's _id intervals (nil without bounds).
func (s *ixScan) idIntervals() []Interval {
	if len(s.bounds) == 0 {
		return nil
	}
	return s.bounds[0].intervals()
}
