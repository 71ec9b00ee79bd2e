// Package engine is vllm-sim's engine core: vLLM's continuous-batching
// scheduler over the paged KV cache, stepping in simulated GPU time.
//
// Each step it admits waiting requests first-come first-served while
// max-num-seqs and the KV cache allow, gives running sequences one decode
// token each and prefills prompts within a token budget (chunked prefill),
// preempts the newest sequence by recomputation when decoding runs out of
// blocks, and publishes the step's KV events as one batch. One goroutine owns
// the cache; everything else talks to it through channels.
//
// Blocks become hittable when a step schedules them, as in vLLM v1
// (vllm-project/vllm 003df2961dd8): allocate_slots caches the full blocks
// of the tokens scheduled (cache_blocks) and _update_after_schedule
// advances num_computed_tokens before the forward pass, so a request
// scheduled later in the same step, or in a later step while the first is
// still prefilling, reuses them; siblings arriving together share one
// prefill. The step's events are published when vLLM's update_from_output
// takes them (take_events), after the step's modelled time and before its
// tokens are delivered.
package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync/atomic"
	"time"

	"github.com/llmgw/llmgw/cmd/vllm-sim/internal/kvcache"
)

// Publisher receives one batch of KV events per step that has any.
type Publisher interface {
	Publish(ctx context.Context, ts float64, events []kvcache.Event) error
}

// Config configures one engine core (one data-parallel rank).
type Config struct {
	MaxNumSeqs       int
	MaxBatchedTokens int // prompt and decode tokens per step
	Latency          Latency
	DPRank           int
	// HoldTimeout bounds how long a prefill instance holds a finished
	// request's blocks for a decode instance (VLLM_NIXL_ABORT_REQUEST_TIMEOUT).
	HoldTimeout time.Duration
	// OnHoldExpired, when set, is called for each hold that timed out.
	OnHoldExpired func()
}

// Token is one streamed output of a request.
type Token struct {
	ID           uint32
	Final        bool   // the request is complete; FinishReason says why
	FinishReason string // "length", "stop" or "abort"
	CachedTokens int    // prompt tokens served from the prefix cache (set on every token)
	Step         uint64 // the engine step that produced it
	// Held, on the final token of a request with HoldForTransfer that
	// finished by length, lists the block ids held for the transfer, one
	// list per KV-cache group.
	Held [][]int
}

// Request is one generation request. The server fills the exported fields;
// Out must have room for len(Output) tokens so the engine never blocks.
type Request struct {
	ID     string
	Ctx    context.Context // cancelling it aborts the request
	Prompt []uint32
	LoRA   string
	LoRAID int
	// CacheSalt is the request's cache_salt ("" for none).
	CacheSalt string
	// Output is the token ids the "model" will produce, decided up front so
	// the engine stays tokenizer-agnostic; FinishReason applies after the last.
	Output       []uint32
	FinishReason string
	Arrival      time.Time
	Out          chan Token
	// HoldForTransfer keeps the blocks after the request finishes by
	// length, for a decode instance to read (vLLM's do_remote_decode).
	HoldForTransfer bool
	// External is the number of prompt tokens whose KV arrived from
	// another instance before admission (do_remote_prefill): the engine
	// computes only what is left, at least the last prompt token.
	External int
	// Pool marks a pooling request (vLLM's --runner pooling): it ends
	// when its prompt is computed, with one final Token carrying no id
	// and no output tokens counted; Output is unused.
	Pool bool
	// Left, when set, is called once on the engine's goroutine as the
	// request leaves the engine (finished, pooled or aborted): the
	// server's data-parallel balancer counts its in-flight requests per
	// rank with it, as vLLM's client does from finished_requests.
	Left func()

	seq         kvcache.Seq
	admitted    bool
	cached      int
	generated   int
	lastTokenAt time.Time
	done        bool
}

// ErrOverloaded is returned when the engine's intake queue is full.
var ErrOverloaded = errors.New("engine intake queue is full")

// Engine is one engine core.
type Engine struct {
	cfg     Config
	pool    *kvcache.Pool
	pub     Publisher // nil: events off
	metrics *Metrics
	log     *slog.Logger

	incoming chan *Request
	control  chan func(*kvcache.Pool)

	// Loop-owned.
	waiting []*Request
	running []*Request
	steps   uint64
	held    map[string]*heldSeq

	// Read by the server for load balancing and /metrics.
	numRunning, numWaiting atomic.Int64
	kvUsage                atomic.Uint64 // math.Float64bits of the pool's usage
}

