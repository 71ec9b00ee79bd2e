package bench

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench/client"
	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench/oracle"
	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench/report"
	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench/workload"
)

// Fleet is what a run needs from the fleet under test; cmd/llmgw/internal/fleet's
// Fleet provides it.
type Fleet interface {
	// ConsulDNSAddr is where clients find the routers (Consul DNS); ""
	// when no Consul runs: clients then send to RouterURLs.
	ConsulDNSAddr() string
	RouterURLs() []string
	// AdminURL is the admin listener (metrics) of the router whose API
	// is at apiURL, one of RouterURLs; "" for none.
	AdminURL(apiURL string) string
	// APIKey is the key the routers accept from clients.
	APIKey() string
	// RestartRouters starts new routers with scheduler as their
	// scheduler block and hcl as top-level options (a Policy's Router).
	RestartRouters(ctx context.Context, scheduler, hcl string) error
	// RestartShards replaces the shards by as many with these roles
	// (nil: all aggregated), for a policy with Roles (disagg.go).
	RestartShards(ctx context.Context, roles []string) error
	ResetCaches(ctx context.Context) error
	// EngineURLs are the engines' API URLs; the workload's prompts are
	// tokenized on the first (its /tokenize) before any policy runs.
	EngineURLs() []string
}

// Options describe one comparison.
type Options struct {
	Workload workload.Workload
	Policies []Policy
	// Model is the served model name; BlockSize the engines' KV block
	// size, for the oracle.
	Model     string
	BlockSize int
	SLO       report.SLO
	// Command and Setup are recorded in the report as given.
	Command, Setup string
	Rate           float64
	// OnStart is called as each policy starts, OnResult as each request
	// ends (from the request's goroutine); both may be nil.
	OnStart  func(p Policy)
	OnResult func(p Policy, r client.Result)
	// During, if set, runs beside each policy's requests (e.g. to kill a
	// router mid-run); the run waits for it.
	During func(ctx context.Context, p Policy)
}

// Run compares the policies on f: for each, it restarts the routers with
// the policy, empties every cache, waits until Consul DNS names exactly
// the new routers (without Consul: takes RouterURLs), and replays the
// workload through them.
func Run(ctx context.Context, f Fleet, o Options) (*report.Report, error) {
	if len(o.Workload.Requests) == 0 || len(o.Policies) == 0 {
		return nil, errors.New("bench: nothing to run (no requests or no policies)")
	}
	engines := f.EngineURLs()
	if len(engines) == 0 {
		return nil, errors.New("bench: the fleet has no engine to tokenize the prompts on")
	}
	hc := &http.Client{Timeout: time.Minute}
	toks, err := client.Tokenize(ctx, hc, engines[0], o.Model, o.Workload.Requests, 4)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	reusable := oracle.Reusable(toks, o.BlockSize)
	rep := &report.Report{Command: o.Command, Workload: o.Workload.Name, Setup: o.Setup,
		Requests: len(toks), Rate: o.Rate, SLO: o.SLO}
	for i, t := range toks {
		rep.PromptTokens += len(t)
		rep.ReusableTokens += reusable[i]
	}
	scheduled := make([]time.Duration, len(o.Workload.Requests))
	for i, r := range o.Workload.Requests {
		scheduled[i] = r.At
		if r.After >= 0 {
			scheduled[i] = -1 // sent when the request it waits for ends
		}
	}
	dns := &client.ConsulDNS{Addr: f.ConsulDNSAddr()}
	var roles []string // the shards' roles now: the fleet starts aggregated
	for _, p := range o.Policies {
		if roles, err = reshard(ctx, f, p, roles, len(engines)); err != nil {
			return nil, fmt.Errorf("policy %s: %w", p.Name, err)
		}
		if err := f.RestartRouters(ctx, p.Scheduler, p.Router()); err != nil {
			return nil, fmt.Errorf("policy %s: restart routers: %w", p.Name, err)
		}
		if err := f.ResetCaches(ctx); err != nil {
			return nil, fmt.Errorf("policy %s: reset caches: %w", p.Name, err)
		}
		var routers client.Routers = dns
		if dns.Addr == "" {
			// No Consul (a fleet on Nomad discovery): the routers the
			// fleet has just started.
			routers = client.Static(f.RouterURLs())
		} else if err := waitDNS(ctx, dns, f.RouterURLs()); err != nil {
			return nil, fmt.Errorf("policy %s: %w", p.Name, err)
		}
		if o.OnStart != nil {
			o.OnStart(p)
		}
		hitsBefore, hitsErr := engineHits(ctx, hc, f.EngineURLs())
		results, took := runPolicy(ctx, p, routers, f.APIKey(), o)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("policy %s: %w", p.Name, err)
		}
		sum := report.Summarize(p.Name, results, reusable, o.SLO, took)
		sum.SendLag = report.SendLag(scheduled, results)
		if sum.CachedFrom != "usage" && hitsErr == nil {
			// No answer said what it hit (engines without
			// --enable-prompt-tokens-details): the engines' counters do.
			if after, err := engineHits(ctx, hc, f.EngineURLs()); err == nil {
				sum.UseEngineHits(after - hitsBefore)
			}
		}
		if n, err := prefixCopies(ctx, hc, adminURLs(f)); err == nil {
			sum.Copies = &n
		}
		rep.Policies = append(rep.Policies, sum)
	}
	rep.HostLoad = hostLoad()
	return rep, nil
}

// adminURLs are the live routers' admin listeners.
func adminURLs(f Fleet) []string {
	api := f.RouterURLs()
	out := make([]string, len(api))
	for i, u := range api {
		out[i] = f.AdminURL(u)
	}
	return out
}

func runPolicy(ctx context.Context, p Policy, routers client.Routers, key string, o Options) ([]client.Result, time.Duration) {
	c := client.New(client.Options{Routers: routers, Model: o.Model, APIKey: key})
	defer c.Close()
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	during := make(chan struct{})
	go func() {
		defer close(during)
		if o.During != nil {
			o.During(runCtx, p)
		}
	}()
	var onDone func(client.Result)
	if o.OnResult != nil {
		onDone = func(r client.Result) { o.OnResult(p, r) }
	}
	start := time.Now()
	results := c.Run(ctx, o.Workload.Requests, onDone)
	took := time.Since(start)
	cancel()
	<-during
	return results, took
}

// waitDNS polls Consul DNS until it names exactly the routers in want,
// so no request of the run starts at a router of the previous policy.
func waitDNS(ctx context.Context, dns *client.ConsulDNS, want []string) error {
	want = slices.Sorted(slices.Values(want))
	deadline := time.Now().Add(30 * time.Second)
	var got []string
	for {
		dns.Forget()
		got, _ = dns.Routers(ctx)
		got = slices.Sorted(slices.Values(got))
		if slices.Equal(got, want) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("consul DNS names routers %v; want %v", got, want)
		}
		t := time.NewTimer(100 * time.Millisecond)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C:
		}
	}
}
