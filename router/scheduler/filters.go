package scheduler

import (
	"context"
	"fmt"
)

// ModelFilter keeps the candidates serving the request's model.
type ModelFilter struct{ name TypedName }

func (f *ModelFilter) TypedName() TypedName { return f.name }

func (f *ModelFilter) Filter(_ context.Context, req *Request, cands []Candidate) []Candidate {
	return keep(cands, func(c *Candidate) bool { return c.Model == req.Model })
}

// HealthyFilter keeps healthy candidates (breaker closed) that are not
// draining: a draining replica (its Consul check warns, or it or its node
// is in maintenance mode) finishes its streams but takes nothing new, and
// keeps its KV state in the index for when it passes again.
type HealthyFilter struct{ name TypedName }

func (f *HealthyFilter) TypedName() TypedName { return f.name }

func (f *HealthyFilter) Filter(_ context.Context, _ *Request, cands []Candidate) []Candidate {
	return keep(cands, func(c *Candidate) bool { return c.Healthy && !c.Draining })
}

// BusyParams are the BusyFilter's thresholds; a zero threshold is off.
type BusyParams struct {
	MaxInFlight int     `json:"max_in_flight"`
	MaxWaiting  float64 `json:"max_waiting"`
	MaxKVUsage  float64 `json:"max_kv_usage"`
}

func (p *BusyParams) validate() error {
	if p.MaxInFlight < 0 || p.MaxWaiting < 0 {
		return fmt.Errorf("thresholds must not be negative")
	}
	if p.MaxKVUsage < 0 || p.MaxKVUsage > 1 {
		return fmt.Errorf("max_kv_usage %g is not in [0, 1]", p.MaxKVUsage)
	}
	return nil
}

// BusyFilter drops candidates over any busy threshold. When it leaves none,
// Schedule reports ErrAllBusy, so the router queues or answers 429.
type BusyFilter struct {
	name TypedName
	p    BusyParams
}

func (f *BusyFilter) TypedName() TypedName { return f.name }
func (f *BusyFilter) busy()                {}

func (f *BusyFilter) Filter(_ context.Context, _ *Request, cands []Candidate) []Candidate {
	return keep(cands, func(c *Candidate) bool {
		l := c.Load
		return !(f.p.MaxInFlight > 0 && l.InFlight >= f.p.MaxInFlight ||
			f.p.MaxWaiting > 0 && l.Waiting >= f.p.MaxWaiting ||
			f.p.MaxKVUsage > 0 && l.KVUsage >= f.p.MaxKVUsage)
	})
}

// keep filters cands in place, preserving order.
func keep(cands []Candidate, ok func(*Candidate) bool) []Candidate {
	n := 0
	for i := range cands {
		if ok(&cands[i]) {
			if n != i { // survivors before the first drop stay where they are
				cands[n] = cands[i]
			}
			n++
		}
	}
	return cands[:n]
}

var (
	_ Filter = (*ModelFilter)(nil)
	_ Filter = (*HealthyFilter)(nil)
	_ Filter = (*BusyFilter)(nil)
)
