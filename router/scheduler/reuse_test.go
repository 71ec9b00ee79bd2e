package scheduler

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/llmgw/llmgw/router/index"
	"github.com/llmgw/llmgw/router/load"
)

// reuseFleet is eight exact replicas holding staggered prefixes of prompt,
// one approx replica and one with an open breaker (so a filter drops it).
func reuseFleet(t *testing.T, e *env, prompt []uint64) []Candidate {
	t.Helper()
	var cands []Candidate
	for r := range 8 {
		id := fmt.Sprintf("r%d", r)
		e.store(t, id, index.Tier(r%2), prompt[:len(prompt)*r/8])
		c := cand(id, ModeExact)
		c.Load = load.Load{InFlight: r % 3, Waiting: float64(r % 2)}
		cands = append(cands, c)
	}
	sick := cand("sick", ModeExact)
	sick.Healthy = false
	return append(cands, cand("approx", ModeApprox), sick)
}

// TestResetRequestDecidesAlike: a reused Request (Reset between requests)
// gets the same decisions as a fresh Request per request, although its
// decisions share scratch memory.
func TestResetRequestDecidesAlike(t *testing.T) {
	prompt := keys(1, 64)
	fresh, reused := newEnv(t, DefaultConfig()), newEnv(t, DefaultConfig())
	cands := reuseFleet(t, fresh, prompt)
	reuseFleet(t, reused, prompt)
	var req Request
	for i := range 20 {
		next := Request{Model: "m", Keys: prompt[:8+i*2], BlockTokens: 16, SessionID: fmt.Sprint("s", i%3)}
		want := fresh.route(t, &next, cands)
		req.Reset(next)
		got := reused.route(t, &req, cands)
		if d := cmp.Diff(want, got); d != "" {
			t.Fatalf("request %d: reused request decided differently (-fresh +reused):\n%s", i, d)
		}
	}
}

// TestFallbacksCapped: a Request that asks for k fallbacks gets the first
// k of the full list, with the same chosen replica and scores.
func TestFallbacksCapped(t *testing.T) {
	prompt := keys(1, 64)
	e := newEnv(t, DefaultConfig())
	cands := reuseFleet(t, e, prompt)
	for k := 1; k <= 9; k++ {
		full, err := e.s.Schedule(t.Context(), &Request{Model: "m", Keys: prompt, BlockTokens: 16}, cands)
		if err != nil {
			t.Fatal(err)
		}
		capped, err := e.s.Schedule(t.Context(), &Request{Model: "m", Keys: prompt, BlockTokens: 16, Fallbacks: k}, cands)
		if err != nil {
			t.Fatal(err)
		}
		want := full.Fallbacks[:min(k, len(full.Fallbacks))]
		if d := cmp.Diff(full.Chosen, capped.Chosen); d != "" {
			t.Fatalf("k %d: chosen differs (-full +capped):\n%s", k, d)
		}
		if d := cmp.Diff(want, capped.Fallbacks); d != "" {
			t.Fatalf("k %d: fallbacks are not the full list's first k (-want +got):\n%s", k, d)
		}
	}
}

// TestScheduleReusedRequestAllocatesNothing: the decision path allocates
// nothing once a reused Request holds its scratch memory (GC pauses are
// what a router's p99 is made of).
func TestScheduleReusedRequestAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector makes sync.Pool drop items")
	}
	prompt := keys(1, 512)
	e := newEnv(t, DefaultConfig())
	cands := reuseFleet(t, e, prompt)
	var req Request
	schedule := func() {
		req.Reset(Request{Model: "m", Keys: prompt, BlockTokens: 16, PromptTokens: 16 * len(prompt)})
		d, err := e.s.Schedule(t.Context(), &req, cands)
		// r6 holds 6/8 of the prompt on the GPU, r7 7/8 on the CPU only.
		if err != nil || d.Chosen.Candidate.ID != "r6" {
			t.Fatalf("decision %+v, %v; want r6", d.Chosen, err)
		}
	}
	schedule()
	if n := testing.AllocsPerRun(50, schedule); n != 0 {
		t.Errorf("Schedule allocates %v times per decision; want 0", n)
	}
}

