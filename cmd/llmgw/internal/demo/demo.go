// Package demo runs llmgw's local demonstration on a real chain
// (cmd/llmgw/internal/fleet): a Consul agent, nomad-driver-vllm under the plugin host
// running vllm-sim shards with KV events, and llmgw-router processes; with
// -discovery nomad, Nomad's services API (a stand-in, in-process) in
// Consul's place. It sends one short multi-turn chat workload per routing
// policy through the routers, found by Consul DNS (or, on Nomad, as the
// fleet started them; cmd/llmgw/internal/bench), shows a progress bar, and
// prints each policy's requests served within the SLO, cache-hit share and
// TTFT, then a one-line verdict: the default against the best peer and
// round-robin, from the run's own rows. By default the policies are the
// ones a user weighs: llmgw's default, round-robin and the peers'
// published policies; -variants adds every other policy bench knows (the
// default's internal variants among them), -policies names them. Every
// process it started is stopped, also when ctx is cancelled (Ctrl-C).
package demo

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench"
	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench/report"
	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench/workload"
	"github.com/llmgw/llmgw/cmd/llmgw/internal/fleet"
)

// Config sizes the demo.
type Config struct {
	BinDir  string // llmgw-router, nomad-driver-vllm, vllm-sim, nomad-standin, consul ("" = <repo>/bin)
	Shards  int
	Routers int
	Users   int
	Rounds  int
	// MaxTokens is each answer's length.
	MaxTokens int
	// Rate is the workload's arrival rate in requests per second.
	Rate float64
	// Policies is a comma-separated list (see cmd/llmgw/internal/bench);
	// "" runs round-robin, llmgw's default and the peers' policies, or,
	// with Variants, every policy of bench.Policies.
	Policies string
	Variants bool
	// SLO is what a request must meet to count as served within it, as
	// llmgw bench's goodput counts (zero: defaultSLO).
	SLO report.SLO
	// Progress draws a progress bar per policy on the output.
	Progress bool
	// SimArgs are extra vllm-sim flags (the tests turn the latency model off).
	SimArgs []string
	// WorkDir keeps the fleet's logs and state ("" = a temporary directory,
	// removed at the end).
	WorkDir string
	// Discovery is "consul" (the default) or "nomad": the fleet's service
	// discovery (fleet.Options.Discovery).
	Discovery string
}

// ParseFlags reads the demo's flags. For -h its error wraps flag.ErrHelp
// and lists the flags.
func ParseFlags(args []string) (Config, error) {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	c := Config{}
	fs.IntVar(&c.Shards, "shards", 4, "vllm-sim shards, run by the driver")
	fs.IntVar(&c.Routers, "routers", 2, "llmgw-router processes")
	fs.IntVar(&c.Users, "users", 16, "chat users")
	fs.IntVar(&c.Rounds, "rounds", 4, "turns per user")
	fs.IntVar(&c.MaxTokens, "max-tokens", 16, "tokens per answer")
	fs.Float64Var(&c.Rate, "rate", 8, "requests per second (Poisson arrivals)")
	fs.StringVar(&c.Policies, "policies", "", "comma-separated routing policies (default: round-robin, llmgw's default and the peers' policies)")
	fs.BoolVar(&c.Variants, "variants", false, "run every aggregated policy llmgw bench knows: also least-loaded, approx-prefix, prefix-load and the default's internal variants (precise-prefix-*)")
	fs.DurationVar(&c.SLO.TTFT, "slo-ttft", defaultSLO.TTFT, "SLO: time to first token")
	fs.DurationVar(&c.SLO.ITL, "slo-itl", defaultSLO.ITL, "SLO: mean inter-token gap")
	fs.BoolVar(&c.Progress, "progress", isTerminal(os.Stdout), "draw a progress bar per policy (default: when the output is a terminal)")
	fs.StringVar(&c.WorkDir, "workdir", "", "keep the processes' logs here (default: a temporary directory, removed)")
	fs.StringVar(&c.Discovery, "discovery", fleet.DiscoveryConsul, "service discovery: consul (a local Consul agent) or nomad (Nomad's services API, served in-process by a stand-in; no Consul runs)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			var b strings.Builder
			fs.SetOutput(&b)
			fs.PrintDefaults()
			return c, helpError(b.String())
		}
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	for name, v := range map[string]int{"shards": c.Shards, "routers": c.Routers, "users": c.Users, "rounds": c.Rounds, "max-tokens": c.MaxTokens} {
		if v < 1 {
			return c, fmt.Errorf("-%s must be at least 1, got %d", name, v)
		}
	}
	if c.Rate <= 0 {
		return c, fmt.Errorf("-rate must be positive, got %v", c.Rate)
	}
	if c.SLO.TTFT <= 0 || c.SLO.ITL <= 0 {
		return c, fmt.Errorf("-slo-ttft and -slo-itl must be positive, got %v and %v", c.SLO.TTFT, c.SLO.ITL)
	}
	if c.Variants && c.Policies != "" {
		return c, errors.New("-variants and -policies both choose the policies: give one")
	}
	if c.Discovery != fleet.DiscoveryConsul && c.Discovery != fleet.DiscoveryNomad {
		return c, fmt.Errorf("-discovery %q: want %s or %s", c.Discovery, fleet.DiscoveryConsul, fleet.DiscoveryNomad)
	}
	if _, err := c.policies(); err != nil {
		return c, err
	}
	return c, nil
}

