package agg

import (
	"strings"

	"github.com/cairndb/cairn/internal/mongoerr"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

func init() { registerStage("$fill", parseFill) }

// $fill is, as in MongoDB, sugar for a $setWindowFields whose outputs are
// {$locf: "$<field>"} or {$linearFill: "$<field>"} (the fields with a
// method, over partitionBy or partitionByFields and sortBy) followed by an
// $addFields of {<field>: {$ifNull: ["$<field>", <value>]}} (the fields
// with a value). The two stages it expands to run in that order.
type fillStage struct{ stages []stage }

// MongoDB's codes for $fill's specification.
const (
	codeFillOutputNotObject = mongoerr.FillOutputNotObject
	codeFillMethodAndValue  = mongoerr.FillMethodAndValue
	codeFillBadMethod       = mongoerr.FillBadMethod
	codeFillEmptyOutput     = mongoerr.FillEmptyOutput
	codeFillTwoPartitions   = mongoerr.FillTwoPartitions
)

func parseFill(arg bsoncore.Value, pc *parseContext) (stage, error) {
	if arg.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(mongoerr.FailedToParse, "The $fill stage specification must be an object, found %s", typeName(arg))
	}
	var sortBy, partitionBy, partitionByFields, output bsoncore.Value
	for _, f := range fieldsOf(arg) {
		switch f.Name {
		case "sortBy":
			sortBy = f.Value
		case "partitionBy":
			partitionBy = f.Value
		case "partitionByFields":
			partitionByFields = f.Value
		case "output":
			output = f.Value
		default:
			return nil, errorf(codeLookupUnknownField, "BSON field '$fill.%s' is an unknown field.", f.Name)
		}
	}
	if output.Type == 0 {
		return nil, errorf(codeIDLMissingField, "BSON field '$fill.output' is missing but a required field")
	}
	if output.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '$fill.output' is the wrong type '%s', expected type 'object'", typeName(output))
	}
	if sortBy.Type != 0 && sortBy.Type != bsoncore.TypeEmbeddedDocument {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '$fill.sortBy' is the wrong type '%s', expected type 'object'", typeName(sortBy))
	}
	outs := fieldsOf(output)
	if len(outs) == 0 {
		return nil, errorf(codeFillEmptyOutput, "The output field in '$fill' must contain an object with at least one element")
	}
	windowOut := bsoncore.NewDocumentBuilder()
	addFields := bsoncore.NewDocumentBuilder()
	needWindow, needAdd := false, false
	for _, o := range outs {
		if o.Value.Type != bsoncore.TypeEmbeddedDocument {
			return nil, errorf(codeFillOutputNotObject, "Each fill output specification must be an object with exactly one field")
		}
		var method, value bsoncore.Value
		for _, f := range fieldsOf(o.Value) {
			switch f.Name {
			case "method":
				method = f.Value
			case "value":
				value = f.Value
			default:
				return nil, errorf(codeLookupUnknownField, "BSON field '$fill.%s' is an unknown field.", f.Name)
			}
		}
		if method.Type != 0 {
			if value.Type != 0 {
				return nil, errorf(codeFillMethodAndValue, "Each fill output specification must have exactly one of 'method' or 'value' fields, not both")
			}
			if method.Type != bsoncore.TypeString {
				return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '$fill.method' is the wrong type '%s', expected type 'string'", typeName(method))
			}
			op := ""
			switch method.StringValue() {
			case "locf":
				op = "$locf"
			case "linear":
				op = "$linearFill"
			default:
				return nil, errorf(codeFillBadMethod, "Method must be either locf or linear")
			}
			windowOut.AppendDocument(o.Name, bsoncore.NewDocumentBuilder().AppendString(op, "$"+o.Name).Build())
			needWindow = true
		}
		if value.Type != 0 {
			ifNull := bsoncore.NewArrayBuilder().AppendString("$" + o.Name).AppendValue(value).Build()
			addFields.AppendDocument(o.Name, bsoncore.NewDocumentBuilder().AppendArray("$ifNull", ifNull).Build())
			needAdd = true
		}
	}
	if partitionBy.Type != 0 && partitionByFields.Type != 0 {
		return nil, errorf(codeFillTwoPartitions, "Maximum one of 'partitionBy' and 'partitionByFields can be specified in '$fill'")
	}
	fs := &fillStage{}
	if needWindow {
		swf := bsoncore.NewDocumentBuilder().AppendDocument("output", windowOut.Build())
		if sortBy.Type != 0 {
			swf.AppendValue("sortBy", sortBy)
		}
		switch {
		case partitionBy.Type == bsoncore.TypeString || partitionBy.Type == bsoncore.TypeEmbeddedDocument:
			swf.AppendValue("partitionBy", partitionBy)
		case partitionBy.Type != 0:
			return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '$fill.partitionBy' is the wrong type '%s', expected types '[string, object]'", typeName(partitionBy))
		case partitionByFields.Type != 0:
			spec, err := partitionFieldsSpec(partitionByFields, "$fill")
			if err != nil {
				return nil, err
			}
			swf.AppendDocument("partitionBy", spec)
		}
		s, err := parseSetWindowFields(docValue(swf.Build()), pc)
		if err != nil {
			return nil, err
		}
		fs.stages = append(fs.stages, s)
	}
	if needAdd {
		s, err := parseAddFields("$addFields")(docValue(addFields.Build()), pc)
		if err != nil {
			return nil, err
		}
		fs.stages = append(fs.stages, s)
	}
	return fs, nil
}

// partitionFieldsSpec turns partitionByFields ["a", "b.c"] into the
// partition expression {a: "$a", "b.c": "$b.c"}.
func partitionFieldsSpec(v bsoncore.Value, stageName string) (bsoncore.Document, error) {
	if v.Type != bsoncore.TypeArray {
		return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '%s.partitionByFields' is the wrong type '%s', expected type 'array'", stageName, typeName(v))
	}
	b := bsoncore.NewDocumentBuilder()
	for _, f := range arrayValues(v) {
		if f.Type != bsoncore.TypeString {
			return nil, mongoerr.New(mongoerr.TypeMismatch, "BSON field '%s.partitionByFields' is the wrong type '%s', expected type 'string'", stageName, typeName(f))
		}
		name := f.StringValue()
		if _, err := splitPath(name); err != nil {
			return nil, err
		}
		if strings.Contains(name, ".") {
			// An object literal cannot have dotted keys: nest them.
			b.AppendString(strings.ReplaceAll(name, ".", "_"), "$"+name)
			continue
		}
		b.AppendString(name, "$"+name)
	}
	return b.Build(), nil
}

func (f *fillStage) open(rc *runContext, in Source) (Source, error) {
	return runStages(rc, f.stages, in)
}
