package scheduler

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
)

// PickerParams tune the max-score picker.
type PickerParams struct {
	// Temperature 0 picks the highest total (random among ties). Above 0 it
	// samples from a softmax over totals: higher spreads load more.
	Temperature float64 `json:"temperature"`
}

func (p *PickerParams) validate() error {
	if p.Temperature < 0 || math.IsInf(p.Temperature, 0) || math.IsNaN(p.Temperature) {
		return fmt.Errorf("temperature %g must be a finite number >= 0", p.Temperature)
	}
	return nil
}

// tieEpsilon treats totals this close as equal.
const tieEpsilon = 1e-9

// MaxScorePicker picks the candidate with the highest total score, uniformly
// at random among ties, or samples a softmax when Temperature > 0. Its
// randomness comes from an injected source so tests are deterministic.
type MaxScorePicker struct {
	name TypedName
	p    PickerParams

	mu  sync.Mutex
	rnd *rand.Rand
}

func newMaxScorePicker(name TypedName, p PickerParams, src rand.Source) *MaxScorePicker {
	if src == nil {
		src = rand.NewPCG(rand.Uint64(), rand.Uint64())
	}
	return &MaxScorePicker{name: name, p: p, rnd: rand.New(src)}
}

func (p *MaxScorePicker) TypedName() TypedName { return p.name }

func (p *MaxScorePicker) Pick(_ context.Context, _ *Request, _ []Candidate, totals []float64) int {
	if len(totals) == 0 {
		return -1
	}
	best := math.Inf(-1)
	for _, t := range totals {
		best = max(best, t)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.p.Temperature > 0 {
		return p.softmax(totals, best)
	}
	ties := 0
	for _, t := range totals {
		if t >= best-tieEpsilon {
			ties++
		}
	}
	n := p.rnd.IntN(ties)
	for i, t := range totals {
		if t >= best-tieEpsilon {
			if n == 0 {
				return i
			}
			n--
		}
	}
	return -1 // unreachable
}

func (p *MaxScorePicker) softmax(totals []float64, best float64) int {
	sum := 0.0
	w := make([]float64, len(totals))
	for i, t := range totals {
		w[i] = math.Exp((t - best) / p.p.Temperature)
		sum += w[i]
	}
	r := p.rnd.Float64() * sum
	for i, x := range w {
		if r < x {
			return i
		}
		r -= x
	}
	return len(totals) - 1
}

var _ Picker = (*MaxScorePicker)(nil)
