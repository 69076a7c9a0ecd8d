package expr

import (
	"github.com/cairndb/cairn/internal/mongoerr"
	"strings"

	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// Field access by name, for names a field path cannot spell (with '.' or
// a leading '$'): $getField reads a field, $setField adds or replaces one
// (a missing value, $$REMOVE included, removes it), $unsetField removes
// one. None of them traverses dotted paths: "a.b" is one field name.
//
// $getField's field may be any expression that evaluates to a string (as
// since MongoDB 7.2); $setField's and $unsetField's must be a constant
// string, as in MongoDB 7.0 and 8.0.

func init() {
	register("$getField", parseGetField)
	register("$setField", parseSetField("$setField", true))
	register("$unsetField", parseSetField("$unsetField", false))
}

const (
	codeGetFieldUnknownArg   = mongoerr.GetFieldUnknownArg
	codeGetFieldMissingField = mongoerr.GetFieldMissingField
	codeGetFieldMissingInput = mongoerr.GetFieldMissingInput
	codeGetFieldFieldType    = mongoerr.GetFieldFieldType
	codeSetFieldNotObject    = mongoerr.SetFieldNotObject
	codeSetFieldUnknownArg   = mongoerr.SetFieldUnknownArg
	codeSetFieldMissingField = mongoerr.SetFieldMissingField
	codeSetFieldMissingValue = mongoerr.SetFieldMissingValue
	codeSetFieldInputType    = mongoerr.SetFieldInputType
	codeSetFieldNotConstant  = mongoerr.SetFieldNotConstant
	codeSetFieldFieldType    = mongoerr.SetFieldFieldType
	codeSetFieldFieldPath    = mongoerr.SetFieldFieldPath
	codeSetFieldMissingInput = mongoerr.SetFieldMissingInput
)

type getFieldExpr struct{ field, input Expr }

// parseGetField accepts {field, input} and the shorthand {$getField:
// <field>}, which reads from $$CURRENT.
func parseGetField(arg bsoncore.Value, s *Scope) (Expr, error) {
	if arg.Type == bsoncore.TypeEmbeddedDocument {
		it := elemsOf(arg)
		if k, _, ok := it.next(); !ok || !strings.HasPrefix(string(k), "$") {
			return parseGetFieldObject(arg, s)
		}
	}
	field, err := ParseIn(arg, s)
	if err != nil {
		return nil, err
	}
	return getFieldExpr{field: field, input: fieldPath{variable: "CURRENT"}}, nil
}

// getFieldArgs is $getField's object form (parseGetField has seen an
// object, so notObject never applies).
var getFieldArgs = namedArgs{op: "$getField", names: []string{"field", "input"},
	unknown: codeGetFieldUnknownArg, unknownMsg: foundUnknownArg,
	required: []requiredArg{
		{"field", codeGetFieldMissingField, "%s requires 'field' to be specified"},
		{"input", codeGetFieldMissingInput, "%s requires 'input' to be specified"},
	}}

func parseGetFieldObject(arg bsoncore.Value, s *Scope) (Expr, error) {
	args, err := getFieldArgs.parse(arg, s)
	if err != nil {
		return nil, err
	}
	return getFieldExpr{field: args["field"], input: args["input"]}, nil
}

func (g getFieldExpr) Eval(ctx *Context) (bsoncore.Value, error) {
	fv, err := g.field.Eval(ctx)
	if err != nil {
		return Missing, err
	}
	name, ok := stringOf(fv)
	if !ok || fv.Type != bsoncore.TypeString {
		return Missing, errorf(codeGetFieldFieldType, "$getField requires 'field' to evaluate to type String, but got %s", TypeName(fv))
	}
	in, err := g.input.Eval(ctx)
	if err != nil {
		return Missing, err
	}
	if IsNullish(in) {
		return Null, nil
	}
	if in.Type != bsoncore.TypeEmbeddedDocument {
		return Missing, nil
	}
	return field(in, name), nil
}

type setFieldExpr struct {
	name         string
	input, value Expr // value is nil for $unsetField
}

func parseSetField(op string, set bool) parser {
	names := []string{"field", "input"}
	if set {
		names = append(names, "value")
	}
	spec := namedArgs{op: op, names: names,
		notObject: codeSetFieldNotObject, notObjMsg: "%s only supports an object as its argument, found %s",
		unknown: codeSetFieldUnknownArg, unknownMsg: foundUnknownArg}
	return func(arg bsoncore.Value, s *Scope) (Expr, error) {
		args, err := spec.parse(arg, s)
		if err != nil {
			return nil, err
		}
		switch {
		case args["field"] == nil:
			return nil, errorf(codeSetFieldMissingField, "%s requires 'field' to be specified", op)
		case set && args["value"] == nil:
			return nil, errorf(codeSetFieldMissingValue, "%s requires 'value' to be specified", op)
		case args["input"] == nil:
			return nil, errorf(codeSetFieldMissingInput, "%s requires 'input' to be specified", op)
		}
		var name string
		switch f := args["field"].(type) {
		case fieldPath:
			raw := field(arg, "field")
			str, _ := stringOf(raw)
			return nil, errorf(codeSetFieldFieldPath, "A field path reference which is not allowed in this context. Did you mean {$literal: '%s'}?", str)
		case constant:
			var ok bool
			if name, ok = stringOf(f.v); !ok || f.v.Type != bsoncore.TypeString {
				return nil, errorf(codeSetFieldFieldType, "%s requires 'field' to evaluate to type String, but got %s", op, TypeName(f.v))
			}
		default:
			return nil, errorf(codeSetFieldNotConstant, "%s requires 'field' to evaluate to a constant, but got a non-constant argument", op)
		}
		return setFieldExpr{name: name, input: args["input"], value: args["value"]}, nil
	}
}

func (e setFieldExpr) Eval(ctx *Context) (bsoncore.Value, error) {
	op := "$setField"
	if e.value == nil {
		op = "$unsetField"
	}
	in, err := e.input.Eval(ctx)
	if err != nil {
		return Missing, err
	}
	if IsNullish(in) {
		return Null, nil
	}
	if in.Type != bsoncore.TypeEmbeddedDocument {
		return Missing, errorf(codeSetFieldInputType, "%s requires 'input' to evaluate to type Object", op)
	}
	v := Missing
	if e.value != nil {
		if v, err = e.value.Eval(ctx); err != nil {
			return Missing, err
		}
	}
	idx, buf := bsoncore.AppendDocumentStart(nil)
	done := false
	it := elemsOf(in)
	for {
		k, fv, ok := it.next()
		if !ok {
			break
		}
		if string(k) == e.name {
			if !done && v.Type != 0 {
				buf = bsoncore.AppendValueElement(buf, e.name, v)
			}
			done = true
			continue
		}
		buf = bsoncore.AppendValueElement(buf, string(k), fv)
	}
	if !done && v.Type != 0 {
		buf = bsoncore.AppendValueElement(buf, e.name, v)
	}
	buf, _ = bsoncore.AppendDocumentEnd(buf, idx)
	return bsoncore.Value{Type: bsoncore.TypeEmbeddedDocument, Data: buf}, nil
}
