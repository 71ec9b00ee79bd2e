package jobs

import (
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// strategies are the Nomad Autoscaler's built-in strategy plugins; a
// policy naming another needs a plugin the validator cannot see, so it is
// a warning.
var strategies = map[string]bool{"pass-through": true, "target-value": true, "threshold": true, "fixed-value": true}

// modelSelector finds a query's model="..." label matchers.
var modelSelector = regexp.MustCompile(`\bmodel\s*=\s*"([^"]*)"`)

// scaling checks the scaling block of a group whose vllm tasks serve model
// (sharded: a task is a shard of a multi-node replica). Nomad checks the
// block's min, max and count, but takes its policy as an opaque map the
// Nomad Autoscaler reads only when it runs; the checks here catch what
// would otherwise fail then: bounds, durations, a check without a query or
// strategy, and a query on llmgw's signal for another model.
func (c *checker) scaling(g *hclsyntax.Block, model string, sharded bool) {
	for _, s := range blocks(g.Body, "scaling") {
		if len(s.Labels) > 0 {
			continue // a task's scaling block: Dynamic Application Sizing
		}
		if sharded {
			c.add(s.DefRange(), "group %q: a scaling block on a shard of a multi-node replica; the replica's shards are in other groups, whose counts would not follow, so scale such a replica by running another copy of its job", label(g))
			continue
		}
		c.scalingBounds(g, s)
		for _, p := range blocks(s.Body, "policy") {
			c.scalingPolicy(p, model)
		}
	}
}

// scalingBounds checks max (required), min and the group's count against
// them, where they are constants.
func (c *checker) scalingBounds(g, s *hclsyntax.Block) {
	lo, hasMin := intAttr(s.Body, "min")
	hi, hasMax := intAttr(s.Body, "max")
	if _, ok := s.Body.Attributes["max"]; !ok {
		c.add(s.DefRange(), "group %q: scaling block without max; Nomad requires one", label(g))
	}
	if hasMin && hasMax && (lo < 0 || lo > hi) {
		c.add(s.Body.Attributes["min"].SrcRange, "group %q: scaling min %d: want 0 to max (%d)", label(g), lo, hi)
		return
	}
	if n, ok := intAttr(g.Body, "count"); ok && (hasMin && n < lo || hasMax && n > hi) {
		c.add(g.Body.Attributes["count"].SrcRange, "group %q: count %d outside the scaling bounds %d..%d", label(g), n, lo, hi)
	}
}

// scalingPolicy checks the policy's durations and each check.
func (c *checker) scalingPolicy(p *hclsyntax.Block, model string) {
	for _, name := range []string{"cooldown", "evaluation_interval"} {
		if v, ok := stringAttr(p.Body, name); ok {
			if d, err := time.ParseDuration(v); err != nil || d <= 0 {
				c.add(p.Body.Attributes[name].SrcRange, "scaling policy %s %s: want a duration above zero, such as \"1m\"", name, strconv.Quote(v))
			}
		}
	}
	checks := blocks(p.Body, "check")
	if len(checks) == 0 {
		c.add(p.DefRange(), "scaling policy without a check: the autoscaler has nothing to evaluate")
	}
	for _, ck := range checks {
		c.scalingCheck(ck, model)
	}
}

// scalingCheck checks one check: a query, one strategy of a known kind,
// and a query on llmgw's per-model signal that selects this group's model.
func (c *checker) scalingCheck(ck *hclsyntax.Block, model string) {
	name := label(ck)
	query, ok := stringAttr(ck.Body, "query")
	if _, has := ck.Body.Attributes["query"]; !has {
		c.add(ck.DefRange(), "scaling check %q: no query", name)
	}
	strats := blocks(ck.Body, "strategy")
	if len(strats) != 1 {
		c.add(ck.DefRange(), "scaling check %q: %d strategy blocks; want one", name, len(strats))
	}
	for _, st := range strats {
		if !strategies[label(st)] {
			c.warn(st.DefRange(), "scaling check %q: strategy %q is none of the autoscaler's built-in ones (pass-through, target-value, threshold, fixed-value); it needs a plugin", name, label(st))
		}
	}
	if !ok || model == "" || !strings.Contains(query, "llmgw_model_") {
		return
	}
	m := modelSelector.FindAllStringSubmatch(query, -1)
	if len(m) == 0 {
		c.add(ck.Body.Attributes["query"].SrcRange, "scaling check %q: the query reads llmgw's per-model signal without model=%q; it would scale on every model's demand", name, model)
	}
	for _, sel := range m {
		if sel[1] != model {
			c.add(ck.Body.Attributes["query"].SrcRange, "scaling check %q: the query selects model %q, but the group serves %q", name, sel[1], model)
		}
	}
}

// intAttr is a body attribute's value when it is a constant whole number.
func intAttr(body *hclsyntax.Body, name string) (int, bool) {
	a, ok := body.Attributes[name]
	if !ok {
		return 0, false
	}
	v, diags := a.Expr.Value(nil)
	if diags.HasErrors() || !v.IsKnown() || v.IsNull() || !v.Type().Equals(cty.Number) {
		return 0, false
	}
	f := v.AsBigFloat()
	if !f.IsInt() {
		return 0, false
	}
	n, _ := f.Int64()
	return int(n), true
}
