# llmgw bench: routing policies compared on a local fleet (cmd/llmgw/internal/bench,
# `llmgw bench`).
#
#   make bench-policies        sweeps every policy (the default, round-robin,
#                              the peers) over arrival rates, one fleet
#                              per workload, each sweep three times on
#                              seeds 1-3 (BENCH_RUNS), and rewrites the
#                              "Rate sweeps" sections of docs/BENCHMARKS.md
#                              (between marker comments: one table per
#                              workload) and sweep.json, sweep.md and
#                              sweep.png in docs/bench/sweep-<workload>/:
#                              about 3.5 hours on 2 cores (195 cells a
#                              run, about 70 minutes, 26 of them coding
#                              agents; three runs took 4,591 s for coding
#                              agents, 2,259 s for four agents and 1,544
#                              s for mixed tenants on 2026-12-06;
#                              docs/notes/2026-12-06-capacity-ratio-run-by-run.md)
#   make bench-policies-quick  five of the sweeps with -quick (lowest and
#                              highest rate, 48 requests a run, the default
#                              and llmd-sticky, one run) into
#                              $(BENCH_QUICK_OUT), docs untouched: a check
#                              of the machinery (263 s of sweeps on 2
#                              cores at load under 1.5, 2026-12-05)
#   make bench-policies-single the single-rate comparisons (chat, the
#                              sample trace, the tool-agent trace) on four
#                              shards, each into report.md, report.json and
#                              plots in docs/bench/<workload>/, which
#                              docs/BENCHMARKS.md links: about 10 minutes
#   make bench-policies-steady the two fan-out sweeps over 40 s of bursts
#                              instead of 10 (32 bursts at 0.8 bursts/s,
#                              so a context's cold first burst is one of
#                              32 with one agent and one of its eight with
#                              four), into docs/bench/sweep-fan-out*-40s/,
#                              which docs/BENCHMARKS.md links: three
#                              runs of 27 cells a shape, about 1.5-2
#                              hours on 2 cores (18 cells of one agent at
#                              0.8 took 677 s on 2026-12-06; the 33
#                              minutes once quoted were one run)
#   make bench-dp-pinning      llmgw's default with and without data-parallel
#                              rank pinning (precise-prefix against
#                              precise-prefix-unpinned) on 2 replicas of 4
#                              DP ranks, three runs into
#                              $(BENCH_DP_OUT)/run-N (and each request in
#                              requests-N.jsonl), docs untouched: about
#                              3 minutes on 2 cores; the figures are in
#                              docs/notes/2026-12-05-dp-pinning-bench.md
#   make bench                 runs bench-policies too, before the Go benchmarks
#
# Sizes: -duration 10s gives each rate about ten seconds of arrivals (rate x
# 10 s requests, or bursts for fan-out), so a sweep costs the same time at
# every rate and the highest rates, where the knees lie, get the most
# requests; three rates from light load to past round-robin's knee (on
# fan-out a fourth, twice the knee's, where every policy saturates) and,
# where the host reaches it, the peers' knee. Rates stay where the shared
# 2-core host keeps the offered rate (the reports' send lag says where it
# did not).
#
# The engine is a 70B-class model (BENCH_SIM_70B): 500 us of prefill a
# token and 25 ms a decode step, against vllm-sim's default 8B-class 250 us
# and 12 ms, so that the cache-aware policies saturate within the rates the
# host can offer; the SLO is MLPerf's for Llama 2 70B (TTFT 2 s, 200 ms a
# token). docs/BENCHMARKS.md, "Rate sweeps", gives the reasoning.

