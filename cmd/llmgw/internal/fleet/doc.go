// Package fleet runs a whole llmgw chain on one machine, as real processes:
// a Consul agent (bin/consul, its own single server, its state in the work
// dir), nomad-driver-vllm under plugin/pluginhost running vllm-sim shards
// as driver tasks with KV events (the task config of
// jobs/demo-sim.nomad.hcl), each shard's Consul service registered the
// way Nomad registers it from that jobspec's service block (service vllm,
// tag llmgw, the llmgw-* meta, an HTTP check on /health), and llmgw-router
// processes with a generated config, registered in Consul as llmgw-router.
// With Options.Discovery = DiscoveryNomad it runs on Nomad's own service
// discovery instead: no Consul agent, but the stand-in of Nomad's services
// API (cmd/nomad-standin, run as a process like the others, so the CLI
// links no test support), where the fleet registers the
// shards and routers as a Nomad client does from
// jobs/demo-sim-nomad.nomad.hcl and jobs/llmgw-router-nomad.nomad.hcl (the
// llmgw meta as key=value tags), runs their /health checks itself and
// reports the results; routers and the driver get discovery = "nomad".
// The catalogue interface (catalogue.go) is where the two differ.
//
// The demo (`llmgw demo`), the benchmarks (cmd/llmgw/internal/bench) and end-to-end
// tests start it; Close stops and reaps every process, also after a failed
// or cancelled Start.
//
// No process outlives the fleet's owner (the process that called Start),
// even when Close never runs because the owner was killed with SIGKILL or
// died of SIGPIPE: Consul, the routers and the plugin have a parent-death
// signal (SIGKILL, forked from a thread kept for their lifetime by
// internal/localproc/pdeathsig), and the driver's owner_pid option makes each
// shard's supervisor watch the owner through a pidfd and, on its death,
// stop the engine as StopTask would (SIGTERM to its group, SIGKILL 5 s
// later). A hard kill still leaves files: the work dir when Options.WorkDir
// was empty (a temp dir Close would have removed), and the plugin's socket
// dir under TMPDIR (plugin/pluginhost removes it whenever it outlives the
// plugin).
//
// The fleet never runs a real `nomad agent -dev`: Nomad's module is not
// served to this build, so the fleet always plays the Nomad client itself
// through plugin/pluginhost, which speaks the same plugin protocol over
// go-plugin; that path is the only one implemented and tested.
// CONTRIBUTING.md says how to check the driver against a real agent by
// hand.
//
// It is the one production package allowed to import plugin/pluginhost
// (internal/tests/layering says why). It must not import router/... or
// driver/...: it drives their binaries, as an operator would.
package fleet
