// Package scalebench is the router's growth sweep (`make bench-scale`):
// how the routing decision, the index's memory, the KV ingest, peer load
// sharing, snapshot apply and Nomad discovery grow with the fleet,
// measured on the real packages in one process, and the decision set
// against its physical floor on the same machine in the same minutes.
//
// The decision's axes are swept from a baseline of 64 replicas,
// 1,000,000 indexed blocks, an 8k-token prompt and one router:
//
//   - replicas 8 to 4,096: decision p50/p99, index bytes per block, ingest
//     block events per CPU-second;
//   - indexed blocks 100k to 10M: the same;
//   - prompt length 1k to 128k tokens: decision p50/p99.
//
// Three parts run after them, and alone with `bench-scale -only` (and
// into the saved results with -merge):
//
//   - peers, routers 2 to 32 × 64, 1,024 and 4,096 replicas: one router's
//     side of peer load sharing run in real time (peersim.go), router/peers'
//     publisher at its own pacing over real loopback HTTP, every replica's
//     load changing at every read; its share of a core and bytes per
//     second at the publisher's rate (peers.PublisherOptions.Period);
//   - snapshots, replicas 64 to 4,096: the time to apply a whole fleet's
//     snapshots (Index.Replace per replica) to an empty index and to one
//     holding the fleet, with their log-log slopes, which must stay at
//     most 1.1 (O(replicas)); printed and kept in results.json, not in
//     docs/BENCHMARKS.md;
//   - discovery, replicas 64 to 4,096: the Nomad API calls per second of
//     8 routers watching the replicas with nomad's defaults, against the
//     Nomad stand-in (nomad/nomadtest) in the process. The sweep is test
//     support for that reason: no deployed binary links it.
//
// The decision is what the gateway runs per request after tokenization:
// hash the prompt into block keys (internal/blockkey), build the candidates
// from the replica set (router/replicas) and schedule with the default
// configuration (router/scheduler over router/index), the fleet's KV state
// fed through router/ingest so every replica it accepted is in exact mode.
// Each prompt is on 64 holders at every fleet size, so the replicas axis
// grows the fleet around a prompt, not the prompt's holders (the scenario
// is stated in router/scheduler/README.md; BenchmarkDecision runs its 64-
// and 4,096-replica points in one process).
// Its floor is the prompt's hash plus one dependent random memory load per
// block the index walk probes, over a working set as large as the index.
//
// The index may refuse holders past its capacity (index.ErrFull); the sweep
// does not assume a capacity: it counts the replicas the index accepted and
// reports them beside each figure, so it runs unchanged when the capacity
// grows.
//
// Workloads are deterministic (fixed seeds); the timings are the machine's.
// Each figure is the median of Config.Runs runs, decision and floor
// alternated within a run.
package scalebench
