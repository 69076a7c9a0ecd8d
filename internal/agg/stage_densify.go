package agg

import (
	"sort"

	"github.com/cairndb/cairn/internal/expr"
	"github.com/cairndb/cairn/internal/keystring"
	"github.com/cairndb/cairn/internal/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func init() { registerStage("$densify", parseDensify) }

// densifyStage is $densify: within each partition (the values of
// partitionByFields), documents are added at every step of a grid on
// field where none exists. The grid starts at the range's lower bound:
// the smallest value of all documents ("full"), of the partition
// ("partition"), or the given lower bound ([lo, hi], generating below hi
// only); it advances by step, or by step units for dates, each value from
// the previous one as MongoDB's generator does. Values off the grid keep
// their documents and do not move it. Generated documents hold only the
// partition fields and field. Documents whose field is null or missing
// pass through. As MongoDB, which sorts first, the output is sorted by
// the partition fields and field ("full" bounds sort by field alone, the
// partitions' documents interleaved by value).
type densifyStage struct {
	field      []string
	partitions [][]string
	step       bsoncore.Value
	unit       string
	bounds     string // "full", "partition" or "" (explicit lo, hi)
	lo, hi     bsoncore.Value
}

// MongoDB's codes for $densify.
const (
	codeDensifyStep          = mongoerr.DensifyStep
	codeDensifyBoundsOrder   = mongoerr.DensifyBoundsOrder
	codeDensifyBoundsCount   = mongoerr.DensifyBoundsCount
	codeDensifyBoundsType    = mongoerr.DensifyBoundsType
	codeDensifyBoundsMixed   = mongoerr.DensifyBoundsMixed
	codeDensifyPartitionNone = mongoerr.DensifyPartitionNone
	codeDensifyDatesNoUnit   = mongoerr.DensifyDatesNoUnit
	codeDensifyBoundsString  = mongoerr.DensifyBoundsString
	codeDensifyBoundsKind    = mongoerr.DensifyBoundsKind
	codeDensifyStepWhole     = mongoerr.DensifyStepWhole
	codeDensifyValueType     = mongoerr.DensifyValueType
	codeDensifyUnitMismatch  = mongoerr.DensifyUnitMismatch
	codeDensifyTooMany       = mongoerr.DensifyTooMany
)

// maxDensifyDocs is MongoDB's internalQueryMaxAllowedDensifyDocs.
const maxDensifyDocs = 500000

func parseDensify(arg bsoncore.Value, _ *parseContext) (stage, error) {
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(mongoerr.FailedToParse, "The $densify stage specification must be an object, found %s", typeName(arg))
	}
	var field, partitions, rng bsoncore.Value
	for _, f := range fieldsOf(arg) {
		switch f.Name {
		case "field":
			field = f.Value
		case "partitionByFields":
			partitions = f.Value
		case "range":
			rng = f.Value
		default:
			return nil, errorf(codeLookupUnknownField, "BSON field '$densify.%s' is an unknown field.", f.Name)
		}
	}
	if field.Type == 0 {
		return nil, errorf(codeIDLMissingField, "BSON field '$densify.field' is missing but a required field")
	}
	if rng.Type == 0 {
		return nil, errorf(codeIDLMissingField, "BSON field '$densify.range' is missing but a required field")
	}
	if field.Type != bsoncore.TypeString {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '$densify.field' is the wrong type '%s', expected type 'string'", typeName(field))
	}
	if rng.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '$densify.range' is the wrong type '%s', expected type 'object'", typeName(rng))
	}
	d := &densifyStage{}
	var err error
	if d.field, err = splitPath(field.StringValue()); err != nil {
		return nil, err
	}
	if partitions.Type != 0 {
		if partitions.Type != bsoncore.TypeArray {
			return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '$densify.partitionByFields' is the wrong type '%s', expected type 'array'", typeName(partitions))
		}
		for _, p := range arrayValues(partitions) {
			if p.Type != bsoncore.TypeString {
				return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '$densify.partitionByFields' is the wrong type '%s', expected type 'string'", typeName(p))
			}
			parts, err := splitPath(p.StringValue())
			if err != nil {
				return nil, err
			}
			d.partitions = append(d.partitions, parts)
		}
	}
	if err := d.parseRange(rng); err != nil {
		return nil, err
	}
	if d.bounds == "partition" && len(d.partitions) == 0 {
		return nil, errorf(codeDensifyPartitionNone, "One cannot specify the bounds as 'partition' without specifying a non-empty array of partitionByFields. You may have meant to specify 'full' bounds.")
	}
	return d, nil
}

