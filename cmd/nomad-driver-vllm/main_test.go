package main

import (
	"context"
	"os"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hcldec"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	ctymsgpack "github.com/zclconf/go-cty/cty/msgpack"

	"github.com/llmgw/llmgw/driver"
	"github.com/llmgw/llmgw/plugin/nomadconfig"
	"github.com/llmgw/llmgw/plugin/proto/base"
	"github.com/llmgw/llmgw/plugin/proto/drivers"
	"github.com/llmgw/llmgw/plugin/proto/hclspec"
)

// configBlock returns the config {} body inside `outer "label" {}`.
func configBlock(t *testing.T, path, outer, label string) hcl.Body {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, diags := hclsyntax.ParseConfig(src, path, hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	for _, b := range f.Body.(*hclsyntax.Body).Blocks {
		if b.Type == outer && len(b.Labels) == 1 && b.Labels[0] == label {
			for _, c := range b.Body.Blocks {
				if c.Type == "config" {
					return c.Body
				}
			}
		}
	}
	t.Fatalf("%s: no %s %q { config {} }", path, outer, label)
	return nil
}

// encode decodes body with the plugin's schema and encodes it as Nomad does.
func encode(t *testing.T, schema *hclspec.Spec, body hcl.Body) []byte {
	t.Helper()
	spec, err := nomadconfig.DecoderSpec(schema)
	if err != nil {
		t.Fatal(err)
	}
	val, diags := hcldec.Decode(body, spec, &hcl.EvalContext{Variables: map[string]cty.Value{}})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	b, err := ctymsgpack.Marshal(val, val.Type())
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestExamples keeps the README's examples valid: the agent's plugin
// block is accepted by SetConfig, the task's config by the driver.
func TestExamples(t *testing.T) {
	d := driver.New(driver.Options{})
	defer d.Close()
	ctx := context.Background()

	cs, err := d.ConfigSchema(ctx, &base.ConfigSchemaRequest{})
	if err != nil {
		t.Fatal(err)
	}
	b := encode(t, cs.GetSpec(), configBlock(t, "example/agent.hcl", "plugin", "nomad-driver-vllm"))
	if _, err := d.SetConfig(ctx, &base.SetConfigRequest{MsgpackConfig: b}); err != nil {
		t.Errorf("example/agent.hcl: %v", err)
	}

	ts, err := d.TaskConfigSchema(ctx, &drivers.TaskConfigSchemaRequest{})
	if err != nil {
		t.Fatal(err)
	}
	b = encode(t, ts.GetSpec(), configBlock(t, "example/task.hcl", "task", "qwen"))
	task, err := driver.ParseTaskConfig(b, []string{"http"})
	if err != nil {
		t.Fatalf("example/task.hcl: %v", err)
	}
	if !task.KVEvents || task.GPUMemoryUtilization != 0.9 || task.Env["HF_HOME"] != "/opt/hf" {
		t.Errorf("example task decoded as %+v", task)
	}
}