BENCH_SIM_70B ?= --sim-prefill-per-token 500us --sim-inter-token-latency 25ms
# The peers' earlier defaults, then their current ones (docs/PEER_POLICIES.md).
# dynamo-1.7 is not swept: at its defaults it decides as dynamo does, so
# the dynamo column stands for both.
BENCH_SWEEP_PEERS ?= dynamo,sglang-cache-aware,llmd-default,llmd-precise,aibrix-prefix,llmd-sticky,smg-1.9
BENCH_SWEEP_POLICIES ?= round-robin,precise-prefix,$(BENCH_SWEEP_PEERS)
# Every committed sweep is the median of BENCH_RUNS runs on seeds 1, 2, 3
# (-runs): a comparison whose range of ratios holds 1 is a tie. Three runs
# of a sweep take 20-40 minutes, past llmgw bench's 30-minute default
# -timeout; a run cut short keeps the completed ones in sweep-partial.json.
BENCH_RUNS ?= 3
BENCH_SWEEP_COMMON ?= -seed 1 -runs $(BENCH_RUNS) -duration 10s -slo-ttft 2s -slo-itl 200ms -noise 0.15 -progress=false -timeout 2h
# One agent context (the issue's shape); the default without speculative
# credit runs beside it, the check of what the credit is worth.
BENCH_FANOUT_FLAGS ?= -workload fan-out -shards 8 -rates 0.2,0.4,0.8,1.6 -policies round-robin,precise-prefix,precise-prefix-no-spec,$(BENCH_SWEEP_PEERS) -sim-args "$(BENCH_SIM_70B)"
# Four agents taking turns at the bursts, each with its own context: a
# burst's context is cold on every replica far more often than with one.
# Rates past 0.8, where the default and the best peers still met the SLO
# in some runs, so that the capacity ratio is read in every run.
BENCH_AGENTS_FLAGS ?= -workload fan-out -agents 4 -shards 8 -rates 0.2,0.4,0.8,1.2,1.6 -policies round-robin,precise-prefix,precise-prefix-no-spec,$(BENCH_SWEEP_PEERS) -sim-args "$(BENCH_SIM_70B)"
# Unique prompts of 1,500 tokens (750 ms of prefill each): the work the
# cache cannot save, which saturates 16 shards by 24 req/s under
# round-robin; the best policies hold to between 24 and 32.
BENCH_TENANTS_FLAGS ?= -workload mixed-tenants -shards 16 -unique-tokens 1500 -rates 8,16,24,32 -policies $(BENCH_SWEEP_POLICIES) -sim-args "$(BENCH_SIM_70B)"
# Caches of 768 blocks (12,288 tokens) a shard, so that the sessions'
# histories overflow them and eviction decides what a replica still holds.
BENCH_SESSIONS_FLAGS ?= -workload many-session -shards 8 -rounds 4 -rates 4,8,16 -max-model-len 4096 -policies $(BENCH_SWEEP_POLICIES) -sim-args "--num-gpu-blocks-override 768 $(BENCH_SIM_70B)"
# llm-d's B2B SaaS shape (150 groups of 5 prompts, 6,000-token system
# prompts, 1,200-token questions) scaled to 3,072-token contexts (2,540 +
# 508 tokens), so that a cold prompt's 1.5 s of prefill fits the 2 s
# TTFT SLO as llm-d's does on its H100s.
BENCH_B2B_FLAGS ?= -workload b2b-saas -shards 8 -max-model-len 3072 -rates 4,8,16 -policies $(BENCH_SWEEP_POLICIES) -sim-args "$(BENCH_SIM_70B)"
# Coding-agent sessions (-rates in sessions a second), whose contexts grow
# past 8,192 tokens, on the simulator's 8B-class engine: at 70B timing the
# shared 7,000-token head alone takes 3.5 s to prefill, past the 2 s SLO,
# and a sub-agent group of 51 (the 90th percentile) 15 s, so no policy
# kept 90% of requests within the SLO at any rate and capacity could not
# be read (docs/notes/2026-12-05-coding-agent-sweep.md).
BENCH_AGENT_FLAGS ?= -workload coding-agent -shards 8 -max-model-len 32768 -rates 0.8,1.6,3.2 -policies $(BENCH_AGENT_POLICIES)
# 20 s of session starts (after the common flags, whose 10 s it
# overrides): a session lasts about 45 s. Three runs of five policies at
# three rates are 45 of them, about 100 s each (76 minutes, within the
# common -timeout).
BENCH_AGENT_DURATION ?= -duration 20s
# The current peers' defaults (dynamo-1.7 decides as dynamo): a run of
# the coding-agent sweep is about 100 s a policy and rate.
BENCH_AGENT_POLICIES ?= round-robin,precise-prefix,dynamo,llmd-sticky,smg-1.9
BENCH_QUICK_OUT ?= $(or $(TMPDIR),/tmp)/llmgw-bench-quick
# -quick checks the sweeps' machinery, not the ranking: the default and
# one current peer at two rates, on every workload but one-agent fan-out
# (four agents run the same generator). Six sweeps of three or four
# policies took 9.8 minutes.
BENCH_QUICK_POLICIES ?= precise-prefix,llmd-sticky
# After each sweep's own flags and the common ones, which they override.
BENCH_QUICK_FLAGS ?= -quick -runs 1 -policies $(BENCH_QUICK_POLICIES)

BENCH_POLICIES ?= round-robin,least-loaded,approx-prefix,prefix-load,precise-prefix
BENCH_CHAT_FLAGS ?= -workload chat -rate 4 -seed 1 -policies $(BENCH_POLICIES)
BENCH_TRACE_FLAGS ?= -workload trace -trace cmd/llmgw/internal/bench/trace/testdata/sample.jsonl -rate 3 -seed 1 -policies $(BENCH_POLICIES)
BENCH_SYNTH_FLAGS ?= -workload trace -trace cmd/llmgw/internal/bench/trace/testdata/toolagent-synth.jsonl -rate 3 -seed 1 -policies round-robin,prefix-load,precise-prefix

# The 10 s fan-out sweeps hold one cold burst per context and few warm
# ones, so the run's first second decides them; over 40 s an agent's cold
# first burst weighs as it does in an agent that lives for tens of steps
# or more (still more than in most). docs/BENCHMARKS.md, "Fan-out at
# steady state".
# The flags after the sweeps' own override theirs (the last one wins).
BENCH_STEADY_FLAGS ?= -duration 40s -rates 0.2,0.4,0.8 -policies $(BENCH_SWEEP_POLICIES)

