package driver

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/llmgw/llmgw/plugin/proto/hclspec"
	"github.com/llmgw/llmgw/plugin/spec"
)

// PluginName is the driver name jobs use (driver = "vllm").
const PluginName = "vllm"

// PluginVersion is this driver's semver, reported to Nomad.
const PluginVersion = "0.1.0"

// configSpec is the agent's plugin "nomad-driver-vllm" { config {...} } schema.
var configSpec = spec.Object(map[string]*hclspec.Spec{
	"engine":            spec.Optional("engine", "string", `"vllm"`),
	"consul_address":    spec.Optional("consul_address", "string", `"127.0.0.1:8500"`),
	"consul_token":      spec.Attr("", "string", false),
	"discovery":         spec.Optional("discovery", "string", `"consul"`),
	"nomad_address":     spec.Attr("", "string", false),
	"nomad_token":       spec.Attr("", "string", false),
	"nomad_namespace":   spec.Attr("", "string", false),
	"nomad_region":      spec.Attr("", "string", false),
	"router_service":    spec.Optional("router_service", "string", `"llmgw-router"`),
	"kv_flush_interval": spec.Optional("kv_flush_interval", "string", `"250ms"`),
	"kv_keep_alive":     spec.Optional("kv_keep_alive", "string", `"10s"`),
	"ingest_token":      spec.Attr("", "string", false),
	"ingest_ca_file":    spec.Attr("", "string", false),
	"owner_pid":         spec.Optional("owner_pid", "number", "0"),
	"default_user":      spec.Optional("default_user", "string", `"nobody"`),
	"allowed_users":     spec.Attr("", "list(string)", false),
	"denied_users":      spec.Optional("denied_users", "list(string)", `["root"]`),
	"allowed_code_env":  spec.Attr("", "list(string)", false),
	"allowed_code_args": spec.Attr("", "list(string)", false),
	"kv_transport":      spec.Optional("kv_transport", "string", `"ipc"`),
})

// Config is the decoded plugin config.
type Config struct {
	// Engine is the engine binary, by path or looked up in PATH. vllm-sim
	// stands in for vllm with the same command line.
	Engine string `codec:"engine"`
	// ConsulAddress and ConsulToken reach the Consul agent where routers
	// register; RouterService is their service name.
	ConsulAddress string `codec:"consul_address"`
	ConsulToken   string `codec:"consul_token"`
	RouterService string `codec:"router_service"`
	// Discovery is "consul" (the default) or "nomad": routers found in
	// Nomad's service catalogue through NomadAddress (empty: NOMAD_ADDR,
	// else http://127.0.0.1:4646) with NomadToken (empty: NOMAD_TOKEN),
	// NomadNamespace and NomadRegion (empty: NOMAD_NAMESPACE and
	// NOMAD_REGION, else the agent's).
	Discovery      string `codec:"discovery"`
	NomadAddress   string `codec:"nomad_address"`
	NomadToken     string `codec:"nomad_token"`
	NomadNamespace string `codec:"nomad_namespace"`
	NomadRegion    string `codec:"nomad_region"`
	// KVFlushInterval is how often net KV deltas go to routers.
	KVFlushInterval time.Duration `codec:"kv_flush_interval"`
	// KVKeepAlive is the longest a router session stays silent: an empty
	// update then tells the router the driver is alive.
	KVKeepAlive time.Duration `codec:"kv_keep_alive"`
	// IngestToken authenticates the driver to routers' KV ingest.
	IngestToken string `codec:"ingest_token"`
	// IngestCAFile, when set, sends KV updates over TLS to routers whose
	// ingest listeners serve it, trusting the CA certificates in this PEM
	// file.
	IngestCAFile string `codec:"ingest_ca_file"`
	// OwnerPid, when positive, names a process whose exit stops every task
	// this plugin starts (SIGTERM to the engine's group, SIGKILL 5s later),
	// however it dies: the supervisors watch it themselves. One-machine
	// fleets (`llmgw demo`, tests) set their own pid. Off by default: under
	// Nomad, tasks must outlive plugin and agent restarts.
	OwnerPid int `codec:"owner_pid"`
	// DefaultUser is who engines run as when the task sets no user and the
	// plugin runs as root; a plugin that is not root cannot switch users
	// and runs them as itself.
	DefaultUser string `codec:"default_user"`
	// AllowedUsers, when not empty, lists the only users engines may run
	// as; DeniedUsers those they may not (root by default), whatever
	// AllowedUsers says. Entries are names, uids or uid ranges "lo-hi".
	// A task whose engine user is refused fails at StartTask.
	AllowedUsers []string `codec:"allowed_users"`
	DeniedUsers  []string `codec:"denied_users"`
	// AllowedCodeEnv and AllowedCodeArgs name the environment variables
	// and vLLM flags that change what code an engine runs (codeEnv,
	// codeArgs) which jobs may set all the same; none by default.
	AllowedCodeEnv  []string `codec:"allowed_code_env"`
	AllowedCodeArgs []string `codec:"allowed_code_args"`
	// KVTransport is how engines reach the KV-event listeners: "ipc" (the
	// default) makes each engine bind ipc:// sockets in a directory of its
	// task's own that only its user may enter, to which the listeners
	// connect, so no other local process can reach them; "tcp" binds the
	// listeners on loopback, where any local process can connect. "ipc"
	// falls back to "tcp", with a task event saying why, when the
	// directory cannot be made or its socket paths are too long.
	KVTransport string `codec:"kv_transport"`
}

