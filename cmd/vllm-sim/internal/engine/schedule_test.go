package engine

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/llmgw/llmgw/cmd/vllm-sim/internal/kvcache"
)

// stepper is an engine driven step by step on the test's goroutine: the
// real schedule and finish halves of Engine.step without the loop, so a
// test decides exactly which requests arrive before which step and reads
// what each step prefilled.
type stepper struct {
	e   *Engine
	pub *recorder
}

func newStepper(t *testing.T, budget int, groups []kvcache.GroupSpec) *stepper {
	t.Helper()
	pool, err := kvcache.New(kvcache.Config{NumBlocks: 2048, BlockSize: 16, HashSeed: "0", Groups: groups})
	if err != nil {
		t.Fatal(err)
	}
	pub := &recorder{}
	m := NewFamily(prometheus.NewRegistry()).For("m", 0, 16, 2048, 0)
	e, err := New(Config{MaxNumSeqs: 8, MaxBatchedTokens: budget}, pool, pub, m, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	return &stepper{e, pub}
}

// step submits the arrivals, then runs one whole step and returns the
// prompt tokens it computed.
func (s *stepper) step(t *testing.T, arrivals ...*Request) int {
	t.Helper()
	for _, r := range arrivals {
		if err := s.e.Submit(r); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.e.intake(t.Context()); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	sp := s.e.begin(now)
	s.e.finish(t.Context(), sp, now)
	return sp.prefill
}

// concat is a fresh slice of the parts in order.
func concat(parts ...[]uint32) []uint32 {
	var out []uint32
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// firstToken is the request's first delivered token (it must have one).
func firstToken(t *testing.T, r *Request) Token {
	t.Helper()
	select {
	case tok := <-r.Out:
		return tok
	default:
		t.Fatalf("request %q has no token yet", r.ID)
		return Token{}
	}
}

// TestScheduledBlocksAreHits pins vLLM's timing of prefix caching: blocks
// enter the cache when the step that computes them is scheduled
// (allocate_slots → cache_blocks), so a request scheduled after them, in
// the same step or the next, reuses them instead of computing them again.
// The shared prefix is 3,000 tokens: 187 full blocks of 16 (2,992 tokens).
func TestScheduledBlocksAreHits(t *testing.T) {
	shared := prompt(3000, 1)
	withTail := func(base uint32, n int) []uint32 { return concat(shared, prompt(n, base)) }
	type arrival struct {
		step   int // the step before which it arrives
		prompt []uint32
		cached int // its CachedTokens
	}
	tests := []struct {
		name     string
		budget   int
		groups   []kvcache.GroupSpec
		arrivals []arrival
		prefill  []int // prompt tokens computed per step
		hits     float64
	}{
		{
			name:   "fan-out siblings in one step share one prefill",
			budget: 8192,
			arrivals: []arrival{
				{0, withTail(100000, 100), 0},
				{0, withTail(200000, 100), 2992},
			},
			// 3,100 for the first; the second computes only from the
			// first block it does not share: 3,100 - 2,992.
			prefill: []int{3100 + 108},
			hits:    2992,
		},
		{
			name:   "identical prompts in one step",
			budget: 8192,
			arrivals: []arrival{
				{0, shared, 0},
				{0, shared, 2992},
				{0, shared, 2992},
			},
			prefill: []int{3000 + 8 + 8},
			hits:    2 * 2992,
		},
		{
			name:   "a sibling arriving mid chunked prefill hits what is scheduled",
			budget: 2100,
			arrivals: []arrival{
				{0, withTail(100000, 1000), 0},   // 4,000 tokens: 2,100 then 1,900
				{1, withTail(200000, 100), 2992}, // joins the step finishing the first
			},
			prefill: []int{2100, 1900 + 108},
			hits:    2992,
		},
		{
			name:   "unrelated prompts share nothing",
			budget: 8192,
			arrivals: []arrival{
				{0, prompt(3000, 100000), 0},
				{0, prompt(3000, 200000), 0},
			},
			prefill: []int{6000},
		},
		{
			name:   "hybrid sliding window siblings in one step",
			budget: 8192,
			groups: []kvcache.GroupSpec{{Kind: kvcache.FullAttention}, {Kind: kvcache.SlidingWindow, Window: 64}},
			arrivals: []arrival{
				{0, withTail(100000, 100), 0},
				{0, withTail(200000, 100), 2992},
			},
			prefill: []int{3100 + 108},
			hits:    2992,
		},
		{
			name:   "hybrid mamba identical prompts in one step",
			budget: 8192,
			groups: []kvcache.GroupSpec{{Kind: kvcache.FullAttention}, {Kind: kvcache.Mamba}},
			arrivals: []arrival{
				{0, shared, 0},
				{0, shared, 2992}, // the state saved at the prompt's last full block
			},
			prefill: []int{3000 + 8},
			hits:    2992,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newStepper(t, tt.budget, tt.groups)
			reqs := make([]*Request, len(tt.arrivals))
			var prefill []int
			for step := range tt.prefill {
				var now []*Request
				for i, a := range tt.arrivals {
					if a.step == step {
						reqs[i] = request(t.Context(), a.prompt, 1, 2)
						reqs[i].ID = string(rune('a' + i))
						now = append(now, reqs[i])
					}
				}
				prefill = append(prefill, s.step(t, now...))
			}
			if !slices.Equal(prefill, tt.prefill) {
				t.Errorf("prompt tokens computed per step %v; want %v", prefill, tt.prefill)
			}
			for i, a := range tt.arrivals {
				tok := firstToken(t, reqs[i])
				if tok.CachedTokens != a.cached {
					t.Errorf("request %d: %d cached tokens; want %d", i, tok.CachedTokens, a.cached)
				}
				if want := uint64(len(tt.prefill)); tok.Step != want {
					t.Errorf("request %d: first token at step %d; want %d (its prefill done in the last step)", i, tok.Step, want)
				}
			}
			if got := testutil.ToFloat64(s.e.metrics.hits); got != tt.hits {
				t.Errorf("prefix_cache_hits %v; want %v", got, tt.hits)
			}
		})
	}
}

// orderPub records each batch and, at the moment it is published, how
// many tokens the watched request has been sent.
type orderPub struct {
	mu      sync.Mutex
	watch   *Request
	batches [][]kvcache.Event
	sent    []int
}

func (p *orderPub) Publish(_ context.Context, _ float64, ev []kvcache.Event) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.batches = append(p.batches, ev)
	p.sent = append(p.sent, len(p.watch.Out))
	return nil
}

// TestSiblingEventsPrecedeItsUse runs two fan-out siblings through one
// step of a running engine: the batch announcing the shared prefix holds
// the first sibling's BlockStored before the second's (whose parent is the
// last shared block), and it is published before either's first token is
// delivered, as vLLM publishes in update_from_output before returning the
// step's outputs.
func TestSiblingEventsPrecedeItsUse(t *testing.T) {
	pool, err := kvcache.New(kvcache.Config{NumBlocks: 1024, BlockSize: 16, HashSeed: "0"})
	if err != nil {
		t.Fatal(err)
	}
	shared := prompt(3000, 1)
	a := request(t.Context(), concat(shared, prompt(100, 100000)), 1, 2)
	b := request(t.Context(), concat(shared, prompt(100, 200000)), 1, 2)
	pub := &orderPub{watch: b}
	m := NewFamily(prometheus.NewRegistry()).For("m", 0, 16, 1024, 0)
	e, err := New(Config{MaxNumSeqs: 4, MaxBatchedTokens: 8192}, pool, pub, m, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); _ = e.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })

	// Submitted from the engine's goroutine between steps: both wait for
	// the same step.
	var subErr error
	if err := e.Do(t.Context(), func(*kvcache.Pool) {
		if subErr = e.Submit(a); subErr == nil {
			subErr = e.Submit(b)
		}
	}); err != nil || subErr != nil {
		t.Fatalf("submit: %v %v", err, subErr)
	}
	ta, tb := collect(t, a), collect(t, b)
	if ta[0].Step != tb[0].Step || tb[0].CachedTokens != 2992 {
		t.Fatalf("first tokens at steps %d and %d, the second with %d cached; want one step and 2992", ta[0].Step, tb[0].Step, tb[0].CachedTokens)
	}
	if err := e.Do(t.Context(), func(*kvcache.Pool) {}); err != nil {
		t.Fatal(err)
	}

	pub.mu.Lock()
	defer pub.mu.Unlock()
	if len(pub.batches) == 0 {
		t.Fatal("no batch published")
	}
	first := pub.batches[0]
	if pub.sent[0] != 0 {
		t.Errorf("the prefill step's batch was published after %d tokens reached the sibling; want before any", pub.sent[0])
	}
	// The first store is a's whole prompt (193 full blocks); b's store
	// starts at its first own block, 187, chained to a's block 186.
	if len(first) != 2 || first[0].Kind != kvcache.BlockStored || first[1].Kind != kvcache.BlockStored {
		t.Fatalf("prefill batch %v; want two BlockStored", kindsOf(first))
	}
	if len(first[0].Hashes) != 193 || first[0].Parent != nil {
		t.Fatalf("first store has %d blocks, parent %v; want a's 193 from the root", len(first[0].Hashes), first[0].Parent)
	}
	if p := first[1].Parent; p == nil || *p != first[0].Hashes[186] || len(first[1].Hashes) != 6 {
		t.Errorf("second store has %d blocks after %v; want b's 6 after a's block 186 (%v)", len(first[1].Hashes), p, first[0].Hashes[186])
	}
}

func kindsOf(ev []kvcache.Event) []kvcache.Kind {
	out := make([]kvcache.Kind, len(ev))
	for i, e := range ev {
		out[i] = e.Kind
	}
	return out
}
