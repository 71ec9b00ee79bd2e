package pluginhost

import (
	"context"
	"fmt"
	"time"

	"github.com/llmgw/llmgw/plugin"
	"github.com/llmgw/llmgw/plugin/nomadconfig"
	"github.com/llmgw/llmgw/plugin/proto/base"
	"github.com/llmgw/llmgw/plugin/proto/drivers"
)

// shutdownBudget is how long Nomad's driver manager waits for Shutdown.
const shutdownBudget = 2 * time.Second

// SetConfig does what the agent's plugin loader does with a plugin "x"
// { config {...} } block: fetch the schema, encode config with it (defaults
// apply even for an empty config) and send it with the API version Nomad
// negotiated. nomad is nil in the validation-phase calls.
func (h *Host) SetConfig(ctx context.Context, config map[string]any, nomad *base.NomadConfig) error {
	schema, err := h.Base.ConfigSchema(ctx, &base.ConfigSchemaRequest{})
	if err != nil {
		return fmt.Errorf("config schema: %w", err)
	}
	b, err := nomadconfig.EncodeConfig(schema.GetSpec(), config, nil)
	if err != nil {
		return err
	}
	_, err = h.Base.SetConfig(ctx, &base.SetConfigRequest{
		MsgpackConfig:    b,
		NomadConfig:      nomad,
		PluginApiVersion: plugin.APIVersion,
	})
	if err != nil {
		return fmt.Errorf("set config: %w", err)
	}
	return nil
}

// EncodeTaskConfig encodes a task's config {} block with the plugin's task
// schema and the task's environment as interpolation variables, as the
// task runner does, and stores it in t.Config.
func (h *Host) EncodeTaskConfig(ctx context.Context, t *Task, config map[string]any) error {
	schema, err := h.Driver.TaskConfigSchema(ctx, &drivers.TaskConfigSchemaRequest{})
	if err != nil {
		return fmt.Errorf("task config schema: %w", err)
	}
	b, err := nomadconfig.EncodeConfig(schema.GetSpec(), config, t.Config.GetEnv())
	if err != nil {
		return err
	}
	t.Config.MsgpackDriverConfig = b
	return nil
}

// Waited is what a WaitTask call answered.
type Waited struct {
	Resp *drivers.WaitTaskResponse
	Err  error
}

// WaitAsync calls WaitTask for task id in the background, as Nomad's task
// runner keeps a WaitTask open while it stops a task, and delivers the
// answer on the returned channel. Cancelling ctx ends the call.
func (h *Host) WaitAsync(ctx context.Context, id string) <-chan Waited {
	ch := make(chan Waited, 1)
	go func() {
		r, err := h.Driver.WaitTask(ctx, &drivers.WaitTaskRequest{TaskId: id})
		ch <- Waited{r, err}
	}()
	return ch
}

// CheckPluginInfo validates a plugin's identity as the agent's loader does:
// a driver, speaking API 0.1.0, with a semver version and a name.
func CheckPluginInfo(info *base.PluginInfoResponse) error {
	if info.GetType() != base.PluginType_DRIVER {
		return fmt.Errorf("plugin type %v; want DRIVER", info.GetType())
	}
	ok := false
	for _, v := range info.GetPluginApiVersions() {
		if v == plugin.APIVersion || v == "v"+plugin.APIVersion {
			ok = true
		}
	}
	if !ok {
		return fmt.Errorf("plugin API versions %q lack %s", info.GetPluginApiVersions(), plugin.APIVersion)
	}
	if !isSemver(info.GetPluginVersion()) {
		return fmt.Errorf("plugin version %q is not semver", info.GetPluginVersion())
	}
	if info.GetName() == "" {
		return fmt.Errorf("plugin has no name")
	}
	return nil
}

// isSemver accepts MAJOR.MINOR.PATCH with an optional v prefix and
// -prerelease/+build suffix, as hashicorp/go-version does for plugins.
func isSemver(v string) bool {
	if len(v) > 0 && v[0] == 'v' {
		v = v[1:]
	}
	for i, c := range v {
		if c == '-' || c == '+' {
			v = v[:i]
			break
		}
	}
	parts := 0
	digits := 0
	for _, c := range v + "." {
		switch {
		case c >= '0' && c <= '9':
			digits++
		case c == '.' && digits > 0:
			parts++
			digits = 0
		default:
			return false
		}
	}
	return parts >= 1 && parts <= 3
}
