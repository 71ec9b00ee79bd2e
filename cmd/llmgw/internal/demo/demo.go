// Package demo runs llmgw's local demonstration: a fleet of vllm-sim engines
// and a multi-turn chat workload sent under different routing policies, with
// the cache-hit share and TTFT of each. Later the demo routes through
// llmgw-router; today the policies are applied by the client so the effect of
// prefix affinity is visible on its own.
package demo

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/llmgw/llmgw/internal/simproc"
)

// Config sizes the demo.
type Config struct {
	SimBinary string
	Engines   int
	Users     int
	Rounds    int
	MaxTokens int
}

// ParseFlags reads the demo's flags.
func ParseFlags(args []string) (Config, error) {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c := Config{}
	fs.StringVar(&c.SimBinary, "sim", "", "vllm-sim binary (default: next to llmgw)")
	fs.IntVar(&c.Engines, "engines", 4, "simulated engines")
	fs.IntVar(&c.Users, "users", 24, "concurrent chat users")
	fs.IntVar(&c.Rounds, "rounds", 4, "turns per user")
	fs.IntVar(&c.MaxTokens, "max-tokens", 24, "tokens per answer")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	for name, v := range map[string]int{"engines": c.Engines, "users": c.Users, "rounds": c.Rounds, "max-tokens": c.MaxTokens} {
		if v < 1 {
			return c, fmt.Errorf("-%s must be at least 1, got %d", name, v)
		}
	}
	return c, nil
}

// policy picks an engine for a user's turn.
type policy struct {
	name string
	pick func(user, turn, n int, seq int) int
}

var policies = []policy{
	{"round-robin", func(_, _, n, seq int) int { return seq % n }},
	{"conversation-affinity", func(user, _, n, _ int) int { return user % n }},
}

// Run starts the engines, runs every policy on a cold cache, prints a table
// and stops every process it started, also when ctx is cancelled.
func Run(ctx context.Context, cfg Config, out io.Writer) error {
	fmt.Fprintf(out, "starting %d vllm-sim engines (latency model on)...\n", cfg.Engines)
	var engines []*simproc.Proc
	defer func() {
		for _, e := range engines {
			e.Stop()
		}
	}()
	for range cfg.Engines {
		e, err := simproc.Start(ctx, simproc.Options{
			Binary: cfg.SimBinary,
			Args:   []string{"demo-model", "--host", "127.0.0.1", "--port", "0", "--max-num-seqs", "8", "--num-gpu-blocks-override", "4096"},
		}, 30*time.Second)
		if err != nil {
			return err
		}
		engines = append(engines, e)
	}
	fmt.Fprintf(out, "%d users x %d turns, shared system prompt, %d-token answers, streaming\n\n", cfg.Users, cfg.Rounds, cfg.MaxTokens)
	fmt.Fprintf(out, "%-22s %8s %12s %10s %10s\n", "policy", "requests", "cache hits", "TTFT p50", "TTFT p99")
	for _, p := range policies {
		for _, e := range engines {
			if err := post(ctx, e.URL+"/reset_prefix_cache", nil, nil); err != nil {
				return fmt.Errorf("reset %s: %w", e.URL, err)
			}
		}
		res, err := runWorkload(ctx, cfg, engines, p)
		if err != nil {
			return fmt.Errorf("%s: %w", p.name, err)
		}
		fmt.Fprintf(out, "%-22s %8d %11.1f%% %10s %10s\n", p.name, len(res.ttfts), 100*res.hitShare(),
			pct(res.ttfts, 50).Round(time.Millisecond), pct(res.ttfts, 99).Round(time.Millisecond))
	}
	return nil
}

type results struct {
	mu             sync.Mutex
	ttfts          []time.Duration
	prompt, cached int
}

func (r *results) hitShare() float64 {
	if r.prompt == 0 {
		return 0
	}
	return float64(r.cached) / float64(r.prompt)
}

func pct(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return s[min(len(s)-1, len(s)*p/100)]
}

// runWorkload plays every user's conversation concurrently, turns in order.
func runWorkload(ctx context.Context, cfg Config, engines []*simproc.Proc, p policy) (*results, error) {
	res := &results{}
	var seq int
	var seqMu sync.Mutex
	var wg sync.WaitGroup
	errs := make(chan error, cfg.Users)
	for u := range cfg.Users {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conv := newConversation(u)
			for turn := range cfg.Rounds {
				seqMu.Lock()
				i := p.pick(u, turn, len(engines), seq)
				seq++
				seqMu.Unlock()
				t, err := conv.turn(ctx, engines[i].URL, cfg.MaxTokens)
				if err != nil {
					errs <- err
					return
				}
				res.mu.Lock()
				res.ttfts = append(res.ttfts, t.ttft)
				res.prompt += t.prompt
				res.cached += t.cached
				res.mu.Unlock()
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := errors.Join(collect(errs)...); err != nil {
		return nil, err
	}
	return res, nil
}

func collect(errs <-chan error) []error {
	var out []error
	for err := range errs {
		out = append(out, err)
	}
	return out
}

var client = &http.Client{Timeout: 2 * time.Minute}
