# The fault suite (cmd/llmgw/internal/chaos): a fleet of two routers and
# four vllm-sim shards under a steady mixed load, faulted one part at a
# time (SIGKILL and restart of a router, the driver plugin, a shard's
# supervisor, an engine, the Consul agent; Consul stopped for 30 s), with
# a table of what the clients saw. About 100 s on two cores, so `make test`
# runs it too (in `go test ./...`; `make quick`'s -short skips it); this
# target runs it alone, verbosely, for the nightly run and its table.
#
#   make chaos                          runs it, the table in the log
#   CHAOS_TABLE=out.md make chaos       also writes the table there

CHAOS_TABLE ?=

.PHONY: chaos

chaos: deps bin/consul ## the fault suite alone (nightly): kill and restart each part of a fleet under load
	LLMGW_CHAOS_TABLE="$(if $(CHAOS_TABLE),$(abspath $(CHAOS_TABLE)))" $(GO) test -count=1 -v -timeout 15m \
		-run '^TestFaultsUnderLoad$$' ./cmd/llmgw/internal/chaos/
