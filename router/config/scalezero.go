package config

import (
	"fmt"
	"time"
)

// ScaleFromZero is a model whose replicas run as a Nomad task group that
// the router scales from zero when a request for it comes (and the model
// has no replica) and back to zero after IdleTimeout without requests
// (router/admission.Cold, nomad.Scaler). The router cannot learn such a
// model from its replicas, having none, so the operator lists it here,
// in the nomad block:
//
//	nomad {
//	  scale_from_zero "llama-3-8b" {
//	    job          = "vllm-llama"
//	    group        = "shard"
//	    count        = 1     # replicas to start (default 1)
//	    idle_timeout = "30m" # "0s": never scaled back to zero
//	  }
//	  cold_start_timeout = "5m" # how long a request waits for the first replica
//	  max_cold_queue     = 64   # requests one model holds while it starts
//	}
//
// The job's group needs a scaling block whose min is 0, if it has one;
// the router's Nomad token needs read-job and scale-job in the namespace
// (docs/operating/llmgw-router-scale.policy.hcl).
type ScaleFromZero struct {
	Model, Job, Group string
	Count             int
	IdleTimeout       time.Duration
}

// Defaults of the cold-start hold.
const (
	DefaultColdStartTimeout = 5 * time.Minute
	DefaultMaxColdQueue     = 64
	DefaultIdleTimeout      = 30 * time.Minute
)

type fileScaleFromZero struct {
	Model       string  `hcl:"model,label"`
	Job         string  `hcl:"job"`
	Group       string  `hcl:"group"`
	Count       *int    `hcl:"count,optional"`
	IdleTimeout *string `hcl:"idle_timeout,optional"`
}

// applyFileScaleZero takes the nomad block's scale_from_zero blocks and
// their settings.
func (c *Config) applyFileScaleZero(fn *fileNomad) error {
	if fn == nil {
		return nil
	}
	if fn.ColdStartTimeout != nil {
		d, err := time.ParseDuration(*fn.ColdStartTimeout)
		if err != nil {
			return fmt.Errorf("config nomad cold_start_timeout: %w", err)
		}
		c.Nomad.ColdStartTimeout = d
	}
	if fn.MaxColdQueue != nil {
		c.Nomad.MaxColdQueue = *fn.MaxColdQueue
	}
	for _, f := range fn.ScaleFromZero {
		s := ScaleFromZero{Model: f.Model, Job: f.Job, Group: f.Group, Count: 1, IdleTimeout: DefaultIdleTimeout}
		if f.Count != nil {
			s.Count = *f.Count
		}
		if f.IdleTimeout != nil {
			d, err := time.ParseDuration(*f.IdleTimeout)
			if err != nil {
				return fmt.Errorf("config nomad scale_from_zero %q idle_timeout: %w", f.Model, err)
			}
			s.IdleTimeout = d
		}
		c.Nomad.ScaleFromZero = append(c.Nomad.ScaleFromZero, s)
	}
	return nil
}

func (c *Config) validateScaleZero() []error {
	var errs []error
	n := c.Nomad
	if n.ColdStartTimeout < 0 || n.MaxColdQueue < 0 {
		errs = append(errs, fmt.Errorf("nomad cold_start_timeout %s and max_cold_queue %d must not be negative (0: the default)", n.ColdStartTimeout, n.MaxColdQueue))
	}
	seen := map[string]bool{}
	for _, s := range n.ScaleFromZero {
		switch {
		case s.Model == "" || s.Job == "" || s.Group == "":
			errs = append(errs, fmt.Errorf("nomad scale_from_zero %q: needs a model, job and group", s.Model))
		case seen[s.Model]:
			errs = append(errs, fmt.Errorf("nomad scale_from_zero %q: declared twice", s.Model))
		case s.Count < 1:
			errs = append(errs, fmt.Errorf("nomad scale_from_zero %q: count %d; want at least 1", s.Model, s.Count))
		case s.IdleTimeout < 0:
			errs = append(errs, fmt.Errorf("nomad scale_from_zero %q: idle_timeout %s must not be negative", s.Model, s.IdleTimeout))
		}
		seen[s.Model] = true
	}
	return errs
}
