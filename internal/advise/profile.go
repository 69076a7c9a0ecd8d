package advise

import (
	"regexp"
	"sort"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Caps that keep Analyze bounded (invariant "Bounded").
const (
	maxPaths          = 10000
	maxNamesPerPath   = 1000
	maxValuesPerField = 10000
	maxLengths        = 10000
)

// anyName stands for the data-valued field names of a map keyed by ids in
// a profile path: nodes.<uuid>.status is profiled as nodes.*.status.
const anyName = "*"

// profile is what one pass over the sample learns, per field path.
type profile struct {
	docs   int
	paths  map[string]*pathStat
	order  []string // paths in first-seen order, for stable output
	capped bool     // maxPaths was reached: later new paths were not profiled
}

type pathStat struct {
	path    string
	docs    int // sampled documents holding the path
	lastDoc int // the last document counted in docs (1-based)

	// embedded documents at the path
	objects     int
	keys        int            // field names seen in them, in total
	idLike      int            // of which look like ids
	names       map[string]int // distinct names, by how many objects hold them
	namesCapped bool

	// arrays at the path
	arrays  int
	maxLen  int
	lengths []int
	nested  int // arrays met inside another array's elements

	// scalar values of top-level fields and of _id's fields (shard keys)
	values       map[string]int
	valuesCapped bool
	kinds        map[bsoncore.Type]int
}

func buildProfile(sample []bsoncore.Document) *profile {
	p := &profile{paths: map[string]*pathStat{}}
	for _, d := range sample {
		p.docs++
		p.object(d, "", 0, false)
	}
	return p
}

func (p *profile) stat(path string) *pathStat {
	if s, ok := p.paths[path]; ok {
		return s
	}
	if len(p.paths) >= maxPaths {
		p.capped = true
		return nil
	}
	s := &pathStat{path: path, kinds: map[bsoncore.Type]int{}}
	p.paths[path] = s
	p.order = append(p.order, path)
	return s
}

// object profiles the fields of d, an embedded document at path (the
// document itself at ""); depth counts the enclosing arrays.
func (p *profile) object(d bsoncore.Document, path string, arrayDepth int, inArray bool) {
	els, err := d.Elements()
	if err != nil {
		return
	}
	var s *pathStat
	if path != "" {
		s = p.stat(path)
	}
	for _, el := range els {
		name := el.Key()
		child := name
		if looksLikeID(name) {
			child = anyName
		}
		if s != nil {
			s.keys++
			if child == anyName {
				s.idLike++
			}
			if s.names == nil {
				s.names = map[string]int{}
			}
			if _, ok := s.names[name]; ok || len(s.names) < maxNamesPerPath {
				s.names[name]++
			} else {
				s.namesCapped = true
			}
		}
		p.value(el.Value(), joinPath(path, child), arrayDepth, inArray)
	}
	if s != nil {
		s.objects++
	}
}

func (p *profile) value(v bsoncore.Value, path string, arrayDepth int, inArray bool) {
	s := p.stat(path)
	if s == nil {
		return
	}
	if s.lastDoc != p.docs {
		s.lastDoc = p.docs
		s.docs++
	}
	s.kinds[v.Type]++
	switch v.Type {
	case bsoncore.TypeEmbeddedDocument:
		p.object(v.Document(), path, arrayDepth, inArray)
	case bsoncore.TypeArray:
		s.arrays++
		if inArray {
			s.nested++
		}
		vals, _ := v.Array().Values()
		s.maxLen = max(s.maxLen, len(vals))
		if len(s.lengths) < maxLengths {
			s.lengths = append(s.lengths, len(vals))
		}
		for _, e := range vals {
			if e.Type == bsoncore.TypeEmbeddedDocument {
				p.object(e.Document(), path, arrayDepth+1, true)
			} else if e.Type == bsoncore.TypeArray {
				s.nested++
			}
		}
	default:
		if arrayDepth == 0 && (!strings.Contains(path, ".") || strings.HasPrefix(path, "_id.")) {
			if s.values == nil {
				s.values = map[string]int{}
			}
			k := string(rune(v.Type)) + string(v.Data)
			if _, ok := s.values[k]; ok || len(s.values) < maxValuesPerField {
				s.values[k]++
			} else {
				s.valuesCapped = true
			}
		}
	}
}

var (
	uuidRE     = regexp.MustCompile(`^[0-9a-fA-F]{8}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{4}-?[0-9a-fA-F]{12}$`)
	longHexRE  = regexp.MustCompile(`^[0-9a-fA-F]{16,}$`)
	numberRE   = regexp.MustCompile(`^[0-9]+$`)
	prefixedRE = regexp.MustCompile(`^[A-Za-z]{1,8}[-_:]?[0-9a-fA-F]{8,}$`) // "node-3f2a9c1e", "id_00012345"
)

// looksLikeID reports whether a field name is data rather than schema: a
// UUID, an ObjectId or other long hex string, a number, or a short
// prefix before a long hex or numeric id.
func looksLikeID(name string) bool {
	return uuidRE.MatchString(name) || longHexRE.MatchString(name) || numberRE.MatchString(name) || prefixedRE.MatchString(name)
}

// dynamic reports whether the embedded documents at s hold data-valued
// field names (a map keyed by ids): most names look like ids, or names
// are many and rarely repeat from one document to the next.
func (s *pathStat) dynamic() bool {
	if s.objects == 0 || s.keys < 3 {
		return false
	}
	if 2*s.idLike >= s.keys && len(s.names) >= 3 {
		return true
	}
	return len(s.names) >= 50 && float64(s.keys)/float64(len(s.names)) <= 2
}

// percentile returns the q-th quantile of s's array lengths.
func (s *pathStat) percentile(q float64) int {
	if len(s.lengths) == 0 {
		return 0
	}
	ls := append([]int(nil), s.lengths...)
	sort.Ints(ls)
	return ls[int(q*float64(len(ls)-1))]
}