// defaultSLO is llmgw bench's default SLO (-slo-ttft, -slo-itl), so the
// demo's counts within it mean what the bench's goodput means.
var defaultSLO = report.SLO{TTFT: 500 * time.Millisecond, ITL: 50 * time.Millisecond}

// helpError is ParseFlags' answer to -h: not a failure (it wraps
// flag.ErrHelp, so a caller can exit 0), and its text lists the flags.
type helpError string

func (h helpError) Error() string { return "flags:\n" + string(h) }
func (h helpError) Unwrap() error { return flag.ErrHelp }

// policies are the policies the demo runs, in order: those named, every
// one with Variants, else those a user weighs (userPolicies).
func (c Config) policies() ([]bench.Policy, error) {
	switch {
	case c.Policies != "":
		return bench.SelectPolicies(c.Policies)
	case c.Variants:
		return bench.Policies(), nil
	}
	return bench.SelectPolicies(strings.Join(userPolicies(), ","))
}

// userPolicies name the policies a user weighs llmgw on: the round-robin
// baseline, llmgw's default and the peers' published policies, not the
// default's internal variants, which answer the project's own questions.
func userPolicies() []string {
	return append([]string{bench.Baseline, bench.DefaultPolicy}, bench.PeerNames()...)
}

// The chat workload's shape: a shared system prompt, a document private
// to each user opening the conversation, short questions.
const (
	systemTokens = 400
	docTokens    = 800
	userTokens   = 40
	blockSize    = 16 // the fleet's shards
)

// Run starts the fleet, runs the workload once per policy on empty caches,
// prints a table and stops the fleet.
func Run(ctx context.Context, cfg Config, out io.Writer) error {
	policies, err := cfg.policies()
	if err != nil {
		return err
	}
	w, err := workload.Chat(workload.ChatOptions{Users: cfg.Users, Rounds: cfg.Rounds,
		SystemTokens: systemTokens, DocTokens: docTokens, UserTokens: userTokens, ReplyTokens: cfg.MaxTokens,
		Rate: cfg.Rate, Seed: 1})
	if err != nil {
		return err
	}
	catalogue := "Consul"
	if cfg.Discovery == fleet.DiscoveryNomad {
		catalogue = "Nomad's services API (stand-in)"
	}
	fmt.Fprintf(out, "starting %s, nomad-driver-vllm with %d vllm-sim shards, and %d llmgw-routers...\n", catalogue, cfg.Shards, cfg.Routers)
	start := time.Now()
	f, err := fleet.Start(ctx, fleet.Options{BinDir: cfg.BinDir, Shards: cfg.Shards, Routers: cfg.Routers, SimArgs: cfg.SimArgs, WorkDir: cfg.WorkDir,
		Discovery: cfg.Discovery, Log: hclog.New(&hclog.LoggerOptions{Name: "fleet", Level: hclog.Warn, Output: out})})
	if err != nil {
		return fmt.Errorf("start the fleet: %w", err)
	}
	defer func() {
		fmt.Fprintln(out, "stopping every process...")
		f.Close()
	}()
	fmt.Fprintf(out, "fleet up in %s; routers at %v\n", time.Since(start).Round(100*time.Millisecond), f.RouterURLs())
	if addr := f.NomadAddr(); addr != "" {
		fmt.Fprintf(out, "Nomad services API at %s (NOMAD_ADDR); routers and drivers discover with discovery = \"nomad\"\n", addr)
	}
	fmt.Fprintf(out, "API key (generated for this run; send it as Authorization: Bearer): %s\n", f.APIKey())
	fmt.Fprintf(out, "%d users x %d turns at %g req/s: shared %d-token system prompt, a %d-token document per user, %d-token answers, streamed\n\n",
		cfg.Users, cfg.Rounds, cfg.Rate, systemTokens, docTokens, cfg.MaxTokens)

	if cfg.SLO == (report.SLO{}) {
		cfg.SLO = defaultSLO
	}
	o := bench.Options{Workload: w, Policies: policies, Model: "sim-model", BlockSize: blockSize, SLO: cfg.SLO}
	if cfg.Progress {
		o.ShowProgress(out)
	}
	rep, err := bench.Run(ctx, f, o)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "within the SLO: first token within %s and a mean inter-token gap within %s\n", cfg.SLO.TTFT, cfg.SLO.ITL)
	printTable(out, rep.Policies)
	c := contenders{Default: bench.DefaultPolicy, Baseline: bench.Baseline, Peers: bench.PeerNames(),
		Workload: fmt.Sprintf("%s (%d users x %d turns at %g req/s)", w.Name, cfg.Users, cfg.Rounds, cfg.Rate)}
	fmt.Fprintf(out, "\nverdict: %s.\n", verdict(rep.Policies, c, verdictNoise))
	return nil
}

// isTerminal reports whether f is a terminal, where a progress bar redraws
// in place; in a log it would be hundreds of lines.
func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// printTable shows what each policy did, its first column as wide as the
// longest policy name.
func printTable(out io.Writer, rows []report.Summary) {
	w := len("policy")
	for _, s := range rows {
		w = max(w, len(s.Policy))
	}
	fmt.Fprintf(out, "%-*s %8s %6s %6s %11s %10s %10s\n", w, "policy", "requests", "failed", "in SLO", "cache hits", "TTFT p50", "TTFT p99")
	for _, s := range rows {
		fmt.Fprintf(out, "%-*s %8d %6d %6d %10.1f%% %8.0fms %8.0fms\n", w, s.Policy, s.Requests, s.Requests-s.OK, inSLO(s),
			100*s.CachedShare, float64(s.TTFT.P50), float64(s.TTFT.P99))
	}
}