// The values of kv_transport.
const (
	kvTransportIPC = "ipc"
	kvTransportTCP = "tcp"
)

// codePolicy is what the config lets jobs set that changes engine code.
func (c *Config) codePolicy() CodePolicy {
	return CodePolicy{AllowedEnv: c.AllowedCodeEnv, AllowedArgs: c.AllowedCodeArgs}
}

func (c *Config) validate() error {
	if c.Engine == "" {
		return fmt.Errorf("engine: must not be empty")
	}
	if c.KVFlushInterval <= 0 {
		return fmt.Errorf("kv_flush_interval: must be positive, got %s", c.KVFlushInterval)
	}
	if c.KVKeepAlive < c.KVFlushInterval {
		return fmt.Errorf("kv_keep_alive: must be at least kv_flush_interval (%s), got %s", c.KVFlushInterval, c.KVKeepAlive)
	}
	if c.RouterService == "" {
		return fmt.Errorf("router_service: must not be empty")
	}
	if c.OwnerPid < 0 {
		return fmt.Errorf("owner_pid: must not be negative, got %d", c.OwnerPid)
	}
	if c.Discovery != discoveryConsul && c.Discovery != discoveryNomad {
		return fmt.Errorf("discovery: want consul or nomad, got %q", c.Discovery)
	}
	if c.KVTransport != kvTransportIPC && c.KVTransport != kvTransportTCP {
		return fmt.Errorf("kv_transport: want ipc or tcp, got %q", c.KVTransport)
	}
	return c.validUsers()
}

// validUsers checks the user lists and, when the plugin runs as root (the
// only case in which it is used), that default_user exists and is allowed,
// so a bad config fails at agent start rather than at each task.
func (c *Config) validUsers() error {
	if err := validUserSpecs("allowed_users", c.AllowedUsers); err != nil {
		return err
	}
	if err := validUserSpecs("denied_users", c.DeniedUsers); err != nil {
		return err
	}
	if c.DefaultUser != "" && os.Geteuid() == 0 {
		if err := checkUser(c.DefaultUser, *c); err != nil {
			return fmt.Errorf("default_user: %w", err)
		}
	}
	return c.validCodeAllowances()
}

// taskSpec is the job's task "x" { driver = "vllm" config {...} } schema.
var taskSpec = spec.Object(map[string]*hclspec.Spec{
	"model":                  spec.Attr("", "string", true),
	"served_model_name":      spec.Attr("", "string", false),
	"port":                   spec.Optional("port", "string", `"http"`),
	"kv_events":              spec.Optional("kv_events", "bool", "false"),
	"prompt_tokens_details":  spec.Optional("prompt_tokens_details", "bool", "true"),
	"block_size":             spec.Optional("block_size", "number", "16"),
	"tensor_parallel_size":   spec.Optional("tensor_parallel_size", "number", "1"),
	"data_parallel_size":     spec.Optional("data_parallel_size", "number", "1"),
	"max_model_len":          spec.Attr("", "number", false),
	"gpu_memory_utilization": spec.Attr("", "number", false),
	"shard": spec.Block("", false, spec.Object(map[string]*hclspec.Spec{
		"rank":           spec.Attr("", "number", true),
		"count":          spec.Attr("", "number", true),
		"leader_address": spec.Attr("", "string", false),
	})),
	"args":              spec.Attr("", "list(string)", false),
	"env":               spec.Attr("", "map(string)", false),
	"api_key_env":       spec.Attr("", "string", false),
	"role":              spec.Optional("role", "string", `"agg"`),
	"kv_role":           spec.Attr("", "string", false),
	"side_channel_port": spec.Optional("side_channel_port", "string", `"nixl"`),
})

