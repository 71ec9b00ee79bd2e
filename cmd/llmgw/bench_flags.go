package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench"
	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench/report"
	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench/trace"
	"github.com/llmgw/llmgw/cmd/llmgw/internal/bench/workload"
)

const benchUsage = `usage: llmgw bench [-workload chat|prefix|siblings|trace|many-session|fan-out|mixed-tenants|b2b-saas|coding-agent] [-rate R] [-policies LIST] [-out DIR] [-doc FILE] [flags]
       (llmgw bench -h lists every flag)`

// benchConfig is `llmgw bench` after flag parsing.
type benchConfig struct {
	workload         string
	rate             float64
	seed             uint64
	users, rounds    int
	systemTokens     int
	docTokens        int
	userTokens       int
	outputTokens     int
	groups, perGroup int
	prefixTokens     int
	suffixTokens     int
	prompts, samples int
	promptTokens     int
	traceFile        string
	traceBlockSize   int
	maxRequests      int
	shards, routers  int
	dataParallel     int
	maxModelLen      int
	simArgs          string
	binDir           string
	policies         []bench.Policy
	slo              report.SLO
	outDir, doc      string
	requestsOut      string
	section          string
	progress         bool
	timeout          time.Duration
	stress           stressFlags
	fault            faultFlags
	sweep            sweepFlags
}

// errHelpShown and errUsageShown: parseBenchFlags has printed the help
// asked for (exit 0) or a bad flag's problem and the usage (exit 2).
var (
	errHelpShown  = errors.New("help shown")
	errUsageShown = errors.New("usage shown")
)