func (d *densifyStage) parseRange(rng bsoncore.Value) error {
	var step, unit, bounds bsoncore.Value
	for _, f := range fieldsOf(rng) {
		switch f.Name {
		case "step":
			step = f.Value
		case "unit":
			unit = f.Value
		case "bounds":
			bounds = f.Value
		default:
			return errorf(codeLookupUnknownField, "BSON field '$densify.range.%s' is an unknown field.", f.Name)
		}
	}
	if step.Type == 0 {
		return errorf(codeIDLMissingField, "BSON field '$densify.range.step' is missing but a required field")
	}
	if bounds.Type == 0 {
		return errorf(codeIDLMissingField, "BSON field '$densify.range.bounds' is missing but a required field")
	}
	if !isNumber(step) {
		return mongoerr.New(mongoerr.TypeMismatch, "BSON field '$densify.range.step' is the wrong type '%s', expected types '[int, decimal, double, long']", typeName(step))
	}
	if expr.Compare(step, expr.Int32(0)) <= 0 {
		return errorf(codeDensifyStep, "The step parameter in a range statement must be a strictly positive numeric value")
	}
	d.step = step
	if unit.Type != 0 {
		if unit.Type != bsoncore.TypeString {
			return mongoerr.New(mongoerr.TypeMismatch, "BSON field '$densify.range.unit' is the wrong type '%s', expected type 'string'", typeName(unit))
		}
		if _, ok := expr.Integral64(step); !ok {
			return errorf(codeDensifyStepWhole, "The step parameter in a range statement must be a whole number when densifying a date range")
		}
		if _, ok := timeUnits[unit.StringValue()]; !ok {
			return mongoerr.New(mongoerr.FailedToParse, "unknown time unit value: %s", unit.StringValue())
		}
		d.unit = unit.StringValue()
	}
	switch bounds.Type {
	case bsoncore.TypeString:
		switch bounds.StringValue() {
		case "full", "partition":
			d.bounds = bounds.StringValue()
			return nil
		}
		return errorf(codeDensifyBoundsString, "Bounds string must either be 'full' or 'partition'")
	case bsoncore.TypeArray:
		vals := arrayValues(bounds)
		if len(vals) != 2 {
			return errorf(codeDensifyBoundsCount, "A bounding array in a range statement must have exactly two elements")
		}
		if expr.Compare(vals[0], vals[1]) > 0 {
			return errorf(codeDensifyBoundsOrder, "A bounding array must be an ascending array of either two dates or two numbers")
		}
		switch {
		case isNumber(vals[0]):
			if !isNumber(vals[1]) {
				return errorf(codeDensifyBoundsMixed, "A bounding array must contain either both dates or both numeric types")
			}
			if d.unit != "" {
				return errorf(codeDensifyUnitMismatch, "Numeric bounds may not have unit parameter.")
			}
		case vals[0].Type == bsoncore.TypeDateTime:
			if vals[1].Type != bsoncore.TypeDateTime {
				return errorf(codeDensifyBoundsMixed, "A bounding array must contain either both dates or both numeric types")
			}
			if d.unit == "" {
				return errorf(codeDensifyDatesNoUnit, "A bounding array of dates must specify a unit")
			}
		default:
			return errorf(codeDensifyBoundsKind, "Explicit bounds must be numeric or dates")
		}
		d.lo, d.hi = vals[0], vals[1]
		return nil
	}
	return errorf(codeDensifyBoundsType, "The bounds in a range statement must be the string 'full', 'partition', or an ascending array of two numbers or two dates")
}

// densifyDoc is a document with its densify value and partition.
type densifyDoc struct {
	doc  bsoncore.Document
	v    bsoncore.Value // Missing when null or missing
	part int            // partition index
}

func (d *densifyStage) open(rc *runContext, in Source) (Source, error) {
	return blockingSource(in, func() ([]bsoncore.Document, error) { return d.run(rc, in) }), nil
}

