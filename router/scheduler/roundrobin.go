package scheduler

import (
	"cmp"
	"context"
	"slices"
	"sync/atomic"
)

// RoundRobinPicker ignores scores and hands requests to the candidates in
// turn, in replica-ID order, the baseline every prefix-aware router is
// measured against. Each router keeps its own turn, so several routers
// together still spread requests evenly.
type RoundRobinPicker struct {
	name TypedName
	next atomic.Uint64
}

func (p *RoundRobinPicker) TypedName() TypedName { return p.name }

// Pick returns the candidate whose turn it is.
func (p *RoundRobinPicker) Pick(_ context.Context, _ *Request, cands []Candidate, _ []float64) int {
	if len(cands) == 0 {
		return -1
	}
	order := make([]int, len(cands))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(cands[a].ID, cands[b].ID) })
	n := p.next.Add(1) - 1
	return order[n%uint64(len(order))]
}

var _ Picker = (*RoundRobinPicker)(nil)
