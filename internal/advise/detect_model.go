package advise

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// dynamicFieldNames finds maps keyed by data (ids as field names): no
// index can serve a query by such a key, so teams end up copying the keys
// into a second array (duplicatedKeysArray).
func dynamicFieldNames(in *Input, p *profile, _ Options) []Finding {
	var out []Finding
	for _, path := range p.order {
		s := p.paths[path]
		if !s.dynamic() {
			continue
		}
		names := sortedKeys(s.names, 3)
		distinct := fmt.Sprint(len(s.names))
		if s.namesCapped {
			distinct = "≥" + distinct
		}
		fields := valueFields(p, path)
		shape := "{id: <key>}"
		if len(fields) > 0 {
			shape = fmt.Sprintf("{id: <key>, %s}", strings.Join(fields, ", "))
		}
		out = append(out, Finding{
			Kind: "dynamicFieldNames", Severity: High, Path: path,
			Summary: fmt.Sprintf("%s is a map keyed by data: %s distinct field names in %d of %d sampled documents (%s of them look like ids), e.g. %s",
				path, distinct, s.docs, p.docs, pct(s.idLike, s.keys), quoteAll(names)),
			Evidence: []Fact{{"documents", s.docs}, {"distinctNames", len(s.names)}, {"idLikeNames", pct(s.idLike, s.keys)}, {"examples", names}},
			Suggestion: fmt.Sprintf("Store %s as an array of subdocuments, one per key: [%s], and create the index {%q: 1}: a multikey index then serves queries by id, which no index can do on field names.",
				path, shape, path+".id"),
		})
		if !strings.Contains(path, ".") {
			out = append(out, keysArrays(in, p, path)...)
		}
	}
	return out
}

// valueFields lists the field names of the values of a dynamic map.
func valueFields(p *profile, path string) []string {
	prefix := path + "." + anyName + "."
	var out []string
	for _, q := range p.order {
		if rest, ok := strings.CutPrefix(q, prefix); ok && !strings.Contains(rest, ".") && rest != anyName {
			out = append(out, rest)
		}
	}
	if len(out) > 5 {
		out = append(out[:5], "…")
	}
	return out
}

// keysArrays finds top-level arrays of strings that repeat the field names
// of the map at path in the same document: a copy kept so the ids can be
// indexed, which drifts whenever one side is written without the other.
func keysArrays(in *Input, p *profile, path string) []Finding {
	var out []Finding
	for _, f := range p.order {
		s := p.paths[f]
		if f == path || strings.Contains(f, ".") || s.arrays == 0 {
			continue
		}
		holding, same := 0, 0
		for _, d := range in.Sample {
			m, ok := d.Lookup(path).DocumentOK()
			if !ok {
				continue
			}
			arr, ok := d.Lookup(f).ArrayOK()
			if !ok {
				continue
			}
			holding++
			if sameStrings(fieldNames(m), stringValues(arr)) {
				same++
			}
		}
		if holding == 0 || same*5 < holding*4 {
			continue
		}
		sev := Medium
		if same < holding {
			sev = High // already out of sync somewhere
		}
		out = append(out, Finding{
			Kind: "duplicatedKeysArray", Severity: sev, Path: f,
			Summary: fmt.Sprintf("%s repeats the field names of %s in %d of %d documents; in %d they no longer agree",
				f, path, same, holding, holding-same),
			Evidence: []Fact{{"documents", holding}, {"agreeing", same}, {"outOfSync", holding - same}},
			Suggestion: fmt.Sprintf("Once %s is an array of subdocuments indexed on %q, drop %s: the ids are then indexed where they live and cannot drift apart.",
				path, path+".id", f),
		})
	}
	return out
}

func fieldNames(d bsoncore.Document) []string {
	els, _ := d.Elements()
	out := make([]string, 0, len(els))
	for _, el := range els {
		out = append(out, el.Key())
	}
	return out
}

func stringValues(a bsoncore.Array) []string {
	vals, _ := a.Values()
	out := make([]string, 0, len(vals))
	for _, v := range vals {
		if s, ok := v.StringValueOK(); ok {
			out = append(out, s)
		}
	}
	return out
}

