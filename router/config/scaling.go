package config

import (
	"fmt"
	"time"

	"github.com/llmgw/llmgw/router/autoscale"
)

// Scaling holds the targets the autoscaling signal sizes a model's fleet
// by (router/autoscale): TTFTTarget is the time to first token the queued
// prefill should clear within, and the SLO metrics count answers against;
// InFlightPerReplica is how many requests one replica should carry.
type Scaling struct {
	TTFTTarget         time.Duration
	InFlightPerReplica int
}

func defaultScaling() Scaling {
	p := autoscale.DefaultPolicy()
	return Scaling{TTFTTarget: p.TTFT, InFlightPerReplica: p.InFlight}
}

// Policy is the autoscale policy s configures.
func (s Scaling) Policy() autoscale.Policy {
	return autoscale.Policy{TTFT: s.TTFTTarget, InFlight: s.InFlightPerReplica}
}

// fileScaling is the scaling block.
type fileScaling struct {
	TTFTTarget         *string `hcl:"ttft_target,optional"`
	InFlightPerReplica *int    `hcl:"in_flight_per_replica,optional"`
}

func (s *Scaling) applyFile(f *fileScaling) error {
	if f == nil {
		return nil
	}
	if f.TTFTTarget != nil {
		d, err := time.ParseDuration(*f.TTFTTarget)
		if err != nil {
			return fmt.Errorf("scaling ttft_target: %w", err)
		}
		s.TTFTTarget = d
	}
	if f.InFlightPerReplica != nil {
		s.InFlightPerReplica = *f.InFlightPerReplica
	}
	return nil
}

func (s *Scaling) validate() []error {
	var errs []error
	if s.TTFTTarget <= 0 {
		errs = append(errs, fmt.Errorf("scaling ttft_target %s: must be positive", s.TTFTTarget))
	}
	if s.InFlightPerReplica < 1 {
		errs = append(errs, fmt.Errorf("scaling in_flight_per_replica %d: want at least 1", s.InFlightPerReplica))
	}
	return errs
}

// scalingSettings are Scaling's environment variables and flags.
var scalingSettings = []setting{
	{"LLMGW_SCALING_TTFT_TARGET", "scaling-ttft-target", "time to first token the autoscaling signal sizes replicas for and counts SLO attainment against", dur("scaling ttft target", func(c *Config) *time.Duration { return &c.Scaling.TTFTTarget })},
	{"LLMGW_SCALING_IN_FLIGHT_PER_REPLICA", "scaling-in-flight-per-replica", "requests one replica should carry, for the recommended replica count", integer("scaling in flight per replica", func(c *Config) *int { return &c.Scaling.InFlightPerReplica })},
}

func init() { settings = append(settings, scalingSettings...) }
