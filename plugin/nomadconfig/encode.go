// Package nomadconfig decodes user configuration with a plugin's hclspec
// schema the way Nomad does before it sends a config to a plugin: HCL's JSON
// syntax, the schema converted with Nomad's naming rules, then go-cty
// msgpack. The test plugin host uses it to encode configs, and jobs/ uses it
// to check jobspecs against the driver's schema, so both follow one reading
// of Nomad's pipeline.
//
// It is a leaf of plugin/: it imports only plugin/proto and HCL and go-cty.
package nomadconfig

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/ext/typeexpr"
	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	hcljson "github.com/hashicorp/hcl/v2/json"
	"github.com/zclconf/go-cty/cty"
	ctymsgpack "github.com/zclconf/go-cty/cty/msgpack"

	"github.com/llmgw/llmgw/plugin/proto/hclspec"
)

// EncodeConfig turns a config, as Nomad holds it after parsing a jobspec or
// agent file (a map whose blocks are lists of maps), into the bytes a plugin
// receives, by Nomad's pipeline: JSON, HCL's JSON syntax, decoding with the
// plugin's schema (unknown keys and missing required attributes are errors,
// defaults applied, "${VAR}" interpolated from vars), then go-cty msgpack.
// A nil schema means the plugin takes no config: nil bytes, and any config
// given is an error.
func EncodeConfig(schema *hclspec.Spec, config map[string]any, vars map[string]string) ([]byte, error) {
	if schema == nil {
		if len(config) != 0 {
			return nil, errors.New("configuration not allowed but config passed")
		}
		return nil, nil
	}
	spec, err := DecoderSpec(schema)
	if err != nil {
		return nil, fmt.Errorf("convert schema: %w", err)
	}
	if config == nil {
		config = map[string]any{}
	}
	src, err := json.Marshal(config)
	if err != nil {
		return nil, fmt.Errorf("encode config as JSON: %w", err)
	}
	file, diags := hcljson.Parse(src, "config.json")
	if diags.HasErrors() {
		return nil, fmt.Errorf("parse config: %s", diags.Error())
	}
	ctx := &hcl.EvalContext{Variables: map[string]cty.Value{}}
	for k, v := range vars {
		ctx.Variables[k] = cty.StringVal(v)
	}
	val, diags := hcldec.Decode(file.Body, spec, ctx)
	if diags.HasErrors() {
		return nil, fmt.Errorf("failed to parse config: %s", diags.Error())
	}
	b, err := ctymsgpack.Marshal(val, val.Type())
	if err != nil {
		return nil, fmt.Errorf("encode config as msgpack: %w", err)
	}
	return b, nil
}

// DecoderSpec converts a plugin's hclspec tree into an hcldec spec, with the
// rules Nomad applies: a direct child of an Object takes the object's key as
// its name when its own is empty; children of Default get no implied name;
// an attribute type is an HCL type expression and must not be empty;
// a literal is an HCL expression.
func DecoderSpec(s *hclspec.Spec) (hcldec.Spec, error) {
	return convert(s, "")
}

