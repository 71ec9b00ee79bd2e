package server

import (
	"context"
	"errors"
	"fmt"

	"github.com/llmgw/llmgw/router/admission"
	"github.com/llmgw/llmgw/router/prompt"
	"github.com/llmgw/llmgw/router/scheduler"
)

// Option changes how Start assembles the router. cmd/llmgw-router passes
// WithPlugins(peerpolicy.Register), the peers' policies that `llmgw bench`
// compares; a custom build of the router (its own main package calling
// Run) passes WithPlugins to add its own scheduler plugins.
type Option func(*options)

type options struct {
	plugins  []func(*scheduler.Registry) error
	encoders map[string]prompt.Encoder // WithEncoder
	// coldStages are WithColdStage's hooks.
	coldStages []func(context.Context, admission.Stage)
}

// WithPlugins has register add plugin types to the router's scheduler
// registry, after the built-in ones, so that the config's scheduler block
// can name them (scheduler "my-scorer" { ... }). register is called once
// per Start; its error, such as a type registered twice, fails Start.
func WithPlugins(register func(*scheduler.Registry) error) Option {
	return func(o *options) { o.plugins = append(o.plugins, register) }
}

// buildScheduler builds the configured scheduler from the built-in
// plugins and those the options add.
func buildScheduler(cfg scheduler.Config, deps scheduler.Deps, opts []Option) (*scheduler.Scheduler, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	reg := scheduler.NewRegistry()
	if err := scheduler.RegisterBuiltins(reg); err != nil {
		return nil, err
	}
	for _, register := range o.plugins {
		if register == nil {
			return nil, errors.New("scheduler plugins: WithPlugins(nil)")
		}
		if err := register(reg); err != nil {
			return nil, fmt.Errorf("scheduler plugins: %w", err)
		}
	}
	sched, err := reg.Build(cfg, deps)
	if err != nil {
		return nil, fmt.Errorf("scheduler config: %w", err)
	}
	return sched, nil
}
