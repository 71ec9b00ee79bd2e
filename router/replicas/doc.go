// Package replicas keeps the router's replica set: the static replicas from
// the config merged with the passing instances Consul reports, each joined
// with its load (load.Tracker), its KV state (exact mode when a driver
// session holds it) and a circuit breaker fed by the proxy. A replica that
// leaves the set leaves the block index at once; a draining one (Consul
// warning or maintenance) stays, with its KV state, marked for the
// scheduler's healthy filter. It also keeps the LoRA adapters each replica
// lists (SetAdapters), so an adapter's name resolves to the base replicas
// serving it.
//
// Membership flows one way, out of the set: Replace tells the KV ingest
// (KVState, router/ingest.Sink) of each replica that left and each that
// joined, with its model and declared layout (ingest.Member), and hands the
// drivers the ingest names to Drivers (kvwire.Receiver), which asks them
// for a snapshot. The set is built after both and neither reads it.
//
// It owns membership and per-replica health; it must not import driver/...,
// gin or the HTTP API, and imports router/ingest only for the event it
// sends. Consul instances arrive through the Source interface
// (consul.Watcher satisfies it).
package replicas
