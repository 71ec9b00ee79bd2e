package driver

import (
	"encoding/json"
	"net"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/llmgw/llmgw/driver/kvevents/intake"
)

// launch is everything that decides an engine's command line. It is plain
// data so buildArgs stays a pure function.
type launch struct {
	Task   TaskConfig
	Engine string // engine binary, as configured
	Host   string // address to serve the API on
	Port   int    // the allocated HTTP port (leader only)
	// KVDir is the directory of the engine's ipc:// KV-event sockets.
	// Without it, KVPort is the replica's KV-event listener port, 0 when
	// the shard publishes no events, and ReplayPort the engine's replay
	// port, 0 for none.
	KVDir              string
	KVPort, ReplayPort int
}

// roleDecision says whether the engine gets --kv-transfer-config: a
// prefill or decode task of a vLLM engine.
func roleDecision(t TaskConfig, engine string) bool { return t.disaggregated() && isVLLM(engine) }

// kvDecision says whether a shard gets a KV-event socket, and why not when it
// does not (docs/ARCHITECTURE.md, behaviour 1): only when its config asks for events, its
// engine is vLLM, and it is the replica's leader shard.
func kvDecision(t TaskConfig, engine string) (bool, string) {
	switch {
	case !t.KVEvents:
		return false, "kv_events is not set in the task config"
	case !isVLLM(engine):
		return false, "engine " + filepath.Base(engine) + " is not vLLM"
	case t.rank() != 0:
		return false, "shard rank " + strconv.Itoa(t.rank()) + " is not the leader; only rank 0 publishes"
	}
	return true, ""
}

// isVLLM recognises vLLM's CLI, and vllm-sim, which has the same one.
func isVLLM(engine string) bool {
	b := filepath.Base(engine)
	return b == "vllm" || b == "vllm-sim"
}

// kvEventsConfig is vLLM's --kv-events-config JSON. With a socket
// directory both endpoints are ipc://, which vLLM binds (its PUB and its
// replay ROUTER) and the driver's listeners connect to. Otherwise the
// endpoint names a loopback address (no "*"), so the engine's PUB socket
// connects to the SUB socket the driver bound; the replay ROUTER binds on
// the engine side.
type kvEventsConfig struct {
	Enable         bool   `json:"enable_kv_cache_events"`
	Publisher      string `json:"publisher"`
	Endpoint       string `json:"endpoint"`
	ReplayEndpoint string `json:"replay_endpoint,omitempty"`
	Topic          string `json:"topic"`
}

// buildArgs returns the engine's argv after the binary: vLLM's
// `serve MODEL` command line. Extra args from the task config come last;
// validation has refused any that set a flag written here (reserved.go),
// so they add to what the driver derived and never replace it.
func buildArgs(l launch) []string {
	t := l.Task
	args := []string{"serve", t.Model}
	add := func(flag, v string) { args = append(args, flag, v) }
	headless := t.rank() != 0
	if headless {
		args = append(args, "--headless")
	} else {
		add("--host", l.Host)
		add("--port", strconv.Itoa(l.Port))
		if t.PromptTokensDetails {
			// Only the API server reads it (vLLM's FrontendArgs); a
			// headless shard runs no API server.
			args = append(args, "--enable-prompt-tokens-details")
		}
	}
	if t.ServedModelName != "" {
		add("--served-model-name", t.ServedModelName)
	}
	if t.BlockSize > 0 {
		add("--block-size", strconv.Itoa(t.BlockSize))
	}
	if t.TensorParallelSize > 1 {
		add("--tensor-parallel-size", strconv.Itoa(t.TensorParallelSize))
	}
	if t.DataParallelSize > 1 {
		add("--data-parallel-size", strconv.Itoa(t.DataParallelSize))
	}
	if t.MaxModelLen > 0 {
		add("--max-model-len", strconv.Itoa(t.MaxModelLen))
	}
	if t.GPUMemoryUtilization > 0 {
		add("--gpu-memory-utilization", strconv.FormatFloat(t.GPUMemoryUtilization, 'f', -1, 64))
	}
	if s := t.Shard; s != nil && s.Count > 1 {
		host, port, _ := net.SplitHostPort(s.LeaderAddress) // validated before
		add("--nnodes", strconv.Itoa(s.Count))
		add("--node-rank", strconv.Itoa(s.Rank))
		add("--master-addr", host)
		add("--master-port", port)
	}
	if c, ok := engineKVConfig(l); ok {
		b, _ := json.Marshal(c) // plain struct: cannot fail
		add("--kv-events-config", string(b))
	}
	if roleDecision(t, l.Engine) {
		add("--kv-transfer-config", kvTransferConfig(t))
	}
	return append(args, t.Args...)
}

// engineKVConfig is the shard's --kv-events-config, when it publishes.
func engineKVConfig(l launch) (kvEventsConfig, bool) {
	if ok, _ := kvDecision(l.Task, l.Engine); !ok {
		return kvEventsConfig{}, false
	}
	c := kvEventsConfig{Enable: true, Publisher: "zmq"}
	switch {
	case l.KVDir != "":
		c.Endpoint, c.ReplayEndpoint = intake.IPCEndpoints(l.KVDir)
	case l.KVPort > 0:
		c.Endpoint = "tcp://127.0.0.1:" + strconv.Itoa(l.KVPort)
		if l.ReplayPort > 0 {
			c.ReplayEndpoint = "tcp://127.0.0.1:" + strconv.Itoa(l.ReplayPort)
		}
	default:
		return kvEventsConfig{}, false
	}
	return c, true
}

// buildEnv returns the engine's environment: the task's environment from
// Nomad (which already holds device env such as NVIDIA_VISIBLE_DEVICES),
// then what the driver derived (the NIXL side channel), then the task
// config's env, which may override it. The GPUs Nomad's device plugin reserved are
// passed on as CUDA_VISIBLE_DEVICES (which accepts GPU UUIDs) unless the
// job set it. Sorted, for stable tests and logs.
func buildEnv(nomadEnv, deviceEnv, taskEnv map[string]string, derived ...map[string]string) []string {
	env := map[string]string{}
	layers := append(append([]map[string]string{nomadEnv, deviceEnv}, derived...), taskEnv)
	for _, m := range layers {
		for k, v := range m {
			env[k] = v
		}
	}
	if gpus, ok := env["NVIDIA_VISIBLE_DEVICES"]; ok && gpus != "" && gpus != "all" && gpus != "none" {
		if _, set := env["CUDA_VISIBLE_DEVICES"]; !set {
			env["CUDA_VISIBLE_DEVICES"] = gpus
		}
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// hostFor picks the address the API serves on: the allocated port's host
// IP, else every interface.
func hostFor(ip string) string {
	if strings.TrimSpace(ip) == "" {
		return "0.0.0.0"
	}
	return ip
}
