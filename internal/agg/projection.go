package agg

import (
	"strings"

	"github.com/cairndb/cairn/internal/expr"
	ptree "github.com/cairndb/cairn/internal/projection"
	"go.mongodb.org/mongo-driver/v2/x/bsonx/bsoncore"
)

// projection is the tree $project, $addFields/$set and $unset apply: the
// shared projection tree (package projection, which states its semantics
// and what find's projection does differently), parsed with the stages'
// rules here.
type projection struct{ tree *ptree.Tree }

// apply projects one document.
func (p *projection) apply(doc bsoncore.Document, ctx *expr.Context) (bsoncore.Document, error) {
	return p.tree.Apply(doc, ctx)
}

// projParser holds the state of parsing one projection specification.
type projParser struct {
	scope      *expr.Scope
	modes      ptree.Modes
	idExcluded bool
}

func newProjParser(stage string, scope *expr.Scope, mode ptree.Mode) *projParser {
	return &projParser{scope: scope, modes: ptree.Modes{Mode: mode, Prefix: "Invalid " + stage + " :: caused by :: "}}
}

// parseProjectSpec parses $project's argument.
func parseProjectSpec(spec bsoncore.Value, scope *expr.Scope) (*projection, error) {
	pp := newProjParser("$project", scope, ptree.Unknown)
	root := ptree.NewInner()
	for _, f := range fieldsOf(spec) {
		if err := pp.element(root, "", f.Name, f.Value); err != nil {
			return nil, err
		}
	}
	mode := pp.modes.Mode
	if mode == ptree.Unknown {
		mode = ptree.Inclusion
		if pp.idExcluded {
			mode = ptree.Exclusion
		}
	}
	if mode == ptree.Inclusion && root.Child("_id") == nil {
		if err := root.Add([]string{"_id"}, &ptree.Node{Kind: ptree.Include}); err != nil {
			return nil, err
		}
	}
	return &projection{ptree.New(root, mode)}, nil
}

// parseAddFieldsSpec parses $addFields' (and $set's) argument.
func parseAddFieldsSpec(spec bsoncore.Value, scope *expr.Scope) (*projection, error) {
	pp := newProjParser("$addFields", scope, ptree.ComputedOnly)
	root := ptree.NewInner()
	for _, f := range fieldsOf(spec) {
		if err := pp.element(root, "", f.Name, f.Value); err != nil {
			return nil, err
		}
	}
	return &projection{ptree.New(root, ptree.ComputedOnly)}, nil
}

// newExclusion is an exclusion projection of paths ($unset).
func newExclusion(paths [][]string) (*projection, error) {
	root := ptree.NewInner()
	for _, p := range paths {
		if err := root.Add(p, &ptree.Node{Kind: ptree.Exclude}); err != nil {
			return nil, err
		}
	}
	return &projection{ptree.New(root, ptree.Exclusion)}, nil
}

// element parses one field of a specification at path prefix.
func (pp *projParser) element(parent *ptree.Node, prefix, name string, v bsoncore.Value) error {
	parts, err := splitPath(name)
	if err != nil {
		return err
	}
	full := name
	if prefix != "" {
		full = prefix + "." + name
	}
	computedOnly := pp.modes.Mode == ptree.ComputedOnly
	switch {
	case computedOnly && (v.Type == bsoncore.TypeBoolean || isNumber(v)):
		return parent.Add(parts, &ptree.Node{Kind: ptree.Computed, Expr: constExpr(v)})
	case v.Type == bsoncore.TypeBoolean || isNumber(v):
		include := expr.Truthy(v)
		if prefix == "" && name == "_id" {
			if include {
				return parent.Add(parts, &ptree.Node{Kind: ptree.Include})
			}
			pp.idExcluded = true
			return parent.Add(parts, &ptree.Node{Kind: ptree.Exclude})
		}
		if include {
			if err := pp.modes.Include(full); err != nil {
				return err
			}
			return parent.Add(parts, &ptree.Node{Kind: ptree.Include})
		}
		if err := pp.modes.Exclude(full); err != nil {
			return err
		}
		return parent.Add(parts, &ptree.Node{Kind: ptree.Exclude})
	case v.Type == bsoncore.TypeEmbeddedDocument:
		fs := fieldsOf(v)
		if len(fs) == 0 {
			if computedOnly {
				return parent.Add(parts, &ptree.Node{Kind: ptree.Computed, Expr: constExpr(v)})
			}
			return ptree.EmptySubProjection(pp.modes.Prefix)
		}
		if strings.HasPrefix(fs[0].Name, "$") {
			return pp.computed(parent, parts, v, true)
		}
		node, err := parent.InnerAt(parts, parts)
		if err != nil {
			return err
		}
		for _, f := range fs {
			if err := pp.element(node, full, f.Name, f.Value); err != nil {
				return err
			}
		}
		return nil
	}
	return pp.computed(parent, parts, v, false)
}

func (pp *projParser) computed(parent *ptree.Node, parts []string, v bsoncore.Value, isOperator bool) error {
	if err := pp.modes.Compute(v.String(), isOperator); err != nil {
		return err
	}
	e, err := expr.ParseIn(v, pp.scope)
	if err != nil {
		return err
	}
	return parent.Add(parts, &ptree.Node{Kind: ptree.Computed, Expr: e})
}

// constExpr is an expression whose value is v.
func constExpr(v bsoncore.Value) expr.Expr {
	e, err := expr.Parse(literal(v))
	if err != nil {
		return nil
	}
	return e
}

// literal wraps v as {$literal: v}.
func literal(v bsoncore.Value) bsoncore.Value {
	return docValue(bsoncore.NewDocumentBuilder().AppendValue("$literal", v).Build())
}
