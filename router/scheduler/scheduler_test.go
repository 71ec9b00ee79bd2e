package scheduler

import (
	"context"
	"errors"
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

// clock is a fake, settable clock.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

func newClock() *clock { return &clock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

func keys(from, to uint64) []uint64 {
	var ks []uint64
	for k := from; k <= to; k++ {
		ks = append(ks, k*0x9E3779B97F4A7C15)
	}
	return ks
}

func cand(id string, mode Mode) Candidate {
	return Candidate{ID: id, Model: "m", Mode: mode, Healthy: true}
}

type env struct {
	clock *clock
	idx   *index.Models
	s     *Scheduler
}

func newEnv(t *testing.T, cfg Config) *env {
	t.Helper()
	e := &env{clock: newClock(), idx: index.NewModels(index.Options{})}
	r := NewRegistry()
	if err := RegisterBuiltins(r); err != nil {
		t.Fatal(err)
	}
	s, err := r.Build(cfg, Deps{Index: e.idx, Now: e.clock.now, Rand: rand.NewPCG(1, 2)})
	if err != nil {
		t.Fatal(err)
	}
	e.s = s
	return e
}

func (e *env) store(t *testing.T, replica string, tier index.Tier, ks []uint64) {
	t.Helper()
	if err := e.idx.For("m").Update(replica, []index.Change{{Tier: tier, Add: ks}}); err != nil {
		t.Fatal(err)
	}
}

func (e *env) route(t *testing.T, req *Request, cands []Candidate) Decision {
	t.Helper()
	d, err := e.s.Schedule(context.Background(), req, cands)
	if err != nil {
		t.Fatal(err)
	}
	e.s.Routed(req, &d.Chosen.Candidate)
	return d
}

func TestScheduleErrors(t *testing.T) {
	cfg := DefaultConfig()
	cfg.Filters = append(cfg.Filters, Spec{Type: "busy", Params: []byte(`{"max_in_flight": 2}`)})
	e := newEnv(t, cfg)
	req := &Request{Model: "m"}
	ctx := context.Background()
	busy := cand("a", ModeLoad)
	busy.Load.InFlight = 2
	sick := cand("b", ModeLoad)
	sick.Healthy = false
	draining := cand("c", ModeLoad)
	draining.Draining = true
	other := cand("d", ModeLoad)
	other.Model = "other"
	tests := []struct {
		name  string
		cands []Candidate
		want  error
	}{
		{"no candidates", nil, ErrNoReplica},
		{"wrong model", []Candidate{other}, ErrNoReplica},
		{"unhealthy or draining", []Candidate{sick, draining}, ErrNoReplica},
		{"all busy", []Candidate{busy}, ErrAllBusy},
		{"one free", []Candidate{busy, cand("e", ModeLoad)}, nil},
	}
	for _, tc := range tests {
		d, err := e.s.Schedule(ctx, req, tc.cands)
		if !errors.Is(err, tc.want) {
			t.Errorf("%s: got %v; want %v", tc.name, err, tc.want)
		}
		if err == nil && d.Chosen.Candidate.ID != "e" {
			t.Errorf("%s: chose %s; want e", tc.name, d.Chosen.Candidate.ID)
		}
	}
	if _, err := e.s.Schedule(ctx, req, []Candidate{busy, cand("e", ModeLoad)}); err != nil {
		t.Fatal(err)
	}
}

func TestExactPrefixRouting(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	prompt := keys(1, 10)
	e.store(t, "gpu-half", index.GPU, prompt[:5])
	e.store(t, "cpu-full", index.CPU, prompt)
	e.store(t, "gpu-full", index.GPU, prompt)
	cands := []Candidate{cand("gpu-half", ModeExact), cand("cpu-full", ModeExact), cand("gpu-full", ModeExact), cand("cold", ModeExact)}
	req := &Request{Model: "m", Keys: prompt, BlockTokens: 16}
	d := e.route(t, req, cands)
	if d.Chosen.Candidate.ID != "gpu-full" || d.Chosen.Mode != ModeExact || d.CachedTokens(req) != 160 {
		t.Fatalf("chose %s mode %s cached %d tokens; want gpu-full, exact, 160", d.Chosen.Candidate.ID, d.Chosen.Mode, d.CachedTokens(req))
	}
	got := map[string]float64{}
	for _, r := range append([]Ranked{d.Chosen}, d.Fallbacks...) {
		got[r.Candidate.ID] = d.Score(r, "prefix")
	}
	want := map[string]float64{"gpu-full": 1, "cpu-full": 0.75, "gpu-half": 0.5, "cold": 0}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("prefix scores (-want +got):\n%s", diff)
	}
	if d.Fallbacks[0].Candidate.ID != "cpu-full" {
		t.Errorf("first fallback %s; want cpu-full", d.Fallbacks[0].Candidate.ID)
	}
}

// TestSpeculativeCredit: a burst of siblings follows the first request to
// the same replica before any KV event arrives; the credit expires.
func TestSpeculativeCredit(t *testing.T) {
	e := newEnv(t, Config{Scorers: []Spec{{Type: "prefix", Weight: 1, Params: []byte(`{"speculative_ttl":"2s"}`)}}, Picker: Spec{Type: "max-score"}})
	cands := []Candidate{cand("a", ModeExact), cand("b", ModeExact), cand("c", ModeExact)}
	prompt := keys(1, 8)
	first := e.route(t, &Request{Model: "m", Keys: prompt}, cands).Chosen.Candidate.ID
	for i := 0; i < 5; i++ {
		sib := append(append([]uint64(nil), prompt...), keys(100+uint64(i), 100+uint64(i))...)
		if got := e.route(t, &Request{Model: "m", Keys: sib}, cands).Chosen.Candidate.ID; got != first {
			t.Fatalf("sibling %d went to %s; want %s with the burst", i, got, first)
		}
	}
	e.clock.advance(3 * time.Second)
	d, err := e.s.Schedule(context.Background(), &Request{Model: "m", Keys: prompt}, cands)
	if err != nil {
		t.Fatal(err)
	}
	if d.Score(d.Chosen, "prefix") != 0 {
		t.Errorf("after the TTL the credit remains: %+v", d.Chosen)
	}
}

// TestApproxRouting: replicas without events are routed by what the router
// sent where, within the TTL.
func TestApproxRouting(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	cands := []Candidate{cand("a", ModeApprox), cand("b", ModeApprox), cand("c", ModeApprox)}
	prompt := keys(1, 20)
	first := e.route(t, &Request{Model: "m", Keys: prompt}, cands)
	if first.Chosen.Mode != ModeApprox || first.Chosen.CachedBlocks != 0 {
		t.Errorf("first request: mode %s cached %d; want approx, 0", first.Chosen.Mode, first.Chosen.CachedBlocks)
	}
	again := e.route(t, &Request{Model: "m", Keys: prompt}, cands)
	if again.Chosen.Candidate.ID != first.Chosen.Candidate.ID || again.Chosen.CachedBlocks != 20 {
		t.Errorf("repeat went to %s with %d cached blocks; want %s with 20", again.Chosen.Candidate.ID, again.Chosen.CachedBlocks, first.Chosen.Candidate.ID)
	}
	e.clock.advance(121 * time.Second)
	late, err := e.s.Schedule(context.Background(), &Request{Model: "m", Keys: prompt}, cands)
	if err != nil {
		t.Fatal(err)
	}
	if late.Chosen.CachedBlocks != 0 {
		t.Errorf("after the TTL: %d cached blocks predicted; want 0", late.Chosen.CachedBlocks)
	}
}

// TestNoTokenizerFallsBackToApprox: an exact replica is routed in approx
// mode on text-chunk keys while the request has no canonical keys.
func TestNoTokenizerFallsBackToApprox(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	cands := []Candidate{cand("a", ModeExact), cand("b", ModeExact)}
	text := keys(500, 509)
	first := e.route(t, &Request{Model: "m", ApproxKeys: text}, cands)
	again := e.route(t, &Request{Model: "m", ApproxKeys: text}, cands)
	if again.Chosen.Mode != ModeApprox || again.Chosen.Candidate.ID != first.Chosen.Candidate.ID || again.Chosen.CachedBlocks != 10 {
		t.Errorf("got %s mode %s cached %d; want %s approx 10", again.Chosen.Candidate.ID, again.Chosen.Mode, again.Chosen.CachedBlocks, first.Chosen.Candidate.ID)
	}
}

// TestNoHitSpreads: requests that hit nowhere spread over idle replicas
// instead of piling on one (sglang #32983).
func TestNoHitSpreads(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	tr := load.NewTracker()
	ids := []string{"a", "b", "c", "d"}
	count := map[string]int{}
	var ends []func()
	for i := 0; i < 8; i++ {
		var cands []Candidate
		for _, id := range ids {
			c := cand(id, ModeExact)
			c.Load = tr.Load(id)
			cands = append(cands, c)
		}
		d := e.route(t, &Request{Model: "m", Keys: keys(uint64(1000*i), uint64(1000*i+5)), PromptTokens: 96}, cands)
		count[d.Chosen.Candidate.ID]++
		ends = append(ends, tr.Begin(d.Chosen.Candidate.ID, 96))
	}
	for _, id := range ids {
		if count[id] != 2 {
			t.Errorf("replica %s got %d of 8 concurrent no-hit requests; want 2 each (%v)", id, count[id], count)
		}
	}
	for _, end := range ends {
		end()
		end() // a second call is harmless
	}
	for _, id := range ids {
		if l := tr.Load(id); l != (load.Load{}) {
			t.Errorf("replica %s load after all ended = %+v; want zero", id, l)
		}
	}
}

func TestSessionAffinity(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	cands := []Candidate{cand("a", ModeLoad), cand("b", ModeLoad), cand("c", ModeLoad)}
	first := e.route(t, &Request{Model: "m", SessionID: "s1"}, cands).Chosen.Candidate.ID
	for i := 0; i < 5; i++ {
		e.clock.advance(time.Minute)
		if got := e.route(t, &Request{Model: "m", SessionID: "s1"}, cands).Chosen.Candidate.ID; got != first {
			t.Fatalf("request %d of session went to %s; want %s", i, got, first)
		}
	}
	// The session's replica leaves: it moves and sticks to the new one.
	var rest []Candidate
	for _, c := range cands {
		if c.ID != first {
			rest = append(rest, c)
		}
	}
	moved := e.route(t, &Request{Model: "m", SessionID: "s1"}, rest).Chosen.Candidate.ID
	if got := e.route(t, &Request{Model: "m", SessionID: "s1"}, cands).Chosen.Candidate.ID; got != moved {
		t.Errorf("after moving, session went to %s; want %s", got, moved)
	}
}

// TestConcurrentScheduling runs decisions and routing reports from many
// goroutines at once, as the router's handlers do (run with -race).
func TestConcurrentScheduling(t *testing.T) {
	r := NewRegistry()
	if err := RegisterBuiltins(r); err != nil {
		t.Fatal(err)
	}
	idx := index.NewModels(index.Options{})
	s, err := r.Build(DefaultConfig(), Deps{Index: idx, Rand: rand.NewPCG(1, 2)})
	if err != nil {
		t.Fatal(err)
	}
	cands := []Candidate{cand("a", ModeExact), cand("b", ModeApprox), cand("c", ModeExact)}
	done := make(chan error)
	for g := 0; g < 8; g++ {
		go func() {
			var err error
			for i := 0; i < 200 && err == nil; i++ {
				req := &Request{Model: "m", Keys: keys(uint64(i%7), uint64(i%7+20)), SessionID: fmt.Sprint("s", i%5)}
				var d Decision
				if d, err = s.Schedule(context.Background(), req, cands); err == nil {
					s.Routed(req, &d.Chosen.Candidate)
				}
				if i%50 == 0 {
					err = errors.Join(err, idx.For("m").Update("a", []index.Change{{Tier: index.GPU, Add: keys(0, 30)}}))
				}
			}
			done <- err
		}()
	}
	for g := 0; g < 8; g++ {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

// TestTopOrderIsRankOrdersPrefix: the k fallbacks topOrder picks are
// rankOrder's first k, in its order, ties (equal totals) included, for
// candidate counts on both sides of its 64-candidate fast path.
func TestTopOrderIsRankOrdersPrefix(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for trial := range 2000 {
		n := 1 + rng.IntN(300)
		totals := make([]float64, n)
		for i := range totals {
			totals[i] = float64(rng.IntN(6)) / 4 // few values: many ties
		}
		pick := rng.IntN(n)
		var order []int
		for j := range n {
			if j != pick {
				order = append(order, j)
			}
		}
		if len(order) == 0 {
			continue
		}
		k := 1 + rng.IntN(len(order))
		full := slices.Clone(order)
		rankOrder(full, totals, nil)
		top := slices.Clone(order)
		topOrder(top, totals, k, nil)
		if !slices.Equal(top[:k], full[:k]) {
			t.Fatalf("trial %d (n %d, k %d): topOrder %v; rankOrder's first k %v", trial, n, k, top[:k], full[:k])
		}
	}
}

// TestDecisionWeights: each ranked candidate's Total is the sum of its
// scorers' parts, Weights[i] * Scores[i], with the weights in the
// configured order (what a trace reports of the winning score).
func TestDecisionWeights(t *testing.T) {
	e := newEnv(t, DefaultConfig())
	e.store(t, "a", index.GPU, keys(1, 8))
	cands := []Candidate{cand("a", ModeExact), cand("b", ModeExact)}
	d := e.route(t, &Request{Model: "m", Keys: keys(1, 12)}, cands)
	cfg := DefaultConfig()
	if len(d.Weights) != len(cfg.Scorers) || len(d.Weights) != len(d.Scorers) {
		t.Fatalf("weights %v for scorers %v; want one per configured scorer", d.Weights, d.Scorers)
	}
	for i, s := range cfg.Scorers {
		if d.Weights[i] != s.Weight {
			t.Errorf("weight %d (%s) %g; want %g", i, d.Scorers[i], d.Weights[i], s.Weight)
		}
	}
	for _, r := range append([]Ranked{d.Chosen}, d.Fallbacks...) {
		sum := 0.0
		for i, w := range d.Weights {
			sum += w * r.Scores[i]
		}
		if math.Abs(sum-r.Total) > 1e-9 {
			t.Errorf("%s: parts sum to %g; total %g", r.Candidate.ID, sum, r.Total)
		}
	}
	if d.Chosen.Candidate.ID != "a" || d.Score(d.Chosen, "prefix") == 0 {
		t.Errorf("chose %s with prefix score %g; want a, which holds the prefix", d.Chosen.Candidate.ID, d.Score(d.Chosen, "prefix"))
	}
}