// New returns an engine over pool; Run drives it.
func New(cfg Config, pool *kvcache.Pool, pub Publisher, m *Metrics, log *slog.Logger) (*Engine, error) {
	if cfg.MaxNumSeqs < 1 {
		return nil, fmt.Errorf("max-num-seqs must be positive, got %d", cfg.MaxNumSeqs)
	}
	if cfg.MaxBatchedTokens < 1 {
		return nil, fmt.Errorf("max-num-batched-tokens must be positive, got %d", cfg.MaxBatchedTokens)
	}
	return &Engine{
		cfg: cfg, pool: pool, pub: pub, metrics: m, log: log,
		incoming: make(chan *Request, 4096),
		control:  make(chan func(*kvcache.Pool)),
	}, nil
}

// Submit hands a request to the engine without blocking.
func (e *Engine) Submit(r *Request) error {
	select {
	case e.incoming <- r:
		e.numWaiting.Add(1)
		return nil
	default:
		return ErrOverloaded
	}
}

// Load is the number of requests the engine holds, running or waiting.
func (e *Engine) Load() int64 { return e.numRunning.Load() + e.numWaiting.Load() }

// Stats is what the engine reports to vLLM's DP coordinator after a
// step: its waiting and running requests and its KV-cache usage (0..1).
func (e *Engine) Stats() (waiting, running int64, kvUsage float64) {
	return e.numWaiting.Load(), e.numRunning.Load(), math.Float64frombits(e.kvUsage.Load())
}

// Do runs f on the engine's goroutine between steps, with the cache to itself.
func (e *Engine) Do(ctx context.Context, f func(*kvcache.Pool)) error {
	done := make(chan struct{})
	select {
	case e.control <- func(p *kvcache.Pool) { f(p); close(done) }:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Run steps the engine until ctx ends, then aborts what it holds.
func (e *Engine) Run(ctx context.Context) error {
	defer e.abortAll()
	for {
		if len(e.running) == 0 && len(e.waiting) == 0 {
			select {
			case r := <-e.incoming:
				e.enqueue(r)
			case f := <-e.control:
				f(e.pool)
				e.flushEvents(ctx)
				continue
			case <-e.holdTimer():
				e.expireHeld(time.Now())
				e.flushEvents(ctx)
				continue
			case <-ctx.Done():
				return nil
			}
		}
		if err := e.intake(ctx); err != nil {
			return nil
		}
		if err := e.step(ctx); err != nil {
			return nil
		}
	}
}

// intake moves submitted requests into the waiting queue and runs control
// functions, without blocking.
func (e *Engine) intake(ctx context.Context) error {
	for {
		select {
		case r := <-e.incoming:
			e.enqueue(r)
		case f := <-e.control:
			f(e.pool)
		case <-ctx.Done():
			return ctx.Err()
		default:
			return nil
		}
	}
}

func (e *Engine) enqueue(r *Request) {
	r.seq.Tokens = append(make([]uint32, 0, len(r.Prompt)+len(r.Output)), r.Prompt...)
	r.seq.LoRA, r.seq.LoRAID, r.seq.CacheSalt = r.LoRA, r.LoRAID, r.CacheSalt
	e.waiting = append(e.waiting, r)
}

func (e *Engine) abortAll() {
	for _, r := range append(e.running, e.waiting...) {
		e.pool.Free(&r.seq)
		r.left()
		r.Out <- Token{Final: true, FinishReason: "abort", CachedTokens: r.cached}
	}
	e.running, e.waiting = nil, nil
	for id, h := range e.held {
		e.pool.Free(&h.seq)
		delete(e.held, id)
	}
	for {
		select {
		case r := <-e.incoming:
			r.Out <- Token{Final: true, FinishReason: "abort"}
		default:
			return
		}
	}
}

func (e *Engine) flushEvents(ctx context.Context) {
	events := e.pool.TakeEvents()
	if len(events) == 0 || e.pub == nil {
		return
	}
	ts := float64(time.Now().UnixNano()) / 1e9
	if err := e.pub.Publish(ctx, ts, events); err != nil && ctx.Err() == nil {
		e.log.Warn("publish kv events", "err", err)
	}
}
