// Package consul wraps github.com/hashicorp/consul/api for llmgw: service
// registration with an HTTP health check, deregistration on shutdown, and
// blocking-query watches of service instances with their summed health
// (Health: critical, maintenance, warning, passing). The nested module
// consul/agent pins the MPL-2.0 Consul v1.14.11 build that tests and the demo
// run as a real agent (bin/consul); consul/consultest starts it.
//
// It owns the Consul conventions below and the conversion of catalog entries
// into plain values (Replica, Router). It must not import router/...,
// driver/..., jobs/... or cmd/...: both the router and the driver use it.
//
// # Conventions
//
// Model replicas carry the tag "llmgw" and this service meta:
//
//	llmgw-model       served model name (required)
//	llmgw-replica     replica id, "<nomad alloc id>/<task name>" (required)
//	llmgw-block-size  engine KV block size in tokens (default 16, vLLM's)
//	llmgw-kv-events   "true" when the driver forwards the replica's KV events
//	                  (default "false")
//	llmgw-kv-cache-groups  a hybrid model's KV-cache groups in group order,
//	                  e.g. "full,sliding_window:128" or "full,mamba"
//	                  (default: one full-attention group; the replica's KV
//	                  events, when they name the groups, win)
//	llmgw-role        "", "agg", "prefill" or "decode": the replica's part
//	                  in disaggregated serving (router/disagg)
//
// Routers register as service "llmgw-router" (so clients reach them as
// llmgw-router.service.consul) with an HTTP check on their /health path and
// service meta:
//
//	llmgw-kv-ingest-port  the TCP port, on the service address, where the
//	                      router accepts KV updates from drivers (required)
//
// # Watching
//
// The shape follows traefik's Consul catalog provider: fetch.go talks to
// Consul and returns plain Instances with their health; convert.go turns
// them into Replicas (passing, or draining when warning or in maintenance;
// critical ones are left out) or Routers (passing only) (pure; one bad
// entry is skipped and reported, never fatal); watch.go points loop.go's
// Watcher at Consul's health endpoint. The loop runs blocking queries on
// any Source (WaitIndex, unchanged results skipped, capped backoff on
// errors, the last known set kept while the catalogue is unreachable);
// package nomad runs it on Nomad's service registrations (WatchSource). A
// change is a wake-up on a channel of capacity 1; the consumer then reads
// the whole set.
//
// Routers find replicas either in named services (WatchReplicas) or in every
// service tagged llmgw, whatever it is called (WatchAllReplicas: a blocking
// query on the catalog's service list plus one watcher per tagged service,
// merged before conversion). Drivers find routers with WatchRouters.
package consul