func parseBenchFlags(args []string, stdout, stderr io.Writer) (benchConfig, error) {
	var c benchConfig
	fs := flag.NewFlagSet("llmgw bench", flag.ContinueOnError)
	fs.StringVar(&c.workload, "workload", "chat", "chat (multi-turn, shared system prompt, per-user document), prefix (shared-prefix groups), siblings (n samples of one prompt), trace (Mooncake JSONL replay), many-session (256 chat sessions overflowing the caches), fan-out (agentic sibling bursts), mixed-tenants (hot tenant prompts among unique ones), b2b-saas (llm-d's shared-prefix benchmark) or coding-agent (agent sessions with sub-agent groups; needs -max-model-len 32768)")
	c.stress.register(fs)
	c.fault.register(fs)
	c.sweep.register(fs)
	fs.Float64Var(&c.rate, "rate", 4, "open-loop Poisson arrival rate, requests per second (bursts per second for siblings; 0 for trace keeps its timestamps)")
	fs.Uint64Var(&c.seed, "seed", 1, "workload seed: the same seed gives the same requests")
	fs.IntVar(&c.users, "users", 16, "chat: users")
	fs.IntVar(&c.rounds, "rounds", 5, "chat: rounds per user")
	fs.IntVar(&c.systemTokens, "system-tokens", 300, "chat, siblings: shared system prompt tokens")
	fs.IntVar(&c.docTokens, "doc-tokens", 1500, "chat: tokens of each user's document, sent in the first round")
	fs.IntVar(&c.userTokens, "user-tokens", 60, "chat: tokens per question")
	fs.IntVar(&c.outputTokens, "output-tokens", 24, "tokens generated per request (chat, prefix, siblings)")
	fs.IntVar(&c.groups, "groups", 8, "prefix: groups")
	fs.IntVar(&c.perGroup, "per-group", 8, "prefix: requests per group")
	fs.IntVar(&c.prefixTokens, "prefix-tokens", 1500, "prefix: shared prefix tokens per group")
	fs.IntVar(&c.suffixTokens, "suffix-tokens", 60, "prefix: distinct suffix tokens per request")
	fs.IntVar(&c.prompts, "prompts", 24, "siblings: distinct prompts")
	fs.IntVar(&c.samples, "samples", 4, "siblings: samples of each prompt, sent at once")
	fs.IntVar(&c.promptTokens, "prompt-tokens", 1000, "siblings: tokens per prompt after the system prompt")
	fs.StringVar(&c.traceFile, "trace", "", "trace: Mooncake JSONL file (timestamp, input_length, output_length, hash_ids)")
	fs.IntVar(&c.traceBlockSize, "trace-block-size", trace.DefaultBlockSize, "trace: tokens per hash id")
	fs.IntVar(&c.maxRequests, "max-requests", 0, "trace: replay only the first N entries (0: all)")
	fs.IntVar(&c.shards, "shards", 4, "vllm-sim shards")
	fs.IntVar(&c.routers, "routers", 2, "routers")
	fs.IntVar(&c.dataParallel, "data-parallel-size", 1, "each shard's data-parallel ranks (the driver's data_parallel_size): one API server, one KV event stream a rank; compare precise-prefix with precise-prefix-unpinned on more than one")
	fs.IntVar(&c.maxModelLen, "max-model-len", 8192, "each vllm-sim shard's --max-model-len: longer prompts (plus answer) get the engine's 400 and count as rejected")
	fs.StringVar(&c.simArgs, "sim-args", "", "extra vllm-sim flags, space separated (e.g. \"--sim-prefill-per-token 200us\")")
	fs.StringVar(&c.binDir, "bin", "", "directory with llmgw-router, nomad-driver-vllm and vllm-sim (default: this program's)")
	policies := fs.String("policies", "round-robin,least-loaded,approx-prefix,precise-prefix", "policies to compare, in order")
	fs.DurationVar(&c.slo.TTFT, "slo-ttft", 500*time.Millisecond, "goodput SLO: time to first token")
	fs.DurationVar(&c.slo.ITL, "slo-itl", 50*time.Millisecond, "goodput SLO: mean inter-token gap")
	fs.StringVar(&c.outDir, "out", "", "write report.json, report.md and PNG plots into this directory")
	fs.StringVar(&c.doc, "doc", "", "replace a generated section of this Markdown file (e.g. docs/BENCHMARKS.md) with the report; needs -out for the plots")
	fs.StringVar(&c.requestsOut, "requests-out", "", "write one JSON line per request of every policy (and rate, in a sweep) to this file (policy, rate, id, group, replica, sent_ms, ttft_ms, status, prompt_tokens, cached_tokens, predicted_cached_tokens), to trace routing turn by turn")
	fs.StringVar(&c.section, "section", "policies", "with -doc: the section's name in its marker comments (<!-- llmgw bench: begin NAME -->)")
	fs.BoolVar(&c.progress, "progress", isTerminal(os.Stderr), "show a progress bar on stderr (default: when stderr is a terminal)")
	fs.DurationVar(&c.timeout, "timeout", 30*time.Minute, "bound on the whole run")
	if code, done := parseFlags(fs, args, benchUsage, stdout, stderr); done {
		if code == 0 {
			return c, errHelpShown
		}
		return c, errUsageShown
	}
	if fs.NArg() != 0 {
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	var err error
	if c.policies, err = bench.SelectPolicies(*policies); err != nil {
		return c, err
	}
	if err := c.sweep.parse(&c); err != nil {
		return c, err
	}
	if c.fault.killAfter > 0 && c.sweep.rates != nil {
		return c, errors.New("-fault-kill-after and -rates cannot be combined: a fault run compares migration at one rate")
	}
	if c.doc != "" && c.outDir == "" && c.fault.killAfter == 0 {
		return c, errors.New("-doc needs -out (the plots it links to go there)")
	}
	if c.shards < 1 || c.routers < 1 || c.dataParallel < 1 {
		return c, fmt.Errorf("-shards, -routers and -data-parallel-size must be >= 1")
	}
	if c.maxModelLen < 1 {
		return c, fmt.Errorf("-max-model-len must be >= 1, got %d", c.maxModelLen)
	}
	return c, c.fault.check(&c)
}

// buildWorkload makes the configured workload and describes it.
func (c *benchConfig) buildWorkload() (workload.Workload, string, error) {
	switch c.workload {
	case "chat":
		w, err := workload.Chat(workload.ChatOptions{Users: c.users, Rounds: c.rounds, SystemTokens: c.systemTokens, DocTokens: c.docTokens,
			UserTokens: c.userTokens, ReplyTokens: c.outputTokens, Rate: c.rate, Seed: c.seed})
		return w, fmt.Sprintf("%d users x %d rounds, %d-token shared system prompt, %d-token document per user, %d-token questions, %d-token answers",
			c.users, c.rounds, c.systemTokens, c.docTokens, c.userTokens, c.outputTokens), err
	case "prefix":
		w, err := workload.SharedPrefix(workload.PrefixOptions{Groups: c.groups, PerGroup: c.perGroup, PrefixTokens: c.prefixTokens,
			SuffixTokens: c.suffixTokens, OutputTokens: c.outputTokens, Rate: c.rate, Seed: c.seed})
		return w, fmt.Sprintf("%d groups x %d requests, %d-token shared prefix, %d-token suffixes, %d-token answers",
			c.groups, c.perGroup, c.prefixTokens, c.suffixTokens, c.outputTokens), err
	case "siblings":
		w, err := workload.Siblings(workload.SiblingOptions{Prompts: c.prompts, Samples: c.samples, SystemTokens: c.systemTokens,
			PromptTokens: c.promptTokens, OutputTokens: c.outputTokens, Rate: c.rate, Seed: c.seed})
		return w, fmt.Sprintf("%d prompts x %d samples, %d-token shared system prompt, %d-token prompts, %d-token answers",
			c.prompts, c.samples, c.systemTokens, c.promptTokens, c.outputTokens), err
	case "trace":
		if c.traceFile == "" {
			return workload.Workload{}, "", errors.New("-workload trace needs -trace FILE")
		}
		fh, err := os.Open(c.traceFile)
		if err != nil {
			return workload.Workload{}, "", err
		}
		defer fh.Close()
		tr, err := trace.Parse(fh, c.traceBlockSize)
		if err != nil {
			return workload.Workload{}, "", fmt.Errorf("%s: %w", c.traceFile, err)
		}
		w, err := workload.Replay(tr, workload.ReplayOptions{Rate: c.rate, MaxRequests: c.maxRequests, Seed: c.seed})
		return w, fmt.Sprintf("Mooncake trace %s (%d-token blocks)", c.traceFile, c.traceBlockSize), err
	}
	if w, setup, ok, err := c.stress.build(c); ok {
		return w, setup, err
	}
	return workload.Workload{}, "", fmt.Errorf("unknown workload %q (have chat, prefix, siblings, trace, many-session, fan-out, mixed-tenants, b2b-saas, coding-agent)", c.workload)
}

func isTerminal(f *os.File) bool {
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// shardBlockSize is the KV block size of the fleet's shards (the block
// size of jobs/demo-sim.nomad.hcl, which cmd/llmgw/internal/fleet runs).
const shardBlockSize = 16
