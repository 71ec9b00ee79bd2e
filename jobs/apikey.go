package jobs

import (
	"strings"

	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// apiKeyTemplate checks that a task whose config sets api_key_env has a
// template block with env = true that can set that variable: without one
// the driver refuses to start the task. A template whose data cannot be
// read here (it interpolates job variables) counts if it sets env.
func (c *checker) apiKeyTemplate(t *hclsyntax.Block, config *hclsyntax.Block, task vllmTask) {
	name := task.cfg.APIKeyEnv
	if name == "" {
		return
	}
	for _, tpl := range blocks(t.Body, "template") {
		if !literalTrue(tpl.Body.Attributes["env"]) {
			continue
		}
		data, ok := tpl.Body.Attributes["data"]
		if !ok {
			return // a source file: its contents are not known here
		}
		v, diags := data.Expr.Value(nil)
		if diags.HasErrors() || !v.IsKnown() || v.Type() != cty.String || strings.Contains(v.AsString(), name+"=") {
			return
		}
	}
	c.add(fieldRange(config, "api_key_env"), "task %q: api_key_env: no template block with env = true sets %s, so the driver would refuse to start the task; render it from a Nomad Variable", task.name, name)
}

// literalTrue reports whether a is the literal true.
func literalTrue(a *hclsyntax.Attribute) bool {
	if a == nil {
		return false
	}
	v, diags := a.Expr.Value(nil)
	return !diags.HasErrors() && v.IsKnown() && v.Type() == cty.Bool && v.True()
}
