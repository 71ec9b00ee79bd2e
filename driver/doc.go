// Package driver is the Nomad task driver "vllm": config schemas, the task
// lifecycle, the shard supervisor, logs, stats, fingerprint, task events and
// recovery. Its subpackage supervisor keeps each engine alive across plugin
// restarts and records its exit; kvevents holds the KV block state, which
// kvevents/intake fills from the engines and kvevents/forward sends to the
// routers.
//
// The driver never imports router/... or gin: it talks to routers only through
// the shared wire package over the network.
package driver
