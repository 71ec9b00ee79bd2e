package bench_test

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench"
	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench/client"
	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench/report"
	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench/workload"
	"github.com/llmgw/llmgw/cmd/llmgw/internal/fleet"
	"github.com/llmgw/llmgw/cmd/llmgw/internal/fleet/fleettest"
)

// bins builds the fleet's binaries from this tree once per test process.
var bins fleettest.Binaries

func TestMain(m *testing.M) {
	code := bins.RunTests(m)
	if code == 0 {
		// Every goroutine of the fleet, the client and the run is gone.
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

// TestEndToEnd runs the whole chain (Consul, two routers, the driver under
// the plugin host, four vllm-sim shards with the default latency model)
// and checks what llmgw bench relies on: precise routing of a prefix-heavy
// workload reaches at least 90% of the oracle's reusable tokens, prompts
// over the shards' max_model_len are reported as rejected, not shed, and a
// router killed mid-run loses no request that had not started streaming.
func TestEndToEnd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Consul, the driver, vllm-sim shards and routers")
	}
	bin := bins.Dir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	work := t.TempDir()
	// 4096 (not the default 8192) proves the option reaches the engines.
	f, err := fleet.Start(ctx, fleet.Options{BinDir: bin, Shards: 4, Routers: 2, WorkDir: work, MaxModelLen: 4096})
	if err != nil {
		t.Fatal(err)
	}
	defer fleettest.CheckNone(t, work)
	defer f.Close()
	precise, err := bench.SelectPolicies("precise-prefix")
	if err != nil {
		t.Fatal(err)
	}

	t.Run("precise routing reaches the oracle", func(t *testing.T) {
		w, err := workload.Chat(workload.ChatOptions{Users: 8, Rounds: 3, SystemTokens: 160, DocTokens: 800, UserTokens: 40, ReplyTokens: 8, Rate: 8, Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		rep, err := bench.Run(ctx, f, bench.Options{Workload: w, Policies: precise, Model: "sim-model", BlockSize: 16,
			SLO: report.SLO{TTFT: time.Second, ITL: 100 * time.Millisecond}})
		if err != nil {
			t.Fatal(err)
		}
		s := rep.Policies[0]
		t.Logf("precise: %d ok, cached %d of %d prompt tokens (from %s), oracle %d (%.1f%%), TTFT p50 %.1f ms",
			s.OK, s.CachedTokens, s.PromptTokens, s.CachedFrom, s.OracleTokens, 100*s.OracleHitShare, s.TTFT.P50)
		if s.OK != len(w.Requests) {
			t.Errorf("%d of %d requests completed (%d shed, %d interrupted)", s.OK, len(w.Requests), s.Shed, s.Interrupted)
		}
		if s.OracleHitShare < 0.9 {
			t.Errorf("precise routing hit %.1f%% of the oracle's reusable tokens; want >= 90%%", 100*s.OracleHitShare)
		}
	})

	t.Run("the default's prefix copies are counted, round-robin makes none", func(t *testing.T) {
		// One 1,000-token head (62 blocks, over hot-prefix's 32) sent
		// about twice a second for 8 s: each router sees it in three
		// distinct seconds well before the end, and copies it to the
		// shards that lack it, which are idle at this rate.
		w, err := workload.SharedPrefix(workload.PrefixOptions{Groups: 1, PerGroup: 16, PrefixTokens: 1000, SuffixTokens: 30, OutputTokens: 4, Rate: 2, Seed: 4})
		if err != nil {
			t.Fatal(err)
		}
		both, err := bench.SelectPolicies("precise-prefix,round-robin")
		if err != nil {
			t.Fatal(err)
		}
		rep, err := bench.Run(ctx, f, bench.Options{Workload: w, Policies: both, Model: "sim-model", BlockSize: 16,
			SLO: report.SLO{TTFT: time.Second, ITL: 100 * time.Millisecond}})
		if err != nil {
			t.Fatal(err)
		}
		copies := map[string]int{}
		for _, s := range rep.Policies {
			if s.Copies == nil {
				t.Fatalf("%s: the routers' copies were not read", s.Policy)
			}
			copies[s.Policy] = *s.Copies
		}
		t.Logf("prefix copies: %v", copies)
		// Each of the two routers copies to at most the three shards
		// without the head.
		if n := copies["precise-prefix"]; n < 1 || n > 6 {
			t.Errorf("the default made %d prefix copies; want 1-6", n)
		}
		if n := copies["round-robin"]; n != 0 {
			t.Errorf("round-robin (no replicator) made %d prefix copies; want 0", n)
		}
	})

	t.Run("prompts over max_model_len are rejected, not shed", func(t *testing.T) {
		w, err := workload.SharedPrefix(workload.PrefixOptions{Groups: 1, PerGroup: 3, PrefixTokens: 5000, SuffixTokens: 30, OutputTokens: 8, Rate: 8, Seed: 3})
		if err != nil {
			t.Fatal(err)
		}
		rep, err := bench.Run(ctx, f, bench.Options{Workload: w, Policies: precise, Model: "sim-model", BlockSize: 16,
			SLO: report.SLO{TTFT: time.Second, ITL: 100 * time.Millisecond}})
		if err != nil {
			t.Fatal(err)
		}
		if s := rep.Policies[0]; s.Rejected != len(w.Requests) || s.Shed != 0 || s.OK != 0 {
			t.Errorf("%d rejected, %d shed, %d ok; want all %d rejected by the engines", s.Rejected, s.Shed, s.OK, len(w.Requests))
		}
	})

	t.Run("a killed router loses no request that had not started streaming", func(t *testing.T) {
		w, err := workload.SharedPrefix(workload.PrefixOptions{Groups: 4, PerGroup: 12, PrefixTokens: 200, SuffixTokens: 30, OutputTokens: 30, Rate: 16, Seed: 2})
		if err != nil {
			t.Fatal(err)
		}
		var mu sync.Mutex
		var results []client.Result
		var ended atomic.Int32
		kill := make(chan struct{})
		var killed atomic.Bool
		_, err = bench.Run(ctx, f, bench.Options{Workload: w, Policies: precise, Model: "sim-model", BlockSize: 16,
			OnResult: func(_ bench.Policy, r client.Result) {
				mu.Lock()
				results = append(results, r)
				mu.Unlock()
				if ended.Add(1) == 8 {
					close(kill)
				}
			},
			During: func(ctx context.Context, _ bench.Policy) {
				select {
				case <-kill:
					if err := f.KillRouter(0); err != nil {
						t.Errorf("kill router 0: %v", err)
						return
					}
					killed.Store(true)
				case <-ctx.Done():
				}
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		if !killed.Load() {
			t.Fatal("the router was never killed")
		}
		retried, interrupted := 0, 0
		for _, r := range results {
			switch {
			case r.OK():
				if r.Attempts > 1 {
					retried++
				}
			case r.Started:
				interrupted++
			default:
				t.Errorf("request %d lost before streaming: status %d, %q after %d attempts", r.ID, r.Status, r.Err, r.Attempts)
			}
		}
		if len(results) != len(w.Requests) {
			t.Errorf("%d results; want %d", len(results), len(w.Requests))
		}
		t.Logf("after the kill: %d requests retried on the other router, %d interrupted while streaming", retried, interrupted)
	})
}
