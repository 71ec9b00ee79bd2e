package server

import (
	"fmt"

	"github.com/llmgw/llmgw/router/config"
	"github.com/llmgw/llmgw/router/disagg"
	"github.com/llmgw/llmgw/router/scheduler"
)

// pdDeps builds what the gateway routes disaggregated models with: the
// decider's threshold and the prefill step's scheduler (nil when the
// config names none: the gateway then uses the main one).
func pdDeps(cfg config.PD, deps scheduler.Deps, opts []Option) (disagg.Threshold, *scheduler.Scheduler, error) {
	th := disagg.Threshold{Tokens: cfg.SkipPrefillTokens, Fraction: cfg.SkipPrefillFraction}
	if err := th.Validate(); err != nil {
		return th, nil, err
	}
	if cfg.PrefillScheduler == nil {
		return th, nil, nil
	}
	s, err := buildScheduler(*cfg.PrefillScheduler, deps, opts)
	if err != nil {
		return th, nil, fmt.Errorf("prefill_scheduler: %w", err)
	}
	return th, s, nil
}