func sameStrings(a, b []string) bool {
	if len(a) == 0 || len(a) != len(b) {
		return false
	}
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// idSeparators split the parts of an identity glued into a string _id.
const idSeparators = ":/|#@;,"

// duplicatedIdentity finds string _ids that glue together values of other
// fields of the same document ("<model-uuid>:wordpress/0" beside
// model-uuid and name): two copies of the identity that drift apart.
func duplicatedIdentity(in *Input, _ *profile, _ Options) []Finding {
	stringIDs := 0
	has, embeds := map[string]int{}, map[string]int{}
	var example string
	for _, d := range in.Sample {
		id, ok := d.Lookup("_id").StringValueOK()
		if !ok || !strings.ContainsAny(id, idSeparators) {
			continue
		}
		stringIDs++
		els, _ := d.Elements()
		for _, el := range els {
			v, ok := el.Value().StringValueOK()
			if !ok || el.Key() == "_id" || len(v) < 2 {
				continue
			}
			has[el.Key()]++
			if containsPart(id, v) {
				embeds[el.Key()]++
				if example == "" {
					example = id
				}
			}
		}
	}
	if stringIDs == 0 {
		return nil
	}
	var fields []string
	drift := 0
	for f, n := range has {
		if embeds[f]*5 >= n*4 && n*2 >= stringIDs {
			fields = append(fields, f)
			drift = max(drift, n-embeds[f])
		}
	}
	if len(fields) == 0 {
		return nil
	}
	sort.Strings(fields)
	sev := Medium
	if drift > 0 {
		sev = High
	}
	parts := make([]string, len(fields))
	for i, f := range fields {
		parts[i] = fmt.Sprintf("%q: …", f)
	}
	return []Finding{{
		Kind: "duplicatedIdentity", Severity: sev, Path: "_id",
		Summary: fmt.Sprintf("string _ids such as %q repeat the fields %s in %d sampled documents; in %d the _id and the field disagree",
			example, quoteAll(fields), stringIDs, drift),
		Evidence: []Fact{{"documents", stringIDs}, {"fields", fields}, {"outOfSync", drift}, {"example", example}},
		Suggestion: fmt.Sprintf("Use a compound _id {%s} and drop the fields it repeats: each part is then a field of the _id, indexed with it, hashed and shardable as a whole, and it cannot drift. Query one part with {%q: …} (index it if needed).",
			strings.Join(parts, ", "), "_id."+fields[0]),
	}}
}

// containsPart reports whether v occurs in id bounded by separators or the
// ends of id.
func containsPart(id, v string) bool {
	for from := 0; from <= len(id)-len(v); {
		i := strings.Index(id[from:], v)
		if i < 0 {
			return false
		}
		i += from
		end := i + len(v)
		before := i == 0 || strings.IndexByte(idSeparators, id[i-1]) >= 0
		after := end == len(id) || strings.IndexByte(idSeparators, id[end]) >= 0
		if before && after {
			return true
		}
		from = i + 1
	}
	return false
}

// arrays finds arrays that grow without bound and arrays nested in the
// elements of other arrays.
func arrays(in *Input, p *profile, o Options) []Finding {
	var out []Finding
	positional := map[string]bool{}
	for _, sh := range in.Shapes {
		for _, path := range sh.ArrayPositions {
			positional[path] = true
		}
	}
	for _, path := range p.order {
		s := p.paths[path]
		if s.arrays == 0 {
			continue
		}
		if s.maxLen >= o.ArrayLimit {
			sev := Medium
			if s.maxLen >= 10*o.ArrayLimit {
				sev = High
			}
			out = append(out, Finding{
				Kind: "unboundedArray", Severity: sev, Path: path,
				Summary: fmt.Sprintf("%s holds up to %d elements (median %d, 95th percentile %d, over %d arrays sampled)",
					path, s.maxLen, s.percentile(0.5), s.percentile(0.95), s.arrays),
				Evidence:   []Fact{{"maxLength", s.maxLen}, {"medianLength", s.percentile(0.5)}, {"p95Length", s.percentile(0.95)}, {"arrays", s.arrays}},
				Suggestion: fmt.Sprintf("Move the elements of %s into a collection of their own keyed by the parent's _id (or bucket them, a bounded number per document): an array that keeps growing drives its document toward the 16 MB limit, and every update rewrites all of it.", path),
			})
		}
		if s.nested > 0 {
			sev := Low
			if positional[path] || positionalUnder(positional, path) {
				sev = Medium
			}
			out = append(out, Finding{
				Kind: "nestedArrays", Severity: sev, Path: path,
				Summary:    fmt.Sprintf("%s holds arrays inside the elements of an enclosing array (%d seen)", path, s.nested),
				Evidence:   []Fact{{"nestedArrays", s.nested}, {"positionalUpdates", sev == Medium}},
				Suggestion: fmt.Sprintf("Give the elements of the enclosing array an id and update %s with arrayFilters ($[<name>]) rather than by position, or flatten the inner arrays into the outer elements; if they change often, move them into documents of their own.", path),
			})
		}
	}
	biggest := 0
	for _, d := range in.Sample {
		biggest = max(biggest, len(d))
	}
	if biggest >= 4<<20 {
		sev := Medium
		if biggest >= 12<<20 {
			sev = High
		}
		out = append(out, Finding{
			Kind: "largeDocuments", Severity: sev, Path: "",
			Summary:    fmt.Sprintf("the largest sampled document is %.1f MB of the 16 MB limit", float64(biggest)/(1<<20)),
			Evidence:   []Fact{{"largestBytes", biggest}},
			Suggestion: "Split what grows (the largest arrays or maps) into documents of their own before writes start failing at 16 MB.",
		})
	}
	return out
}

func positionalUnder(positional map[string]bool, path string) bool {
	for q := range positional {
		if strings.HasPrefix(q, path+".") || strings.HasPrefix(path, q+".") {
			return true
		}
	}
	return false
}

// versionNames are field names that hold a document's version number.
var versionNames = map[string]bool{"v": true, "_v": true, "version": true, "ver": true, "rev": true, "revision": true}

// versionPerDocument finds collections that keep each version of a record
// as a document of its own (schema 1 of the versioning design document):
// an integer version field and a field repeated across versions, the pair
// unique. Fetching the latest then needs a sort and a group per record.
func versionPerDocument(in *Input, p *profile, _ Options) []Finding {
	for _, vpath := range p.order {
		vs := p.paths[vpath]
		if !versionNames[strings.ToLower(vpath)] || vs.values == nil || vs.docs*10 < p.docs*9 {
			continue
		}
		for _, rpath := range p.order {
			rs := p.paths[rpath]
			if rpath == vpath || rpath == "_id" || rs.values == nil || rs.docs*10 < p.docs*9 || len(rs.values)*3 > p.docs*2 || len(rs.values) < 2 {
				continue
			}
			pairs := map[string]bool{}
			unique := true
			for _, d := range in.Sample {
				r, v := d.Lookup(rpath), d.Lookup(vpath)
				if _, ok := v.AsInt64OK(); !ok {
					unique = false
					break
				}
				k := string(r.Data) + "\x00" + string(v.Data)
				if pairs[k] {
					unique = false
					break
				}
				pairs[k] = true
			}
			if !unique {
				continue
			}
			return []Finding{{
				Kind: "versionPerDocument", Severity: Medium, Path: rpath + ", " + vpath,
				Summary: fmt.Sprintf("each version of a record is a document of its own: %d documents for %d values of %s, numbered by %s",
					p.docs, len(rs.values), rpath, vpath),
				Evidence:   []Fact{{"documents", p.docs}, {"records", len(rs.values)}, {"recordField", rpath}, {"versionField", vpath}},
				Suggestion: fmt.Sprintf("Keep one document per %s in a versioned collection (create with versioning: {enabled: true}): the latest version is read like any document, _v gives compare-and-swap updates, and every earlier version stays readable through $versions and as-of reads — no sort and $group per query.", rpath),
			}}
		}
	}
	return nil
}
