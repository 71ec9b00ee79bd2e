package config

import (
	"fmt"
	"strconv"

	"github.com/llmgw/llmgw/router/scheduler"
)

// PD configures prefill/decode disaggregated routing (router/disagg),
// which applies to models whose replicas have the prefill and the decode
// role (Consul meta llmgw-role, or a static replica's role).
type PD struct {
	// SkipPrefillTokens and SkipPrefillFraction are the threshold at which
	// the decode replica prefills a prompt itself: when it caches at least
	// SkipPrefillTokens of the prompt's tokens and at least
	// SkipPrefillFraction of them (cached token counts, every KV tier in
	// full). Either may be 0; not both.
	SkipPrefillTokens   int
	SkipPrefillFraction float64
	// PrefillScheduler schedules the prefill step; nil: the scheduler.
	PrefillScheduler *scheduler.Config
}

func defaultPD() PD { return PD{SkipPrefillFraction: 0.9} }

func (c *Config) applyFilePD(f *fileConfig) error {
	if f.PDSkipTokens != nil {
		c.PD.SkipPrefillTokens = *f.PDSkipTokens
	}
	if f.PDSkipFraction != nil {
		c.PD.SkipPrefillFraction = *f.PDSkipFraction
	}
	if f.PrefillScheduler != nil {
		sc, err := f.PrefillScheduler.toConfig()
		if err != nil {
			return fmt.Errorf("prefill_scheduler: %w", err)
		}
		c.PD.PrefillScheduler = &sc
	}
	return nil
}

func (c *Config) validatePD() []error {
	var errs []error
	p := c.PD
	if p.SkipPrefillTokens < 0 {
		errs = append(errs, fmt.Errorf("pd_skip_prefill_tokens %d: must not be negative", p.SkipPrefillTokens))
	}
	if !(p.SkipPrefillFraction >= 0 && p.SkipPrefillFraction <= 1) {
		errs = append(errs, fmt.Errorf("pd_skip_prefill_fraction %g: want 0..1", p.SkipPrefillFraction))
	}
	if p.SkipPrefillTokens == 0 && p.SkipPrefillFraction == 0 {
		errs = append(errs, fmt.Errorf("pd_skip_prefill_tokens and pd_skip_prefill_fraction are both 0: set one (0 and 0 would skip the remote prefill on any cache hit)"))
	}
	for _, r := range c.Replicas {
		switch r.Role {
		case "", "agg", "prefill", "decode":
		default:
			errs = append(errs, fmt.Errorf("replica %q: role %q: want agg, prefill or decode", r.ID, r.Role))
		}
	}
	return errs
}

// pdSettings are the environment variables and flags of PD.
var pdSettings = []setting{
	{"LLMGW_PD_SKIP_PREFILL_TOKENS", "pd-skip-prefill-tokens", "decode replica's cached prompt tokens from which it prefills itself", integer("pd skip prefill tokens", func(c *Config) *int { return &c.PD.SkipPrefillTokens })},
	{"LLMGW_PD_SKIP_PREFILL_FRACTION", "pd-skip-prefill-fraction", "decode replica's cached share of the prompt from which it prefills itself", func(c *Config, v string) error {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return fmt.Errorf("pd skip prefill fraction %q: want a number", v)
		}
		c.PD.SkipPrefillFraction = f
		return nil
	}},
}

func init() { settings = append(settings, pdSettings...) }