# Shared-prefix groups interleaved at random: a chat workload's rounds
# come round in a cycle that the engine's rotating rank choice follows by
# chance, so unpinned chat looks pinned (the note above says more).
BENCH_DP_FLAGS ?= -workload prefix -groups 8 -per-group 12 -rate 4 -seed 1 -shards 2 -data-parallel-size 4 -policies precise-prefix,precise-prefix-unpinned -progress=false
BENCH_DP_OUT ?= $(or $(TMPDIR),/tmp)/llmgw-bench-dp
BENCH_DP_RUNS ?= 1 2 3

.PHONY: bench-policies bench-policies-quick bench-policies-single bench-policies-steady bench-dp-pinning

bench: bench-policies

bench-policies: build bin/consul ## sweep every routing policy over arrival rates; rewrites docs/BENCHMARKS.md's rate sweeps
	./bin/llmgw bench $(BENCH_FANOUT_FLAGS) $(BENCH_SWEEP_COMMON) -out docs/bench/sweep-fan-out -doc docs/BENCHMARKS.md -section sweep-fan-out
	./bin/llmgw bench $(BENCH_AGENTS_FLAGS) $(BENCH_SWEEP_COMMON) -out docs/bench/sweep-fan-out-agents -doc docs/BENCHMARKS.md -section sweep-fan-out-agents
	./bin/llmgw bench $(BENCH_TENANTS_FLAGS) $(BENCH_SWEEP_COMMON) -out docs/bench/sweep-mixed-tenants -doc docs/BENCHMARKS.md -section sweep-mixed-tenants
	./bin/llmgw bench $(BENCH_SESSIONS_FLAGS) $(BENCH_SWEEP_COMMON) -out docs/bench/sweep-many-session -doc docs/BENCHMARKS.md -section sweep-many-session
	./bin/llmgw bench $(BENCH_B2B_FLAGS) $(BENCH_SWEEP_COMMON) -out docs/bench/sweep-b2b-saas -doc docs/BENCHMARKS.md -section sweep-b2b-saas
	./bin/llmgw bench $(BENCH_AGENT_FLAGS) $(BENCH_SWEEP_COMMON) $(BENCH_AGENT_DURATION) -out docs/bench/sweep-coding-agent -doc docs/BENCHMARKS.md -section sweep-coding-agent

bench-policies-quick: build bin/consul ## the rate sweeps in a few minutes (-quick), docs untouched
	./bin/llmgw bench $(BENCH_AGENTS_FLAGS) $(BENCH_SWEEP_COMMON) $(BENCH_QUICK_FLAGS) -out $(BENCH_QUICK_OUT)/fan-out-agents
	./bin/llmgw bench $(BENCH_TENANTS_FLAGS) $(BENCH_SWEEP_COMMON) $(BENCH_QUICK_FLAGS) -out $(BENCH_QUICK_OUT)/mixed-tenants
	./bin/llmgw bench $(BENCH_SESSIONS_FLAGS) $(BENCH_SWEEP_COMMON) $(BENCH_QUICK_FLAGS) -out $(BENCH_QUICK_OUT)/many-session
	./bin/llmgw bench $(BENCH_B2B_FLAGS) $(BENCH_SWEEP_COMMON) $(BENCH_QUICK_FLAGS) -out $(BENCH_QUICK_OUT)/b2b-saas
	./bin/llmgw bench $(BENCH_AGENT_FLAGS) $(BENCH_SWEEP_COMMON) $(BENCH_AGENT_DURATION) $(BENCH_QUICK_FLAGS) -out $(BENCH_QUICK_OUT)/coding-agent

bench-policies-single: build bin/consul ## rerun the single-rate routing-policy comparisons into docs/bench/<workload>/
	./bin/llmgw bench $(BENCH_CHAT_FLAGS) -out docs/bench/chat
	./bin/llmgw bench $(BENCH_TRACE_FLAGS) -out docs/bench/trace
	./bin/llmgw bench $(BENCH_SYNTH_FLAGS) -out docs/bench/trace-synth

bench-policies-steady: build bin/consul ## the fan-out sweeps over 40 s of bursts, into docs/bench/sweep-fan-out*-40s/
	./bin/llmgw bench $(BENCH_FANOUT_FLAGS) $(BENCH_SWEEP_COMMON) $(BENCH_STEADY_FLAGS) -out docs/bench/sweep-fan-out-40s
	./bin/llmgw bench $(BENCH_AGENTS_FLAGS) $(BENCH_SWEEP_COMMON) $(BENCH_STEADY_FLAGS) -out docs/bench/sweep-fan-out-agents-40s

bench-dp-pinning: build bin/consul ## default routing with and without DP rank pinning on 2 replicas x DP 4, three runs
	mkdir -p $(BENCH_DP_OUT)
	for n in $(BENCH_DP_RUNS); do \
		./bin/llmgw bench $(BENCH_DP_FLAGS) -out $(BENCH_DP_OUT)/run-$$n -requests-out $(BENCH_DP_OUT)/requests-$$n.jsonl || exit 1; \
	done
