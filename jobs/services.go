package jobs

import (
	"slices"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/llmgw/llmgw/driver"
)

// replicaID is the llmgw-replica meta value: the id the driver puts in every
// KV update for this task, so routers join Consul instances and KV state.
const replicaID = "${NOMAD_ALLOC_ID}/${NOMAD_TASK_NAME}"

// taskServices checks the Consul services of a valid vllm task: a leader
// must register a replica service with the llmgw conventions; a non-leader
// shard serves no API and must not pose as a replica.
func (c *checker) taskServices(t *hclsyntax.Block, task vllmTask) {
	services := blocks(t.Body, "service")
	if task.leader() && len(services) == 0 {
		c.add(t.DefRange(), "task %q: no service block; routers find replicas only through a Consul service tagged llmgw", task.name)
	}
	for _, s := range services {
		if !task.leader() {
			if tags, ok := c.tags(s); ok && slices.Contains(tags, "llmgw") {
				c.add(s.DefRange(), "task %q: shard rank %d serves no API, so its service must not be tagged llmgw", task.name, task.cfg.Shard.Rank)
			}
			continue
		}
		c.replicaService(s, task)
	}
}

// replicaService checks one replica service against the conventions in
// consul/README.md, and that its meta agrees with the task config.
func (c *checker) replicaService(s *hclsyntax.Block, task vllmTask) {
	name, _ := stringAttr(s.Body, "name")
	where := "task " + strconv.Quote(task.name) + ": service " + strconv.Quote(name)
	if strings.Contains(name, "/") {
		c.add(s.Body.Attributes["name"].SrcRange, `%s: Consul rejects "/" in service names`, where)
	}
	if port, ok := stringAttr(s.Body, "port"); ok && port != task.cfg.Port {
		c.add(s.Body.Attributes["port"].SrcRange, "%s: port %q is not the port the engine serves on (%q)", where, port, task.cfg.Port)
	}
	if tags, ok := c.tags(s); ok && !slices.Contains(tags, "llmgw") {
		r := s.DefRange()
		if a, ok := s.Body.Attributes["tags"]; ok {
			r = a.SrcRange
		}
		c.add(r, `%s: tags must include "llmgw", which marks a replica for routers`, where)
	}
	served := task.cfg.ServedModelName
	if served == "" {
		served = task.cfg.Model
	}
	want := []struct{ key, value string }{
		{"llmgw-model", served},
		{"llmgw-replica", replicaID},
		{"llmgw-block-size", strconv.Itoa(task.cfg.BlockSize)},
		{"llmgw-kv-events", strconv.FormatBool(task.cfg.KVEvents)},
	}
	meta, metaRange := c.meta(s)
	if nomadProvider(s) {
		meta, metaRange = c.tagMeta(s)
	}
	if role := task.cfg.Role; role == driver.RolePrefill || role == driver.RoleDecode {
		want = append(want, struct{ key, value string }{"llmgw-role", role})
	} else if v, ok := meta["llmgw-role"]; ok && v.known && v.value != "" && v.value != driver.RoleAgg {
		c.add(v.rng, "%s: meta llmgw-role is %q but the task's role is agg; set role = %q in the task config", where, v.value, v.value)
	}
	c.taskMeta(meta, metaRange, task, where)
	c.modelMeta(meta, task, where)
	c.dataParallelMeta(meta, task, where)
	for _, w := range want {
		v, ok := meta[w.key]
		switch {
		case !ok:
			c.add(metaRange, "%s: meta %s is missing (want %q)", where, w.key, w.value)
		case v.known && v.value != w.value:
			c.add(v.rng, "%s: meta %s is %q; want %q to match the task", where, w.key, v.value, w.value)
		}
	}
	if !hasHealthCheck(s.Body) {
		c.add(s.DefRange(), "%s: needs an HTTP check on /health (with a grace long enough to load the model)", where)
	}
}

// tags evaluates a service's tags; ok is false when there are none to check
// or they are not a constant list of strings.
func (c *checker) tags(s *hclsyntax.Block) ([]string, bool) {
	a, ok := s.Body.Attributes["tags"]
	if !ok {
		return nil, true
	}
	ctx, known := placeholders(a.Expr.Variables())
	v, diags := a.Expr.Value(ctx)
	if diags.HasErrors() || !known || !v.IsWhollyKnown() || v.IsNull() || !(v.Type().IsListType() || v.Type().IsTupleType() || v.Type().IsSetType()) {
		return nil, false
	}
	var tags []string
	for it := v.ElementIterator(); it.Next(); {
		_, e := it.Element()
		if !e.IsNull() && e.Type() == cty.String {
			tags = append(tags, e.AsString())
		}
	}
	return tags, true
}

type metaValue struct {
	value string
	known bool
	rng   hcl.Range
}

// meta collects a service's meta, written as a block or as a map attribute,
// and the range to report a missing key at.
func (c *checker) meta(s *hclsyntax.Block) (map[string]metaValue, hcl.Range) {
	out := map[string]metaValue{}
	if mb := blocks(s.Body, "meta"); len(mb) > 0 {
		b := mb[0] // Nomad reads the first meta block
		for k, a := range b.Body.Attributes {
			out[k] = evalMeta(a.Expr, a.SrcRange)
		}
		return out, b.DefRange()
	}
	a, ok := s.Body.Attributes["meta"]
	if !ok {
		return out, s.DefRange()
	}
	if obj, ok := a.Expr.(*hclsyntax.ObjectConsExpr); ok {
		for _, item := range obj.Items {
			kv, diags := item.KeyExpr.Value(nil)
			if diags.HasErrors() || kv.IsNull() || !kv.IsKnown() || kv.Type() != cty.String {
				continue
			}
			out[kv.AsString()] = evalMeta(item.ValueExpr, item.ValueExpr.Range())
		}
	}
	return out, a.SrcRange
}

func evalMeta(e hclsyntax.Expression, r hcl.Range) metaValue {
	ctx, known := placeholders(e.Variables())
	v, diags := e.Value(ctx)
	if diags.HasErrors() || !known || !v.IsWhollyKnown() || v.IsNull() {
		return metaValue{rng: r}
	}
	v, err := convert.Convert(v, cty.String) // Nomad's meta is map[string]string
	if err != nil {
		return metaValue{rng: r}
	}
	return metaValue{value: v.AsString(), known: true, rng: r}
}

func hasHealthCheck(service *hclsyntax.Body) bool {
	for _, ch := range blocks(service, "check") {
		typ, _ := stringAttr(ch.Body, "type")
		path, _ := stringAttr(ch.Body, "path")
		if typ == "http" && path == "/health" {
			return true
		}
	}
	return false
}
