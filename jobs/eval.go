package jobs

import (
	"strings"

	"maps"
	"slices"

	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"
)

// placeholders builds the evaluation context a jobspec's expressions see
// here. Nomad interpolates ${NOMAD_*}, ${attr.*}, ${meta.*}, ${env["X"]} and
// the like on the client, when the allocation exists, so each referenced
// variable stands for itself: the string "${name}". Input variables and
// locals (var.*, local.*) are unknown; known is false when any is used, and
// a value that depends on them can be checked only for its type.
func placeholders(traversals []hcl.Traversal) (ctx *hcl.EvalContext, known bool) {
	roots := map[string]*pathNode{}
	known = true
	for _, t := range traversals {
		root := t.RootName()
		if root == "var" || root == "local" {
			known = false
			continue
		}
		n, ok := roots[root]
		if !ok {
			n = &pathNode{}
			roots[root] = n
		}
		for _, step := range t[1:] {
			name, ok := stepName(step)
			if !ok {
				break
			}
			n = n.child(name)
		}
	}
	ctx = &hcl.EvalContext{Variables: map[string]cty.Value{
		"var":   cty.DynamicVal,
		"local": cty.DynamicVal,
	}}
	for name, n := range roots {
		ctx.Variables[name] = n.value(name)
	}
	return ctx, known
}

// pathNode is one step of the variable paths an expression uses.
type pathNode struct {
	children map[string]*pathNode
}

func (n *pathNode) child(name string) *pathNode {
	if n.children == nil {
		n.children = map[string]*pathNode{}
	}
	c, ok := n.children[name]
	if !ok {
		c = &pathNode{}
		n.children[name] = c
	}
	return c
}

// value is "${path}" for a leaf, else an object of the children.
func (n *pathNode) value(path string) cty.Value {
	if len(n.children) == 0 {
		return cty.StringVal("${" + path + "}")
	}
	names := slices.Sorted(maps.Keys(n.children))
	attrs := make(map[string]cty.Value, len(names))
	for _, k := range names {
		attrs[k] = n.children[k].value(path + "." + k)
	}
	return cty.ObjectVal(attrs)
}

// stepName is the attribute name a traversal step selects: an attribute, or
// an index by a string key (env["HOME"]).
func stepName(step hcl.Traverser) (string, bool) {
	switch s := step.(type) {
	case hcl.TraverseAttr:
		return s.Name, true
	case hcl.TraverseIndex:
		if s.Key.IsKnown() && !s.Key.IsNull() && s.Key.Type() == cty.String && !strings.ContainsAny(s.Key.AsString(), "{}") {
			return s.Key.AsString(), true
		}
	}
	return "", false
}
