package config

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// KVEvents is vLLM's KVEventsConfig (vllm/config/kv_events.py), decoded from
// --kv-events-config with vLLM's defaults.
type KVEvents struct {
	Enable         bool   `json:"enable_kv_cache_events"`
	Publisher      string `json:"publisher"`
	Endpoint       string `json:"endpoint"`
	ReplayEndpoint string `json:"replay_endpoint"`
	BufferSteps    int    `json:"buffer_steps"`
	HWM            int    `json:"hwm"`
	MaxQueueSize   int    `json:"max_queue_size"`
	Topic          string `json:"topic"`
}

// ParseKVEvents decodes the flag's JSON. Unknown fields are an error, as in
// vLLM's config dataclass. Publisher resolves to "zmq" when events are
// enabled and "null" otherwise, as __post_init__ does.
func ParseKVEvents(s string) (KVEvents, error) {
	kv := KVEvents{Endpoint: "tcp://*:5557", BufferSteps: 10_000, HWM: 100_000, MaxQueueSize: 100_000}
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&kv); err != nil {
		return KVEvents{}, fmt.Errorf("--kv-events-config: %w", err)
	}
	if dec.More() {
		return KVEvents{}, fmt.Errorf("--kv-events-config: trailing data after the JSON object")
	}
	switch kv.Publisher {
	case "":
		kv.Publisher = "null"
		if kv.Enable {
			kv.Publisher = "zmq"
		}
	case "zmq", "null":
	default:
		return KVEvents{}, fmt.Errorf("--kv-events-config: publisher %q is not one of zmq, null", kv.Publisher)
	}
	if kv.Active() && kv.Endpoint == "" {
		return KVEvents{}, fmt.Errorf("--kv-events-config: endpoint is empty")
	}
	for name, v := range map[string]int{"buffer_steps": kv.BufferSteps, "hwm": kv.HWM, "max_queue_size": kv.MaxQueueSize} {
		if v < 0 {
			return KVEvents{}, fmt.Errorf("--kv-events-config: %s is negative (%d)", name, v)
		}
	}
	return kv, nil
}

// Active reports whether events are published at all: vLLM's factory
// returns its null publisher unless enabled with publisher "zmq".
func (kv KVEvents) Active() bool { return kv.Enable && kv.Publisher == "zmq" }
