package advise

import (
	"fmt"
	"slices"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// keyField is one field of an index key pattern.
type keyField struct{ name, kind string }

func keyFields(key bsoncore.Document) []keyField {
	els, _ := key.Elements()
	out := make([]keyField, 0, len(els))
	for _, el := range els {
		v := el.Value()
		kind := "1"
		if s, ok := v.StringValueOK(); ok {
			kind = s
		} else if f, ok := v.AsFloat64OK(); ok && f < 0 {
			kind = "-1"
		}
		out = append(out, keyField{el.Key(), kind})
	}
	return out
}

func keyString(fs []keyField) string {
	parts := make([]string, len(fs))
	for i, f := range fs {
		k := f.kind
		if k != "1" && k != "-1" {
			k = fmt.Sprintf("%q", k)
		}
		parts[i] = fmt.Sprintf("%q: %s", f.name, k)
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// esrIndex is the index the ESR rule builds for a shape: equality fields,
// then sort fields, then range fields, each once.
func esrIndex(sh Shape) []keyField {
	var out []keyField
	seen := map[string]bool{}
	add := func(names []string) {
		for _, n := range names {
			if !seen[n] {
				seen[n] = true
				out = append(out, keyField{n, "1"})
			}
		}
	}
	add(sh.Equality)
	add(sh.Sort)
	add(sh.Range)
	return out
}

// served reports whether an existing index starts with the fields of want
// (in any order within the equality part, as the planner can use them).
func served(ixs []Index, want []keyField, equality int) bool {
	for _, ix := range ixs {
		have := keyFields(ix.Key)
		if len(have) < len(want) {
			continue
		}
		eqHave := make([]string, 0, equality)
		eqWant := make([]string, 0, equality)
		for i := range equality {
			eqHave = append(eqHave, have[i].name)
			eqWant = append(eqWant, want[i].name)
		}
		slices.Sort(eqHave)
		slices.Sort(eqWant)
		if !slices.Equal(eqHave, eqWant) {
			continue
		}
		ok := true
		for i := equality; i < len(want); i++ {
			if have[i].name != want[i].name {
				ok = false
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// unindexedShapes finds query shapes that examine far more than they
// return and names the index that would serve them.
func unindexedShapes(in *Input, _ *profile, o Options) []Finding {
	var out []Finding
	for _, sh := range in.Shapes {
		if sh.Runs == 0 {
			continue
		}
		ratio := float64(sh.Examined) / float64(max(sh.Returned, 1))
		if ratio < o.MinRatio {
			continue
		}
		want := esrIndex(sh)
		if len(want) == 0 || served(in.Indexes, want, len(dedupe(sh.Equality))) {
			continue
		}
		sev := Medium
		if sh.Runs >= 100 && ratio >= 1000 {
			sev = High
		}
		spec := keyString(want)
		out = append(out, Finding{
			Kind: "unindexedQuery", Severity: sev, Path: shapeString(sh),
			Summary: fmt.Sprintf("%s %s ran %d times examining %.0f documents or keys per result (plan %s)",
				sh.Command, shapeString(sh), sh.Runs, ratio, sh.Plan),
			Evidence: []Fact{{"runs", sh.Runs}, {"examined", sh.Examined}, {"returned", sh.Returned}, {"plan", sh.Plan}, {"index", spec}},
			Suggestion: fmt.Sprintf("db.%s.createIndex(%s) — equality fields, then sort fields, then range fields (the ESR rule); it would examine about one key per result.",
				collName(in.NS), spec),
		})
	}
	return out
}

func dedupe(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return slices.Compact(s)
}

func shapeString(sh Shape) string {
	var parts []string
	for _, f := range sh.Equality {
		parts = append(parts, f+": <eq>")
	}
	for _, f := range sh.Range {
		parts = append(parts, f+": <range>")
	}
	s := "{" + strings.Join(parts, ", ") + "}"
	if len(sh.Sort) > 0 {
		s += " sort {" + strings.Join(sh.Sort, ", ") + "}"
	}
	return s
}

func collName(ns string) string {
	if _, c, ok := strings.Cut(ns, "."); ok {
		return c
	}
	return ns
}

// indexUse finds indexes no query used and indexes another one makes
// redundant (a prefix of it, with the same directions).
func indexUse(in *Input, _ *profile, _ Options) []Finding {
	var out []Finding
	for _, ix := range in.Indexes {
		if ix.Name == "_id_" || ix.Unique || !ix.UsageKnown || ix.Ops > 0 {
			continue
		}
		out = append(out, Finding{
			Kind: "unusedIndex", Severity: Low, Path: ix.Name,
			Summary:    fmt.Sprintf("index %s %s served no query since the server started", ix.Name, keyString(keyFields(ix.Key))),
			Evidence:   []Fact{{"ops", ix.Ops}},
			Suggestion: fmt.Sprintf("If no query needs it (check over a full business cycle: $indexStats counts since the server started), drop it: db.%s.dropIndex(%q). Every write pays for every index.", collName(in.NS), ix.Name),
		})
	}
	for _, a := range in.Indexes {
		if a.Name == "_id_" || a.Unique {
			continue
		}
		fa := keyFields(a.Key)
		for _, b := range in.Indexes {
			fb := keyFields(b.Key)
			if a.Name == b.Name || b.Sparse || b.Partial || len(fb) <= len(fa) || !slices.Equal(fa, fb[:len(fa)]) {
				continue
			}
			out = append(out, Finding{
				Kind: "redundantIndex", Severity: Low, Path: a.Name,
				Summary:    fmt.Sprintf("index %s %s is a prefix of %s %s, which serves every query it serves", a.Name, keyString(fa), b.Name, keyString(fb)),
				Evidence:   []Fact{{"coveredBy", b.Name}},
				Suggestion: fmt.Sprintf("db.%s.dropIndex(%q): %s keeps serving those queries, and writes maintain one index less.", collName(in.NS), a.Name, b.Name),
			})
			break
		}
	}
	return out
}