// TestHistoryMatchStrided: match reads one key in matchStride, yet finds
// the depths that reading every key finds, for histories recorded as
// routing records them (whole prompts, from their first block), across
// expiries and replicas dropping out at every offset.
func TestHistoryMatchStrided(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	for trial := range 200 {
		c := newClock()
		h := NewHistory(time.Minute, 1<<20, c.now)
		chains := [][]uint64{keys(1, 100), append(keys(1, 1+uint64(r.IntN(60))), keys(500, 600)...)}
		for range 1 + r.IntN(8) {
			ch := chains[r.IntN(len(chains))]
			h.Record(ch[:1+r.IntN(len(ch))], fmt.Sprint("r", r.IntN(4)))
			c.advance(time.Duration(r.IntN(40)) * time.Second)
		}
		cutoff := h.ms(c.now().Add(-h.ttl))
		for _, prompt := range chains {
			want := map[string]int{}
			for id, name := range h.names {
				d := 0
				for d < len(prompt) && (h.cur.has(prompt[d], uint64(id), cutoff) || h.prev.has(prompt[d], uint64(id), cutoff)) {
					d++
				}
				if d > 0 {
					want[name] = d
				}
			}
			got := map[string]int{}
			h.Match(prompt, func(replica string, depth int) { got[replica] = depth })
			if d := cmp.Diff(want, got); d != "" {
				t.Fatalf("trial %d: strided match differs from reading every key (-want +got):\n%s", trial, d)
			}
		}
	}
}

// TestRankOrder checks the integer-key ranking against a stable sort by
// total, best first, on totals with many ties, around the 64-candidate
// switch to the comparison sort.
func TestRankOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	for _, n := range []int{0, 1, 2, 5, 63, 64, 65, 100} {
		for trial := range 20 {
			totals := make([]float64, n)
			for i := range totals {
				totals[i] = float64(r.IntN(5)) * 0.37 // ties, and exact zeros
				if trial%2 == 1 {
					totals[i] = r.Float64() * 4
				}
			}
			var order, want []int
			for j := range n {
				order = append(order, j)
			}
			want = slices.Clone(order)
			slices.SortStableFunc(want, func(a, b int) int {
				switch {
				case totals[a] > totals[b]:
					return -1
				case totals[a] < totals[b]:
					return 1
				}
				return 0
			})
			rankOrder(order, totals, nil)
			if !slices.Equal(order, want) {
				t.Fatalf("n=%d trial %d: order %v; want %v (totals %v)", n, trial, order, want, totals)
			}
		}
	}
}

// TestLoadScoresAsDocumented checks the load scorer, which multiplies by
// weight/max, against its documented formula (each signal divided by its
// maximum over the candidates, weighted, as a share of the weights'
// sum), including signals that scrapes report as NaN, infinite or
// negative, which count as absent.
func TestLoadScoresAsDocumented(t *testing.T) {
	ratio := func(x, max float64) float64 {
		if max <= 0 || x <= 0 {
			return 0
		}
		return clamp01(x / max)
	}
	r := rand.New(rand.NewPCG(9, 10))
	odd := []float64{math.NaN(), math.Inf(1), -1, 0}
	metric := func() float64 {
		if r.IntN(8) == 0 {
			return odd[r.IntN(len(odd))]
		}
		return r.Float64() * 20
	}
	s := &LoadScorer{p: defaultLoadParams()}
	p := s.p
	for trial := range 200 {
		cands := make([]Candidate, 1+r.IntN(70))
		var mx load.Load
		for i := range cands {
			l := load.Load{InFlight: r.IntN(9), InFlightTokens: r.IntN(5000), Waiting: metric(), Running: metric(), KVUsage: r.Float64()}
			cands[i].Load = l
			mx.InFlight, mx.InFlightTokens = max(mx.InFlight, l.InFlight), max(mx.InFlightTokens, l.InFlightTokens)
			mx.Waiting, mx.Running = max(mx.Waiting, l.Waiting), max(mx.Running, l.Running)
		}
		got := make([]float64, len(cands))
		s.Score(t.Context(), nil, cands, got)
		sum := p.InFlight + p.InFlightTokens + p.Waiting + p.Running + p.KVUsage
		for i, c := range cands {
			l := c.Load
			busy := p.InFlight*ratio(float64(l.InFlight), float64(mx.InFlight)) +
				p.InFlightTokens*ratio(float64(l.InFlightTokens), float64(mx.InFlightTokens)) +
				p.Waiting*ratio(l.Waiting, mx.Waiting) + p.Running*ratio(l.Running, mx.Running) +
				p.KVUsage*clamp01(l.KVUsage)
			if want := 1 - busy/sum; math.Abs(got[i]-want) > 1e-12 {
				t.Fatalf("trial %d, candidate %d (load %+v, max %+v): score %v; want %v", trial, i, l, mx, got[i], want)
			}
		}
	}
}
