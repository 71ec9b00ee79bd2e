// Package server assembles llmgw-router from its parts and runs it: the
// OpenAI API listener (router/gateway's Handler), the admin listener (its
// AdminHandler, behind admin_token), each bounded by router/listener
// (connection cap, timeouts, header caps, optional TLS), the status page
// on the admin listener (router/statuspage at StatusPath), the separate
// KV-ingest listener for drivers (internal/kvwire's Receiver into
// router/ingest), the replica set
// fed by the static config and Consul watches (router/replicas), engine
// metrics scraping (router/enginemetrics, which also brings each replica's
// LoRA adapters), the per-replica capacity check that alarms when the index
// holds more of a replica than its engine advertises and repairs it by
// asking that replica's driver for a fresh snapshot, the router's own
// Consul registration as llmgw-router with an HTTP check, the expiry of
// silent drivers, and the API keys (router/auth, reloaded on change and on
// SIGHUP) with the tenants' limits (router/ratelimit), shared with the
// other routers through router/peers.
//
// Start first builds the router's shared state (core.go): the block index,
// the KV-cache group layouts, the ingest Sink, the KV Receiver, the load
// tracker, the replica set and the capacity check, each from the parts it
// lists as needs, which are built before it; membership flows from the
// replica set into the ingest, never back. A test builds them in every
// order those needs allow. Then, each step reading only what the steps
// before it built: it starts the replica sources (so readiness is known),
// the API keys and the tenants' limiter, the peer table (which shares
// the limiter's usage), and the request path (gateway.go: the metrics,
// whose collector is handed the parts it reads, the planner and the
// gateway); it opens and serves the listeners, starts the scrape and the
// expiry loops (startWatching) and registers the router (announce). No
// part is handed a closure that reads a field assigned after it.
//
// It owns process-level lifetime: Start opens every listener and goroutine,
// Close stops them in reverse order and waits. cmd/llmgw-router only parses
// flags and calls Run, adding the peers' policies (router/peerpolicy) as
// scheduler plugins; a custom build of the router passes its own Options
// to Run (WithPlugins adds scheduler plugin types). It must not import driver/....
package server
