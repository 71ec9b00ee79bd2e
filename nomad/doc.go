// Package nomad discovers llmgw replicas and routers in Nomad's own service
// catalogue (services with provider = "nomad", Nomad 1.3 and later), as an
// alternative to Consul for clusters that run without it. It wraps
// github.com/hashicorp/nomad/api: blocking queries of Services().Get, and
// each registration's health from the Nomad checks of its allocation
// (Allocations().Checks, Nomad 1.4 and later).
//
// It shares the Consul conventions and conversion (package consul): a
// registration becomes a consul.Instance and consul.ConvertReplicas or
// consul.ConvertRouters turns it into the same Replica or Router a Consul
// watch gives, so routing cannot tell the two apart. It must not import
// router/..., driver/..., jobs/... or cmd/...
//
// # Conventions
//
// Nomad service registrations carry tags but no meta, so the meta keys of
// package consul travel as tags "key=value": a replica is tagged
//
//	llmgw
//	llmgw-model=<served model name>
//	llmgw-replica=${NOMAD_ALLOC_ID}/${NOMAD_TASK_NAME}
//	llmgw-block-size=16        (optional)
//	llmgw-kv-events=true       (optional)
//
// and a router (service llmgw-router) llmgw-kv-ingest-port=<port> and,
// optionally, llmgw-admin-port=<port>. Only tags whose key starts with
// "llmgw-" are read as meta; every tag stays in Tags.
//
// # Health
//
// Nomad runs the checks of provider = "nomad" services itself and reports
// them per allocation, not in the service catalogue, and a failing check
// never removes a registration. Health maps them onto the Consul states
// the converters know:
//
//	healthiness check failing or pending   critical: the replica leaves routing
//	readiness check (on_update = "ignore")
//	  failing or pending                   warning: the replica drains
//	all passing, or no checks              passing
//
// A registration whose allocation's checks cannot be read is critical
// until a later read succeeds.
//
// # Watching
//
// A Watcher runs blocking queries on one service name (X-Nomad-Index, the
// WaitTime as ?wait=), at most one per MinInterval (1 s) however often
// the registrations change. Nomad keeps check results on the client node
// that runs them and answers them per allocation only: neither the
// servers' catalogue, its index nor the event stream carries them (the
// Service topic has registrations only). So after every query the watcher
// reads the checks of allocations it has not seen at once, and refreshes
// the others from a token bucket that fills at HealthRate (20) reads per
// second: each allocation at most once per WaitTime (5 s), the ones read
// longest ago first. A fleet of up to HealthRate × WaitTime (100)
// allocations thus has every allocation read every 5 s; a larger one every
// allocations / HealthRate seconds (50 s at 1,000). That is the price of a
// bound: one watcher makes, in steady state,
//
//	at most 1/MinInterval service queries per second (1/WaitTime, 0.2,
//	  while the registrations stand still), plus
//	at most HealthRate checks reads per second (20), plus
//	one checks read per allocation new to it,
//
// whatever the fleet's size, where reading every allocation each wait
// made replicas/WaitTime calls per second per watcher. With 1,000
// replicas and 8 routers that bound is 8 × 20.2 = 162 calls per second
// in all; BenchmarkDiscoveryCalls measures 135 against the stand-in
// (nomadtest), where reading every allocation each wait made 1,335. A check that fails still removes its replica
// from routing within one refresh round, and a crashed allocation's
// registration goes at once (Nomad deregisters it; the blocking query
// returns). The loop is consul's (Watcher is consul.Watcher on a Nomad
// source): errors back off with a cap and keep the last known set, and
// the API (Changed, Current, Status, Close) is the same.
package nomad
