# The router's growth sweep (router/scalebench).
#
#   make bench-scale   sweeps replicas (8-4,096), indexed blocks (100k-10M),
#                      prompt length (1k-128k tokens), peer sharing (routers
#                      2-32), snapshot apply (64-4,096 replicas, printed
#                      only) and Nomad discovery (64-4,096 replicas);
#                      writes docs/bench-scale/{points,peers}.csv,
#                      results.json and *.png, and rewrites the section of
#                      docs/BENCHMARKS.md between its markers. About ten
#                      minutes on two cores, about 1.5 GB of memory.
#
# Some parts alone (peers, snapshots, discovery), printed, writing no file:
#   go run ./router/scalebench/cmd/bench-scale -only snapshots -runs 3
# and put into the saved results, rewriting the files and the section:
#   go run ./router/scalebench/cmd/bench-scale -only peers,discovery -merge -runs 3 -label "..."
#
# BENCH_SCALE_LABEL names when, from which commit and where it ran in the
# report ("Made by make bench-scale on LABEL: ..."), as docs/BENCHMARKS.md
# asks of every table.

BENCH_SCALE_LABEL ?= $(shell date -u +%F) at commit $(shell git rev-parse --short HEAD 2>/dev/null), $(shell hostname)

.PHONY: bench-scale

bench-scale: deps ## sweep how routing, index memory, ingest and peer load grow; plots in docs/
	$(GO) run ./router/scalebench/cmd/bench-scale -out docs/bench-scale -doc docs/BENCHMARKS.md \
		-label "$(BENCH_SCALE_LABEL)"

# The driver at node scale: the real plugin binary under the plugin host
# with 8 vllm-sim shards of 2 data-parallel ranks each, all publishing KV
# events under load; reports the CPU and RSS of the plugin and of each
# supervisor (driver/nodescale_bench_test.go). About a minute.

.PHONY: bench-node

bench-node: deps ## the driver plugin's CPU and memory with 8 shards × 2 ranks under KV event load
	$(GO) test -run '^$$' -bench NodeScale -benchtime 1x -cpu 1 -v ./driver/