func (d *densifyStage) run(rc *runContext, in Source) ([]bsoncore.Document, error) {
	docs, err := bufferAll(rc, in, "$densify")
	if err != nil {
		return nil, err
	}
	var (
		entries   []densifyDoc
		partKeys  []bsoncore.Value // partition documents, by index
		partIndex = map[string]int{}
		gmin      bsoncore.Value
		gmax      bsoncore.Value
	)
	for _, doc := range docs {
		e := densifyDoc{doc: doc}
		v := lookupPath(docValue(doc), d.field)
		if !expr.IsNullish(v) {
			if err := d.checkValue(v); err != nil {
				return nil, err
			}
			e.v = v
			if gmin.Type == 0 || expr.Compare(v, gmin) < 0 {
				gmin = v
			}
			if gmax.Type == 0 || expr.Compare(v, gmax) > 0 {
				gmax = v
			}
		}
		key := docValue(emptyDoc)
		for _, p := range d.partitions {
			if pv := lookupPath(docValue(doc), p); pv.Type != 0 {
				key = setPath(key, p, pv)
			}
		}
		ks := string(keystring.AppendCollated(nil, key, rc.opts.keyCollator())) // partitions group by the pipeline's collation
		i, ok := partIndex[ks]
		if !ok {
			i = len(partKeys)
			partIndex[ks] = i
			partKeys = append(partKeys, key)
		}
		e.part = i
		entries = append(entries, e)
	}
	// Partitions in partition-value order, documents by value within.
	rank := make([]int, len(partKeys))
	order := make([]int, len(partKeys))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool {
		return expr.CompareWith(partKeys[order[a]], partKeys[order[b]], rc.opts.collator()) < 0
	})
	for r, i := range order {
		rank[i] = r
	}
	byValue := func(a, b densifyDoc) int { return expr.Compare(valueOrNull(a.v), valueOrNull(b.v)) }
	sort.SliceStable(entries, func(a, b int) bool {
		if d.bounds != "full" && rank[entries[a].part] != rank[entries[b].part] {
			return rank[entries[a].part] < rank[entries[b].part]
		}
		return byValue(entries[a], entries[b]) < 0
	})
	// Each partition's documents, merged with its generated ones.
	perPart := make([][]densifyDoc, len(partKeys))
	for _, e := range entries {
		perPart[e.part] = append(perPart[e.part], e)
	}
	generated := 0
	merged := make([][]densifyDoc, len(partKeys))
	for p, list := range perPart {
		lo, hi, inclusive := d.lo, d.hi, false
		switch d.bounds {
		case "full":
			lo, hi, inclusive = gmin, gmax, true
		case "partition":
			lo, hi, inclusive = expr.Missing, expr.Missing, true
			for _, e := range list {
				if e.v.Type != 0 {
					if lo.Type == 0 {
						lo = e.v
					}
					hi = e.v
				}
			}
		}
		var out []densifyDoc
		i := 0
		if lo.Type != 0 {
			for v := lo; expr.Compare(v, hi) < 0 || inclusive && expr.Compare(v, hi) == 0; {
				for i < len(list) && (list[i].v.Type == 0 || expr.Compare(list[i].v, v) < 0) {
					out = append(out, list[i])
					i++
				}
				if i >= len(list) || expr.Compare(list[i].v, v) != 0 {
					if generated++; generated > maxDensifyDocs {
						return nil, errorf(codeDensifyTooMany, "Generated %d documents in $densify, which is over the limit of %d. Increase the 'internalQueryMaxAllowedDensifyDocs' parameter to allow more generated documents", generated, maxDensifyDocs)
					}
					nd := setPath(partKeys[p], d.field, v)
					out = append(out, densifyDoc{doc: nd.Data, v: v, part: p})
				}
				next, err := d.increment(v)
				if err != nil {
					return nil, err
				}
				if expr.Compare(next, v) <= 0 {
					// A step lost to rounding (or an overflowing date)
					// would generate forever: over the limit.
					return nil, errorf(codeDensifyTooMany, "$densify cannot advance past %s by its step: it would generate more than %d documents", printValue(v), maxDensifyDocs)
				}
				v = next
			}
		}
		merged[p] = append(out, list[i:]...)
	}
	result := make([]bsoncore.Document, 0, len(entries)+generated)
	if d.bounds != "full" {
		for _, p := range order {
			for _, e := range merged[p] {
				result = append(result, e.doc)
			}
		}
		return result, nil
	}
	var all []densifyDoc
	for _, p := range order {
		all = append(all, merged[p]...)
	}
	sort.SliceStable(all, func(a, b int) bool { return byValue(all[a], all[b]) < 0 })
	for _, e := range all {
		result = append(result, e.doc)
	}
	return result, nil
}

func valueOrNull(v bsoncore.Value) bsoncore.Value {
	if v.Type == 0 {
		return expr.Null
	}
	return v
}

// checkValue refuses a field value $densify cannot step: not a number or
// a date (5733201), or a date without a unit / a number with one
// (6053600).
func (d *densifyStage) checkValue(v bsoncore.Value) error {
	switch {
	case isNumber(v):
		if d.unit != "" {
			return errorf(codeDensifyUnitMismatch, "Encountered non-date value in $densify with a unit")
		}
	case v.Type == bsoncore.TypeDateTime:
		if d.unit == "" {
			return errorf(codeDensifyUnitMismatch, "Encountered date value in $densify without a unit")
		}
	default:
		return errorf(codeDensifyValueType, "Densify field type must be numeric or a date")
	}
	return nil
}

// increment is v plus one step.
func (d *densifyStage) increment(v bsoncore.Value) (bsoncore.Value, error) {
	if d.unit != "" {
		n, _ := expr.Integral64(d.step)
		ms, err := expr.AddDateUnits(v.DateTime(), d.unit, n)
		return expr.Date(ms), err
	}
	return arith("$add", v, d.step)
}
