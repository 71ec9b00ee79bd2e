# driver/kvevents (the block state), driver/kvevents/intake and
# driver/kvevents/forward, and their shared leaf packages.
#
#   make bench-kv   runs the KV-intake benchmarks on one core, the figures
#                   docs/BENCHMARKS.md reports under "KV intake".
#
# The end-to-end tests in driver/kvevents/intake build their own vllm-sim from this
# tree (or run $LLMGW_VLLM_SIM_BIN) and run bin/consul.

.PHONY: bench-kv

bench-kv: deps ## the KV-intake benchmarks on one core
	$(GO) test -run '^$$' -bench . -benchtime 2s -cpu 1 ./driver/kvevents/ ./driver/kvevents/intake/ ./internal/blockkey/
