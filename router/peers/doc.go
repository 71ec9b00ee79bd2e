// Package peers shares each router's own load with the other llmgw-router
// instances, so that routers behind one Consul name weigh each other's
// requests within a fraction of a second instead of one engine scrape
// later.
//
// A router counts the requests it has in flight to each replica, with
// their prompt tokens and the uncached prefill still queued
// (load.Tracker). The engine's own metrics include every router's
// requests, but only as of the last scrape (1 s by default), and they
// cannot say how much prefill a waiting request brings. Two routers that
// each see an idle replica therefore both send it their next long prompt.
// Here each router posts its counts to every other router registered in
// Consul, whenever they change (at most once per interval) and at least
// once a second; each router adds its peers' counts to its own when it
// scores candidates. A router sends at most PublisherOptions.MaxRate
// messages a second to all its peers together (DefaultMaxRate): past a
// few peers each gets changes less often, so what one router sends and
// receives, and the CPU it spends on them, stays flat as the fleet grows,
// while the delay grows with it (about 350 ms at 32 routers). There is no
// shared store: the state is each router's
// own, restated in full in every message, so a lost message is made good
// by the next one and a router that stops reporting drops out after
// Options.Expiry.
//
// The wire is HTTP on the router's ingest listener, at Path, with the
// routers' shared bearer token (peer_token), never the drivers'
// (kv_token): a GPU node may report blocks, not load or tenants' spend.
// Two encodings carry the same state. JSON:
//
//	{"version": 2, "router": "<instance id>", "seq": 42,
//	 "replicas": [{"replica": "<alloc>/<task>", "in_flight": 3,
//	               "in_flight_tokens": 9000, "prefill_tokens": 4000}],
//	 "tenants": [{"tenant": "team-a", "requests": 1200, "tokens": 480000,
//	              "in_flight": 2, "streams": 1}]}
//
// and the compact wire (version 3, compact.go), which names replicas by
// their index in a directory the sender keeps and each receiver holds
// per peer: four varints a replica, names sent once. A fleet's cost in
// JSON grows with routers × replicas in bytes, decoding and map updates;
// on the compact wire a message costs a receiver an array update per
// replica (the table numbers replica ids in slots), so 32 routers over
// 4,096 replicas stay within a few percent of a core each. Every router
// reads both, and announces the compact wire in its answers; a publisher
// sends JSON until a peer has, so mixed versions keep sharing. The table
// hands the load tracker the sum at most every SetPublishEvery.
//
// Version 2 adds tenants: per tenant with limits, the running totals of
// requests and tokens the sender charged since it started and what it has
// in flight (router/ratelimit). A receiver charges the growth of a peer's
// totals to its own buckets, so a tenant's limits hold across the fleet.
// A router without API keys sends version 1, without tenants, which
// routers from before version 2 still read; every router reads both.
//
// The token proves a sender is one of the fleet's routers; the Lister
// (the routers Consul or Nomad lists) bounds what it can claim. A message
// is taken only from an address where a router is listed, and the table
// holds no more peers from an address than are listed there: a new
// router id beyond that replaces the one heard from least recently, as a
// restarted router's does. Without a Lister the table holds MaxPeers.
//
// Answers: 204 accepted (or older than what the router holds, which is
// ignored), 400 a malformed message (the body says what is wrong), 401 a
// missing or wrong token, 403 a source where no router is listed, 409 a
// compact message extending a directory not held (the sender restates
// it), 413 a body over MaxBody, 503 a list not read yet or a full table.
//
// It owns the message, the table of peers' reports and the publisher. It
// must not import gin, driver/... or the gateway; it reads
// router/load and router/ratelimit for their load types.
package peers
