package jobs

import (
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/llmgw/llmgw/driver"
)

// defaultsNote says what the policy checks below are checked against. The
// validator cannot read a node's plugin config, and Nomad offers a driver
// no hook at plan time for its task config, so the driver's own refusal
// comes only at StartTask; these checks take the plugin config's defaults
// (no code-loading env or flags, root denied), which a node may relax.
const defaultsNote = "refused under the driver's default plugin config"

// codePolicy reports what the driver's default plugin config refuses in a
// vllm task: a code-loading env key or flag in the config block, the same
// keys in the task's env block, and user root.
func (c *checker) codePolicy(t *hclsyntax.Block, config *hclsyntax.Block, cfg driver.TaskConfig) {
	name := label(t)
	if err := cfg.CheckCode(driver.CodePolicy{}); err != nil {
		msg := err.Error()
		c.add(fieldRange(config, fieldPath(err, msg)), "task %q: %s (%s)", name, msg, defaultsNote)
	}
	for _, env := range blocks(t.Body, "env") {
		keys := map[string]string{}
		for k := range env.Body.Attributes {
			keys[k] = ""
		}
		task := driver.TaskConfig{Env: keys}
		if err := task.CheckCode(driver.CodePolicy{}); err != nil {
			c.add(env.DefRange(), "task %q: task %s (%s)", name, err.Error(), defaultsNote)
		}
	}
	if u, ok := stringAttr(t.Body, "user"); ok && (u == "root" || u == "0") {
		c.add(t.Body.Attributes["user"].SrcRange,
			"task %q: user %q: denied_users denies root (%s); leave user unset to run as the plugin config's default_user", name, u, defaultsNote)
	}
}
