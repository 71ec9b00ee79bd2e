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
	"github.com/llmgw/llmgw/internal/testkit/poll"
)

// recorder keeps published batches; the real ZMQ publisher is tested in
// kvpub and end to end in cmd/vllm-sim.
type recorder struct {
	mu      sync.Mutex
	batches [][]kvcache.Event
}

func (r *recorder) Publish(_ context.Context, _ float64, ev []kvcache.Event) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.batches = append(r.batches, ev)
	return nil
}

func (r *recorder) kinds() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, b := range r.batches {
		for _, e := range b {
			out = append(out, string(e.Kind))
		}
	}
	return out
}

type harness struct {
	e   *Engine
	pub *recorder
	reg *prometheus.Registry
}

func start(t *testing.T, cfg Config, blocks int) *harness {
	t.Helper()
	pool, err := kvcache.New(kvcache.Config{NumBlocks: blocks, BlockSize: 4, HashSeed: "0"})
	if err != nil {
		t.Fatal(err)
	}
	if cfg.MaxBatchedTokens == 0 {
		cfg.MaxBatchedTokens = 8192
	}
	reg := prometheus.NewRegistry()
	pub := &recorder{}
	m := NewFamily(reg).For("m", 0, 4, blocks)
	e, err := New(cfg, pool, pub, m, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = e.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return &harness{e, pub, reg}
}

// settle returns once the engine has finished the step in flight, events
// published: Do runs only between steps.
func (h *harness) settle(t *testing.T) {
	t.Helper()
	if err := h.e.Do(t.Context(), func(*kvcache.Pool) {}); err != nil {
		t.Fatal(err)
	}
}

func request(ctx context.Context, prompt []uint32, out ...uint32) *Request {
	return &Request{
		Ctx: ctx, Prompt: prompt, Output: out, FinishReason: "length",
		Arrival: time.Now(), Out: make(chan Token, len(out)+1),
	}
}

func prompt(n int, base uint32) []uint32 {
	p := make([]uint32, n)
	for i := range p {
		p[i] = base + uint32(i)
	}
	return p
}

// collect waits for the request's final token.
func collect(t *testing.T, r *Request) []Token {
	t.Helper()
	var toks []Token
	timeout := time.After(poll.Timeout)
	for {
		select {
		case tok := <-r.Out:
			toks = append(toks, tok)
			if tok.Final {
				return toks
			}
		case <-timeout:
			t.Fatalf("request incomplete after %v; got %d tokens", poll.Timeout, len(toks))
		}
	}
}

func ids(toks []Token) []uint32 {
	var out []uint32
	for _, t := range toks {
		if t.FinishReason != "abort" {
			out = append(out, t.ID)
		}
	}
	return out
}

func TestGeneratesOutputAndReportsCachedTokens(t *testing.T) {
	h := start(t, Config{MaxNumSeqs: 4}, 64)
	p := prompt(10, 100)
	for i, wantCached := range []int{0, 8} {
		r := request(t.Context(), p, 7, 8, 9)
		if err := h.e.Submit(r); err != nil {
			t.Fatal(err)
		}
		toks := collect(t, r)
		if got := ids(toks); !slices.Equal(got, []uint32{7, 8, 9}) {
			t.Errorf("run %d: output %v; want [7 8 9]", i, got)
		}
		last := toks[len(toks)-1]
		if last.FinishReason != "length" || last.CachedTokens != wantCached {
			t.Errorf("run %d: finish %q cached %d; want length and %d", i, last.FinishReason, last.CachedTokens, wantCached)
		}
	}
	if got := testutil.ToFloat64(h.e.metrics.hits); got != 8 {
		t.Errorf("prefix_cache_hits %v; want 8", got)
	}
	if got := testutil.ToFloat64(h.e.metrics.queries); got != 20 {
		t.Errorf("prefix_cache_queries %v; want 20", got)
	}
}

// A 10-token prompt with 3 outputs: blocks [0,4) and [4,8) fill at prefill;
// [8,12) fills when the second generated token's KV is computed.
func TestEventsPerStep(t *testing.T) {
	h := start(t, Config{MaxNumSeqs: 4}, 64)
	r := request(t.Context(), prompt(10, 100), 7, 8, 9)
	_ = h.e.Submit(r)
	collect(t, r)
	h.settle(t)
	h.pub.mu.Lock()
	defer h.pub.mu.Unlock()
	if len(h.pub.batches) != 2 {
		t.Fatalf("%d batches; want 2 (prefill step, then the step filling block 3)", len(h.pub.batches))
	}
	first, second := h.pub.batches[0][0], h.pub.batches[1][0]
	if len(first.Hashes) != 2 || len(second.Hashes) != 1 || !slices.Equal(second.Tokens, []uint32{108, 109, 7, 8}) {
		t.Errorf("stores %d then %d blocks with %v; want 2 then 1 ending in the generated tokens 7, 8", len(first.Hashes), len(second.Hashes), second.Tokens)
	}
}

func TestMaxNumSeqsQueues(t *testing.T) {
	h := start(t, Config{MaxNumSeqs: 1}, 64)
	a := request(t.Context(), prompt(5, 100), 1, 2, 3, 4)
	b := request(t.Context(), prompt(5, 900), 5)
	_ = h.e.Submit(a)
	_ = h.e.Submit(b)
	ta, tb := collect(t, a), collect(t, b)
	if len(ta) != 4 || len(tb) != 1 {
		t.Fatalf("got %d and %d tokens; want 4 and 1", len(ta), len(tb))
	}
	if last, first := ta[3].Step, tb[0].Step; first <= last {
		t.Errorf("b's token came at step %d, a's last at step %d: b must wait while a holds the only seat", first, last)
	}
}

func TestPreemptionRecomputesAndCompletes(t *testing.T) {
	// 6 blocks of 4: two 8-token prompts take 2 blocks each; decoding 12
	// tokens each needs 5 blocks each, so one must be preempted. Steps of
	// 1 ms keep a running while b arrives.
	h := start(t, Config{MaxNumSeqs: 2, Latency: Latency{Enabled: true, InterToken: time.Millisecond, LoadFactor: 1}}, 6)
	out := prompt(12, 5000)
	a := request(t.Context(), prompt(8, 100), out...)
	b := request(t.Context(), prompt(8, 900), out...)
	_ = h.e.Submit(a)
	_ = h.e.Submit(b)
	for _, r := range []*Request{a, b} {
		if got := ids(collect(t, r)); !slices.Equal(got, out) {
			t.Errorf("output %v; want %v", got, out)
		}
	}
	if got := testutil.ToFloat64(h.e.metrics.preemptions); got < 1 {
		t.Errorf("preemptions %v; want at least 1", got)
	}
}

func TestAbortFreesBlocks(t *testing.T) {
	h := start(t, Config{MaxNumSeqs: 2, Latency: Latency{Enabled: true, InterToken: time.Millisecond, LoadFactor: 1}}, 64)
	ctx, cancel := context.WithCancel(t.Context())
	r := request(ctx, prompt(9, 100), prompt(500, 1)...)
	_ = h.e.Submit(r)
	<-r.Out // running
	cancel()
	toks := collect(t, r)
	if toks[len(toks)-1].FinishReason != "abort" {
		t.Fatalf("finish %q; want abort", toks[len(toks)-1].FinishReason)
	}
	var free int
	if err := h.e.Do(t.Context(), func(p *kvcache.Pool) { free = p.NumFree() }); err != nil {
		t.Fatal(err)
	}
	if free != 64 {
		t.Errorf("%d free blocks after abort; want all 64", free)
	}
}

func TestResetThroughDo(t *testing.T) {
	h := start(t, Config{MaxNumSeqs: 2}, 64)
	r := request(t.Context(), prompt(9, 100), 1)
	_ = h.e.Submit(r)
	collect(t, r)
	h.settle(t)
	var err error
	if e := h.e.Do(t.Context(), func(p *kvcache.Pool) { err = p.Reset() }); e != nil || err != nil {
		t.Fatalf("reset: %v %v", e, err)
	}
	h.settle(t) // the reset's event is published after Do's function returns
	kinds := h.pub.kinds()
	if kinds[len(kinds)-1] != "AllBlocksCleared" {
		t.Errorf("events %v; want AllBlocksCleared last", kinds)
	}
}

func TestLatencyModel(t *testing.T) {
	l := DefaultLatency()
	tests := []struct {
		prefill, cpu, running int
		want                  time.Duration
	}{
		{0, 0, 1, 12 * time.Millisecond},
		{1000, 0, 1, 12*time.Millisecond + 250*time.Millisecond},
		{0, 1000, 1, 12*time.Millisecond + 25*time.Millisecond},
		{0, 0, 16, 24 * time.Millisecond},  // full batch: load factor 2
		{0, 0, 100, 24 * time.Millisecond}, // never more than the factor
	}
	for _, tt := range tests {
		if got := l.Step(tt.prefill, tt.cpu, tt.running, 16); got != tt.want {
			t.Errorf("Step(%d, %d, %d) = %v; want %v", tt.prefill, tt.cpu, tt.running, got, tt.want)
		}
	}
	if got := (Latency{}).Step(1000, 0, 1, 16); got != 0 {
		t.Errorf("disabled latency step %v; want 0", got)
	}
}
