// Package chaos faults a running fleet (cmd/llmgw/internal/fleet) while
// it serves, and says what the clients saw. Its test (`make chaos` runs it
// alone; `make test` runs it with the rest) keeps a steady mixed load of
// streamed and plain chat completions through two routers and four shards, and kills (SIGKILL), one at a time, a router,
// the driver plugin, a shard's supervisor, an engine and the Consul
// agent, restarting each as Nomad (or Consul's data dir) would, and stops
// Consul answering for 30 s. For each fault it tabulates requests failed,
// streams migrated, ended with an error event, cut or hung, the time
// until every router routes every replica exact again, processes left
// behind, and the routers' and plugin's memory after against before.
//
// The package holds the load (load.go), the table (table.go) and the
// readings of /proc and the routers' /metrics (probe.go); the faults
// themselves are the fleet's (fleet.KillDriver, fleet.RestartDriver and
// the like), so that an operator-facing fleet and this suite fault the
// same way. It imports only the standard library.
package chaos
