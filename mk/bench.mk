# llmgw bench: routing policies compared on a local fleet (cmd/llmgw/internal/bench,
# `llmgw bench`).
#
#   make bench-policies   reruns the comparisons docs/BENCHMARKS.md reports
#                         under "Routing policies": each rewrites its own
#                         generated section there (between marker comments)
#                         and its report.json, report.md and plots in
#                         docs/bench/<section>/
#   make bench            runs them too, before the Go benchmarks
#
# Each run starts Consul, the driver with four vllm-sim shards and two
# routers (cmd/llmgw/internal/fleet), then replays one deterministic workload per
# policy: about 10 minutes for all three comparisons.

BENCH_POLICIES ?= round-robin,least-loaded,approx-prefix,prefix-load,precise-prefix
BENCH_CHAT_FLAGS ?= -workload chat -rate 4 -seed 1 -policies $(BENCH_POLICIES)
BENCH_TRACE_FLAGS ?= -workload trace -trace cmd/llmgw/internal/bench/trace/testdata/sample.jsonl -rate 3 -seed 1 -policies $(BENCH_POLICIES)
BENCH_SYNTH_FLAGS ?= -workload trace -trace cmd/llmgw/internal/bench/trace/testdata/toolagent-synth.jsonl -rate 3 -seed 1 -policies round-robin,prefix-load,precise-prefix

.PHONY: bench-policies

bench: bench-policies

bench-policies: build bin/consul ## rerun the routing-policy comparisons in docs/BENCHMARKS.md
	./bin/llmgw bench $(BENCH_CHAT_FLAGS) -out docs/bench/chat -doc docs/BENCHMARKS.md -section chat
	./bin/llmgw bench $(BENCH_TRACE_FLAGS) -out docs/bench/trace -doc docs/BENCHMARKS.md -section trace
	./bin/llmgw bench $(BENCH_SYNTH_FLAGS) -out docs/bench/trace-synth -doc docs/BENCHMARKS.md -section trace-synth
