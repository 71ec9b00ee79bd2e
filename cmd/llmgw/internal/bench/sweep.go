package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench/report"
	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench/workload"
)

// DefaultPolicy and Baseline name llmgw's default and the round-robin
// baseline among Policies, as a sweep's verdict needs them.
const (
	DefaultPolicy = "precise-prefix"
	Baseline      = "round-robin"
)

// SweepOptions describe a rate sweep: Options (its Workload and Rate
// unused) run once per rate, on a workload Build makes for that rate.
type SweepOptions struct {
	Options
	// Rates are the offered arrival rates, rising.
	Rates []float64
	// Build returns the workload at one rate; the same requests (same
	// seed) at every rate, only their arrival times scaled, keep the
	// rates comparable.
	Build func(rate float64) (workload.Workload, error)
	// Noise is the relative goodput difference the verdict ignores.
	Noise float64
	// OnRate is called as each rate starts; may be nil.
	OnRate func(rate float64)
}

// Sweep runs every policy at every rate on one fleet, through Run: each
// (policy, rate) pair gets new routers and empty caches, so every run
// starts cold and equal.
func Sweep(ctx context.Context, f Fleet, o SweepOptions) (*report.Sweep, error) {
	if len(o.Rates) == 0 || o.Build == nil {
		return nil, errors.New("bench: a sweep needs rates and a workload builder")
	}
	s := &report.Sweep{Command: o.Command, Setup: o.Setup, SLO: o.SLO, Baseline: Baseline, Default: DefaultPolicy, Noise: o.Noise,
		Peers: PeerNames()}
	for _, rate := range o.Rates {
		w, err := o.Build(rate)
		if err != nil {
			return nil, fmt.Errorf("bench: workload at %g req/s: %w", rate, err)
		}
		if o.OnRate != nil {
			o.OnRate(rate)
		}
		run := o.Options
		run.Workload, run.Rate = w, rate
		rep, err := Run(ctx, f, run)
		if err != nil {
			return nil, fmt.Errorf("rate %g: %w", rate, err)
		}
		s.Workload = rep.Workload
		s.Rates = append(s.Rates, *rep)
	}
	return s, nil
}

// PeerNames are the names of the peers' published policies, which a
// sweep's verdict weighs the default against.
func PeerNames() []string {
	var names []string
	for _, p := range peerPolicies() {
		names = append(names, p.Name)
	}
	return names
}

// ParseRates parses a comma list of rising positive rates ("2,4,8").
func ParseRates(list string) ([]float64, error) {
	var rates []float64
	for _, f := range strings.Split(list, ",") {
		r, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
		if err != nil || !(r > 0) || r > 1e6 {
			return nil, fmt.Errorf("rate %q: want a positive number of requests per second", f)
		}
		if len(rates) > 0 && r <= rates[len(rates)-1] {
			return nil, fmt.Errorf("rates %q: want them rising", list)
		}
		rates = append(rates, r)
	}
	return rates, nil
}

// hostLoad is the 1-minute load average (0 where /proc/loadavg is
// missing).
func hostLoad() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		return 0
	}
	load, _ := strconv.ParseFloat(fields[0], 64)
	return load
}
