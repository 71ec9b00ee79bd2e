// Package spec builds hclspec schema trees, the way a plugin tells Nomad the
// shape of its agent config and task config. It only constructs messages; the
// wire types live in plugin/proto/hclspec and the decoding of user config is
// Nomad's job (or the test host's).
//
// Names of direct children of an Object may be left empty: the object's key
// names them. Specs inside Default are not named implicitly, so Default's
// Attr arguments must carry a name.
package spec

import (
	"github.com/llmgw/llmgw/plugin/proto/hclspec"
)

// Object is the usual root: each key names an attribute or block.
func Object(attrs map[string]*hclspec.Spec) *hclspec.Spec {
	return &hclspec.Spec{Block: &hclspec.Spec_Object{Object: &hclspec.Object{Attributes: attrs}}}
}

// Attr is an attribute of the HCL type expression typ (string, number, bool,
// list(string), map(string), ...). An empty typ is rejected by Nomad.
func Attr(name, typ string, required bool) *hclspec.Spec {
	return &hclspec.Spec{Block: &hclspec.Spec_Attr{Attr: &hclspec.Attr{Name: name, Type: typ, Required: required}}}
}

// Block is a single nested block; absent, it decodes to null.
func Block(name string, required bool, nested *hclspec.Spec) *hclspec.Spec {
	return &hclspec.Spec{Block: &hclspec.Spec_BlockValue{BlockValue: &hclspec.Block{Name: name, Required: required, Nested: nested}}}
}

// BlockAttrs is a block whose attributes form a map of element type typ.
func BlockAttrs(name, typ string, required bool) *hclspec.Spec {
	return &hclspec.Spec{Block: &hclspec.Spec_BlockAttrs{BlockAttrs: &hclspec.BlockAttrs{Name: name, Type: typ, Required: required}}}
}

// BlockList is a repeated block decoded as a list (empty when absent);
// max 0 means unlimited.
func BlockList(name string, min, max uint64, nested *hclspec.Spec) *hclspec.Spec {
	return &hclspec.Spec{Block: &hclspec.Spec_BlockList{BlockList: &hclspec.BlockList{Name: name, MinItems: min, MaxItems: max, Nested: nested}}}
}

// BlockSet is a repeated block decoded as a set.
func BlockSet(name string, min, max uint64, nested *hclspec.Spec) *hclspec.Spec {
	return &hclspec.Spec{Block: &hclspec.Spec_BlockSet{BlockSet: &hclspec.BlockSet{Name: name, MinItems: min, MaxItems: max, Nested: nested}}}
}

// BlockMap is a labelled repeated block decoded as a map keyed by label.
func BlockMap(name string, labels []string, nested *hclspec.Spec) *hclspec.Spec {
	return &hclspec.Spec{Block: &hclspec.Spec_BlockMap{BlockMap: &hclspec.BlockMap{Name: name, Labels: labels, Nested: nested}}}
}

// Default yields primary, or dflt when primary is null.
func Default(primary, dflt *hclspec.Spec) *hclspec.Spec {
	return &hclspec.Spec{Block: &hclspec.Spec_Default{Default: &hclspec.Default{Primary: primary, Default: dflt}}}
}

// Literal is a constant written as an HCL expression: strings need their own
// quotes (`"\"vllm\""`), numbers and bools do not.
func Literal(expr string) *hclspec.Spec {
	return &hclspec.Spec{Block: &hclspec.Spec_Literal{Literal: &hclspec.Literal{Value: expr}}}
}

// Array is a fixed list of specs decoded as a tuple.
func Array(values ...*hclspec.Spec) *hclspec.Spec {
	return &hclspec.Spec{Block: &hclspec.Spec_Array{Array: &hclspec.Array{Values: values}}}
}

// Optional is an attribute with a default: Default(Attr(name, typ), Literal(expr)).
func Optional(name, typ, expr string) *hclspec.Spec {
	return Default(Attr(name, typ, false), Literal(expr))
}
