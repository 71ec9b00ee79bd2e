# driver/kvevents and its shared leaf packages: KV-cache event intake.
#
#   make bench-kv   runs the KV-intake benchmarks on one core, the figures
#                   docs/BENCHMARKS.md reports under "KV intake".
#
# The end-to-end tests in driver/kvevents run bin/vllm-sim (built by `build`;
# they build a private copy when it is absent) and bin/consul.

.PHONY: bench-kv

bench-kv: deps
	$(GO) test -run '^$$' -bench . -benchtime 2s -cpu 1 ./driver/kvevents/ ./internal/blockkey/