// TaskConfig is the decoded task config. It is also persisted in the
// handle's driver_state, because Nomad drops the raw config bytes across an
// agent restart.
type TaskConfig struct {
	Model                string            `codec:"model" json:"model"`
	ServedModelName      string            `codec:"served_model_name" json:"served_model_name,omitempty"`
	Port                 string            `codec:"port" json:"port"`
	KVEvents             bool              `codec:"kv_events" json:"kv_events"`
	BlockSize            int               `codec:"block_size" json:"block_size"`
	TensorParallelSize   int               `codec:"tensor_parallel_size" json:"tensor_parallel_size"`
	DataParallelSize     int               `codec:"data_parallel_size" json:"data_parallel_size"`
	MaxModelLen          int               `codec:"max_model_len" json:"max_model_len,omitempty"`
	GPUMemoryUtilization float64           `codec:"gpu_memory_utilization" json:"gpu_memory_utilization,omitempty"`
	Shard                *Shard            `codec:"shard" json:"shard,omitempty"`
	Args                 []string          `codec:"args" json:"args,omitempty"`
	Env                  map[string]string `codec:"env" json:"env,omitempty"`
	// APIKeyEnv names the task environment variable holding the engine's
	// API key (vLLM's --api-key), handed to the engine as VLLM_API_KEY.
	APIKeyEnv string `codec:"api_key_env" json:"api_key_env,omitempty"`
	// Role is the replica's part in a disaggregated fleet: agg (the
	// default), prefill or decode. Prefill and decode engines get vLLM's
	// --kv-transfer-config with the NixlConnector and KVRole (kv_both
	// unless set), and the NIXL side channel on the port labelled
	// SideChannelPort. The replica's service must carry the same role as
	// its llmgw-role meta.
	Role            string `codec:"role" json:"role,omitempty"`
	KVRole          string `codec:"kv_role" json:"kv_role,omitempty"`
	SideChannelPort string `codec:"side_channel_port" json:"side_channel_port,omitempty"`
	// PromptTokensDetails passes vLLM's --enable-prompt-tokens-details to
	// the shard serving the API, unless the job sets it false: without it
	// vLLM's usage carries no prompt_tokens_details.cached_tokens, and
	// every hit the engine reports reads zero. The schema defaults it to
	// true; the Go zero value is off.
	PromptTokensDetails bool `codec:"prompt_tokens_details" json:"prompt_tokens_details"`
}

// Shard places one process of a multi-node replica. Rank 0 is the leader:
// it serves the API and alone publishes KV events; other ranks run headless
// and join the leader at LeaderAddress (host:port).
type Shard struct {
	Rank          int    `codec:"rank" json:"rank"`
	Count         int    `codec:"count" json:"count"`
	LeaderAddress string `codec:"leader_address" json:"leader_address,omitempty"`
}

// rank is the shard rank, 0 for a single-node replica.
func (t *TaskConfig) rank() int {
	if t.Shard == nil {
		return 0
	}
	return t.Shard.Rank
}

// validate checks what the schema cannot say. ports are the labels Nomad
// allocated to the task's group.
func (t *TaskConfig) validate(ports map[string]bool) error {
	if t.Model == "" {
		return fmt.Errorf("model: must not be empty")
	}
	if t.Port == "" {
		return fmt.Errorf("port: must name a port label of the group's network block")
	}
	if !ports[t.Port] && t.rank() == 0 {
		return fmt.Errorf("port: no port labelled %q is allocated to this task", t.Port)
	}
	if !validBlockSize(t.BlockSize) {
		return fmt.Errorf("block_size: %d is not within 1..%d", t.BlockSize, maxBlockSize)
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"tensor_parallel_size", t.TensorParallelSize}, {"data_parallel_size", t.DataParallelSize}} {
		if f.v < 1 || f.v > 1024 {
			return fmt.Errorf("%s: %d is out of range 1..1024", f.name, f.v)
		}
	}
	if t.MaxModelLen < 0 {
		return fmt.Errorf("max_model_len: must not be negative, got %d", t.MaxModelLen)
	}
	if g := t.GPUMemoryUtilization; g < 0 || g > 1 {
		return fmt.Errorf("gpu_memory_utilization: %v is not within 0..1", g)
	}
	if s := t.Shard; s != nil {
		if s.Count < 1 {
			return fmt.Errorf("shard.count: must be at least 1, got %d", s.Count)
		}
		if s.Rank < 0 || s.Rank >= s.Count {
			return fmt.Errorf("shard.rank: %d is not within 0..%d", s.Rank, s.Count-1)
		}
		if s.Count > 1 {
			host, port, err := net.SplitHostPort(s.LeaderAddress)
			if err != nil || host == "" {
				return fmt.Errorf("shard.leader_address: want host:port, got %q", s.LeaderAddress)
			}
			if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
				return fmt.Errorf("shard.leader_address: bad port in %q", s.LeaderAddress)
			}
		}
	}
	for k := range t.Env {
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return fmt.Errorf("env: invalid variable name %q", k)
		}
	}
	if err := t.validRole(ports); err != nil {
		return err
	}
	if err := t.validAPIKeyEnv(); err != nil {
		return err
	}
	return t.validArgs()
}

// maxBlockSize is the largest block_size a task may set: vLLM takes any
// size above 0 (CacheConfig.block_size; hybrid models align theirs to the
// Mamba page, 528 or 1056 tokens and the like), and Consul's
// llmgw-block-size, which routers read, stops at this.
const maxBlockSize = 4096

func validBlockSize(n int) bool { return n >= 1 && n <= maxBlockSize }
