# driver/kvevents and its shared leaf packages: KV-cache event intake.
#
#   make bench-kv   runs the KV-intake benchmarks on one core, the figures
#                   docs/BENCHMARKS.md reports under "KV intake".
#
# The end-to-end tests in driver/kvevents build their own vllm-sim from this
# tree (or run $LLMGW_VLLM_SIM_BIN) and run bin/consul.

.PHONY: bench-kv

bench-kv: deps ## the KV-intake benchmarks on one core
	$(GO) test -run '^$$' -bench . -benchtime 2s -cpu 1 ./driver/kvevents/ ./internal/blockkey/
