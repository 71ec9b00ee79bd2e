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
// A registration whose allocation's checks cannot be read is critical.
//
// # Watching
//
// A Watcher runs blocking queries on one service name (X-Nomad-Index, the
// WaitTime as ?wait=). Nomad's index moves with registrations only, not
// with check results, so the watcher also reads the checks after every
// query: WaitTime bounds how long a change of health takes to show
// (default 5 s). The loop is consul's (Watcher is consul.Watcher on a
// Nomad source): errors back off with a cap and keep the last known set,
// and the API (Changed, Current, Status, Close) is the same.
package nomad
