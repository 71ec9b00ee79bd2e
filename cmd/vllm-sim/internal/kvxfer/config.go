package kvxfer

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"strings"
)

// Roles a KV-transfer instance can have, vLLM's KVRole literals.
const (
	RoleProducer = "kv_producer"
	RoleConsumer = "kv_consumer"
	RoleBoth     = "kv_both"
)

// Connector is the one connector the simulator plays.
const Connector = "NixlConnector"

// Config is vLLM's KVTransferConfig (vllm/config/kv_transfer.py), decoded
// from --kv-transfer-config. Only the connector, role and engine id mean
// anything to the simulator; the other fields are accepted so that a
// command line written for vLLM starts.
type Config struct {
	Connector  string  `json:"kv_connector"`
	EngineID   string  `json:"engine_id"`
	Role       string  `json:"kv_role"`
	BufferDev  string  `json:"kv_buffer_device"`
	BufferSize float64 `json:"kv_buffer_size"`
	Rank       *int    `json:"kv_rank"`
	Parallel   int     `json:"kv_parallel_size"`
	IP         string  `json:"kv_ip"`
	Port       int     `json:"kv_port"`
	// Extra is kv_connector_extra_config, kept as given.
	Extra      map[string]any `json:"kv_connector_extra_config"`
	ModulePath string         `json:"kv_connector_module_path"`
	// LoadFailurePolicy is what a decode instance does when a pull fails:
	// "fail" (vLLM's default) ends the request with an error, "recompute"
	// computes the prompt locally.
	LoadFailurePolicy string `json:"kv_load_failure_policy"`
	PermuteLocalKV    bool   `json:"enable_permute_local_kv"`
}

// Enabled reports whether a connector is configured at all.
func (c Config) Enabled() bool { return c.Connector != "" }

// ParseConfig decodes the flag's JSON as vLLM's config dataclass does:
// unknown fields are an error, kv_role is one of the three roles and is
// required with a connector, and engine_id defaults to a random UUID
// (vLLM's __post_init__). A connector other than NixlConnector is refused:
// the simulator plays no other.
func ParseConfig(s string, newID func() string) (Config, error) {
	c := Config{BufferDev: "cuda", BufferSize: 1e9, Parallel: 1, IP: "127.0.0.1", Port: 14579, LoadFailurePolicy: "fail"}
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&c); err != nil {
		return Config{}, fmt.Errorf("--kv-transfer-config: %w", err)
	}
	if dec.More() {
		return Config{}, fmt.Errorf("--kv-transfer-config: trailing data after the JSON object")
	}
	switch c.Role {
	case RoleProducer, RoleConsumer, RoleBoth:
	case "":
		if c.Connector != "" {
			return Config{}, fmt.Errorf("--kv-transfer-config: kv_role is required with kv_connector %q; use one of %s", c.Connector, roles())
		}
	default:
		return Config{}, fmt.Errorf("--kv-transfer-config: unsupported kv_role %q; use one of %s", c.Role, roles())
	}
	if c.Connector != "" && c.Connector != Connector {
		return Config{}, fmt.Errorf("--kv-transfer-config: kv_connector %q is not simulated; vllm-sim plays %s only", c.Connector, Connector)
	}
	if c.Connector == "" && c.Role != "" {
		return Config{}, fmt.Errorf("--kv-transfer-config: kv_role %q needs a kv_connector (%s)", c.Role, Connector)
	}
	if c.LoadFailurePolicy != "fail" && c.LoadFailurePolicy != "recompute" {
		return Config{}, fmt.Errorf("--kv-transfer-config: kv_load_failure_policy %q is not one of recompute, fail", c.LoadFailurePolicy)
	}
	if c.EngineID == "" && newID != nil {
		c.EngineID = newID()
	}
	return c, nil
}

func roles() string { return strings.Join([]string{RoleProducer, RoleConsumer, RoleBoth}, ", ") }

// NewEngineID is a random UUID (version 4), vLLM's default engine_id.
func NewEngineID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic("kvxfer: no randomness: " + err.Error())
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
