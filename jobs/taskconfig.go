package jobs

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	ctymsgpack "github.com/zclconf/go-cty/cty/msgpack"

	"github.com/llmgw/llmgw/driver"
	pluginmsgpack "github.com/llmgw/llmgw/plugin/ctymsgpack"
	"github.com/llmgw/llmgw/plugin/nomadconfig"
)

// taskSpec is the driver's task-config schema as an hcldec spec, converted
// by the rules Nomad applies. It is the driver's own schema, asked for
// through the plugin method Nomad calls, so the two cannot drift apart.
var taskSpec = sync.OnceValues(func() (hcldec.Spec, error) {
	resp, err := new(driver.Driver).TaskConfigSchema(context.Background(), nil)
	if err != nil {
		return nil, fmt.Errorf("vllm task schema: %w", err)
	}
	s, err := nomadconfig.DecoderSpec(resp.GetSpec())
	if err != nil {
		return nil, fmt.Errorf("vllm task schema: %w", err)
	}
	return s, nil
})

// vllmTask is what the service checks need from a valid vllm task.
type vllmTask struct {
	name   string
	config *hclsyntax.Body
	cfg    driver.TaskConfig
}

// leader reports whether the task serves the API: a single-node replica or
// shard rank 0.
func (t vllmTask) leader() bool { return t.cfg.Shard == nil || t.cfg.Shard.Rank == 0 }

// taskConfig checks a vllm task's config block as Nomad and the driver
// would: HCL decoding with the driver's schema (unknown attributes, wrong
// types, missing required ones), then the driver's own validation, given the
// group's port labels. ok is false when the config is invalid or cannot be
// fully known here.
func (c *checker) taskConfig(t *hclsyntax.Block, ports []string) (vllmTask, bool) {
	name := label(t)
	configs := blocks(t.Body, "config")
	if len(configs) == 0 {
		c.add(t.DefRange(), "task %q: driver vllm needs a config block with at least model", name)
		return vllmTask{}, false
	}
	for _, dup := range configs[1:] {
		c.add(dup.DefRange(), "task %q: more than one config block", name)
	}
	body := configs[0].Body
	spec, err := taskSpec()
	if err != nil {
		c.add(configs[0].DefRange(), "task %q: %v", name, err)
		return vllmTask{}, false
	}
	ctx, known := placeholders(hcldec.Variables(body, spec))
	val, diags := hcldec.Decode(body, spec, ctx)
	if diags.HasErrors() {
		for _, d := range diags {
			d.Summary = fmt.Sprintf("task %q: %s", name, d.Summary)
		}
		c.diags(diags)
		return vllmTask{}, false
	}
	if !known || !val.IsWhollyKnown() {
		return vllmTask{}, false // depends on input variables: only the types were checked
	}
	b, err := ctymsgpack.Marshal(val, val.Type())
	if err != nil {
		c.add(configs[0].DefRange(), "task %q: encode config: %v", name, err)
		return vllmTask{}, false
	}
	cfg, err := driver.ParseTaskConfig(b, ports)
	if err != nil {
		msg := strings.TrimPrefix(err.Error(), "invalid task config: ")
		c.add(fieldRange(configs[0], fieldPath(err, msg)), "task %q: %s", name, msg)
		return vllmTask{}, false
	}
	task := vllmTask{name: name, config: body, cfg: cfg}
	if cfg.KVEvents && !task.leader() {
		c.add(fieldRange(configs[0], "kv_events"), "task %q: kv_events: shard rank %d is not the leader; only rank 0 publishes KV events, so set it on the leader alone", name, cfg.Shard.Rank)
	}
	c.apiKeyTemplate(t, configs[0], task)
	c.codePolicy(t, configs[0], cfg)
	return task, true
}

var pathPrefix = regexp.MustCompile(`^([a-z_]+(?:\.[a-z_]+)*)(?:\[\d+\])?: `)

// fieldPath is the config attribute an error from the driver names, e.g.
// "shard.rank", or "" when it names none.
func fieldPath(err error, msg string) string {
	if fe := (*pluginmsgpack.FieldError)(nil); errors.As(err, &fe) {
		return strings.SplitN(fe.Path, "[", 2)[0]
	}
	if m := pathPrefix.FindStringSubmatch(msg); m != nil {
		return m[1]
	}
	return ""
}

// fieldRange locates a dotted attribute path inside a config block: the
// attribute, else the deepest block found on the way, else the block itself.
func fieldRange(config *hclsyntax.Block, path string) hcl.Range {
	r := config.DefRange()
	body := config.Body
	steps := strings.Split(path, ".")
	for i, step := range steps {
		if step == "" {
			break
		}
		if a, ok := body.Attributes[step]; ok && i == len(steps)-1 {
			return a.SrcRange
		}
		bs := blocks(body, step)
		if len(bs) == 0 {
			break
		}
		r, body = bs[0].DefRange(), bs[0].Body
	}
	return r
}

func label(b *hclsyntax.Block) string {
	if len(b.Labels) == 0 {
		return ""
	}
	return b.Labels[0]
}