func convert(s *hclspec.Spec, implied string) (hcldec.Spec, error) {
	name := func(n string) string {
		if n == "" {
			return implied
		}
		return n
	}
	switch b := s.GetBlock().(type) {
	case *hclspec.Spec_Object:
		obj := hcldec.ObjectSpec{}
		keys := make([]string, 0, len(b.Object.GetAttributes()))
		for k := range b.Object.GetAttributes() {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			c, err := convert(b.Object.GetAttributes()[k], k)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", k, err)
			}
			obj[k] = c
		}
		return obj, nil
	case *hclspec.Spec_Array:
		tuple := hcldec.TupleSpec{}
		for i, v := range b.Array.GetValues() {
			c, err := convert(v, "")
			if err != nil {
				return nil, fmt.Errorf("[%d]: %w", i, err)
			}
			tuple = append(tuple, c)
		}
		return tuple, nil
	case *hclspec.Spec_Attr:
		n := name(b.Attr.GetName())
		if n == "" {
			return nil, errors.New("missing name in attribute spec")
		}
		ty, err := parseType(b.Attr.GetType())
		if err != nil {
			return nil, fmt.Errorf("attribute %s: %w", n, err)
		}
		return &hcldec.AttrSpec{Name: n, Type: ty, Required: b.Attr.GetRequired()}, nil
	case *hclspec.Spec_BlockValue:
		nested, err := convertNested(b.BlockValue.GetNested())
		if err != nil {
			return nil, err
		}
		return &hcldec.BlockSpec{TypeName: name(b.BlockValue.GetName()), Nested: nested, Required: b.BlockValue.GetRequired()}, nil
	case *hclspec.Spec_BlockAttrs:
		ty, err := parseType(b.BlockAttrs.GetType())
		if err != nil {
			return nil, fmt.Errorf("block attrs %s: %w", name(b.BlockAttrs.GetName()), err)
		}
		return &hcldec.BlockAttrsSpec{TypeName: name(b.BlockAttrs.GetName()), ElementType: ty, Required: b.BlockAttrs.GetRequired()}, nil
	case *hclspec.Spec_BlockList:
		nested, err := convertNested(b.BlockList.GetNested())
		if err != nil {
			return nil, err
		}
		return &hcldec.BlockListSpec{TypeName: name(b.BlockList.GetName()), Nested: nested,
			MinItems: clampInt(b.BlockList.GetMinItems()), MaxItems: clampInt(b.BlockList.GetMaxItems())}, nil
	case *hclspec.Spec_BlockSet:
		nested, err := convertNested(b.BlockSet.GetNested())
		if err != nil {
			return nil, err
		}
		return &hcldec.BlockSetSpec{TypeName: name(b.BlockSet.GetName()), Nested: nested,
			MinItems: clampInt(b.BlockSet.GetMinItems()), MaxItems: clampInt(b.BlockSet.GetMaxItems())}, nil
	case *hclspec.Spec_BlockMap:
		if len(b.BlockMap.GetLabels()) == 0 {
			return nil, fmt.Errorf("block map %s: at least one label is required", name(b.BlockMap.GetName()))
		}
		nested, err := convertNested(b.BlockMap.GetNested())
		if err != nil {
			return nil, err
		}
		return &hcldec.BlockMapSpec{TypeName: name(b.BlockMap.GetName()), LabelNames: b.BlockMap.GetLabels(), Nested: nested}, nil
	case *hclspec.Spec_Default:
		p, err := convert(b.Default.GetPrimary(), "")
		if err != nil {
			return nil, fmt.Errorf("default primary: %w", err)
		}
		d, err := convert(b.Default.GetDefault(), "")
		if err != nil {
			return nil, fmt.Errorf("default value: %w", err)
		}
		return &hcldec.DefaultSpec{Primary: p, Default: d}, nil
	case *hclspec.Spec_Literal:
		expr, diags := hclsyntax.ParseExpression([]byte(b.Literal.GetValue()), "literal", hcl.InitialPos)
		if diags.HasErrors() {
			return nil, fmt.Errorf("literal %q: %s", b.Literal.GetValue(), diags.Error())
		}
		v, diags := expr.Value(nil)
		if diags.HasErrors() {
			return nil, fmt.Errorf("literal %q: %s", b.Literal.GetValue(), diags.Error())
		}
		return &hcldec.LiteralSpec{Value: v}, nil
	}
	return nil, errors.New("spec has no block kind set")
}

func convertNested(s *hclspec.Spec) (hcldec.Spec, error) {
	if s == nil {
		return nil, errors.New("block without a nested spec")
	}
	return convert(s, "")
}

func parseType(expr string) (cty.Type, error) {
	if expr == "" {
		return cty.NilType, errors.New("missing type expression")
	}
	e, diags := hclsyntax.ParseExpression([]byte(expr), "type", hcl.InitialPos)
	if diags.HasErrors() {
		return cty.NilType, fmt.Errorf("type %q: %s", expr, diags.Error())
	}
	ty, diags := typeexpr.TypeConstraint(e)
	if diags.HasErrors() {
		return cty.NilType, fmt.Errorf("type %q: %s", expr, diags.Error())
	}
	return ty, nil
}

func clampInt(n uint64) int {
	if n > math.MaxInt32 {
		return math.MaxInt32
	}
	return int(n)
}
