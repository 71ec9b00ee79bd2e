package config

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestParse(t *testing.T) {
	tests := []struct {
		args  []string
		check func(c Config) bool
		what  string
	}{
		{[]string{"serve", "meta-llama/Llama-3.1-8B-Instruct"}, func(c Config) bool {
			return c.Model == "meta-llama/Llama-3.1-8B-Instruct" && c.Port == 8000 && c.BlockSize == 16 && c.ServedName() == c.Model
		}, "defaults"},
		{[]string{"serve", "m", "--port", "9001", "--served-model-name", "llama", "--block-size=32"}, func(c Config) bool {
			return c.Port == 9001 && c.ServedName() == "llama" && c.BlockSize == 32
		}, "space and = forms"},
		{[]string{"m", "--max_model_len", "4096", "--max-num-seqs", "16"}, func(c Config) bool {
			return c.MaxModelLen == 4096 && c.MaxNumSeqs == 16
		}, "underscores and no serve"},
		{[]string{"serve", "--model", "m", "--sim-latency=false", "--sim-inter-token-latency", "5ms"}, func(c Config) bool {
			return c.Model == "m" && !c.Latency.Enabled && c.Latency.InterToken == 5*time.Millisecond
		}, "--model and sim flags"},
		{[]string{"serve", "m", "--no-sim-latency"}, func(c Config) bool { return !c.Latency.Enabled }, "--no- prefix"},
		{[]string{"serve", "m", "--headless", "--data-parallel-size", "4", "--data-parallel-rank", "2"}, func(c Config) bool {
			return c.Headless && slices.Equal(c.Ranks(), []int{2})
		}, "headless rank"},
		{[]string{"serve", "m", "--data-parallel-size", "3"}, func(c Config) bool { return slices.Equal(c.Ranks(), []int{0, 1, 2}) }, "all ranks"},
		{[]string{"serve", "m", "--gpu-memory-utilization", "0.9", "--enable-chunked-prefill", "--trust-remote-code", "--port", "1"}, func(c Config) bool {
			return c.Port == 1 && slices.Equal(c.Unknown, []string{"--gpu-memory-utilization 0.9", "--enable-chunked-prefill", "--trust-remote-code"})
		}, "unknown flags kept, with values"},
		{[]string{"serve", "m", "--enable-lora", "--lora-modules", "sql=/a", `{"name":"chat","path":"/b"}`, "--port", "2"}, func(c Config) bool {
			return c.Port == 2 && len(c.LoRAModules) == 2 && c.LoRAModules[0] == LoRAModule{"sql", "/a", 1} && c.LoRAModules[1] == LoRAModule{"chat", "/b", 2}
		}, "lora modules in both forms, numbered from 1"},
		{[]string{"serve", "m", "--no-enable-prefix-caching"}, func(c Config) bool { return !c.EnablePrefixCaching }, "prefix caching off"},
		{[]string{"serve", "m", "--kv-events-config", `{"enable_kv_cache_events":true,"endpoint":"tcp://127.0.0.1:5557","topic":"kv"}`}, func(c Config) bool {
			kv := c.KVEvents
			return kv.Active() && kv.Publisher == "zmq" && kv.Endpoint == "tcp://127.0.0.1:5557" && kv.BufferSteps == 10000 && kv.HWM == 100000 && kv.Topic == "kv"
		}, "kv events config with defaults"},
	}
	for _, tt := range tests {
		c, err := Parse(tt.args)
		if err != nil {
			t.Errorf("%s: Parse(%q): %v", tt.what, tt.args, err)
			continue
		}
		if !tt.check(c) {
			t.Errorf("%s: Parse(%q) = %+v", tt.what, tt.args, c)
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"serve"}, "missing MODEL"},
		{[]string{"serve", "m", "--port", "eighty"}, "--port: not an integer"},
		{[]string{"serve", "m", "--port"}, "--port needs a value"},
		{[]string{"serve", "m", "x"}, `unexpected argument "x"`},
		{[]string{"serve", "m", "--block-size", "0"}, "--block-size must be positive"},
		{[]string{"serve", "m", "--data-parallel-size", "2", "--data-parallel-rank", "2"}, "--data-parallel-rank 2 is not below"},
		{[]string{"serve", "m", "--sim-event-format", "json"}, `--sim-event-format "json"`},
		{[]string{"serve", "m", "--num-gpu-blocks-override", "10", "--max-model-len", "1000"}, "cannot hold one sequence"},
		{[]string{"serve", "m", "--kv-events-config", `{"enable_kv_cache_events":true,"endpont":"x"}`}, `unknown field "endpont"`},
		{[]string{"serve", "m", "--kv-events-config", `{"publisher":"kafka"}`}, `publisher "kafka"`},
		{[]string{"serve", "m", "--kv-events-config", `{"hwm":-1}`}, "hwm is negative"},
		{[]string{"serve", "m", "--sim-overhead", "soon"}, "not a duration"},
		{[]string{"serve", "m", "--lora-modules", "a=/x"}, "--lora-modules needs --enable-lora"},
		{[]string{"serve", "m", "--enable-lora", "--lora-modules", "a=/x", "a=/y"}, `adapter "a" given twice`},
		{[]string{"serve", "m", "--enable-lora", "--lora-modules", "nopath"}, "is not name=path"},
		{[]string{"serve", "m", "--enable-lora", "--lora-modules"}, "--lora-modules needs a value"},
		{[]string{"serve", "m", "-x"}, "unknown flag -x"},
		{[]string{"serve", "-tp", "2", "m"}, "unknown flag -tp"},
		{[]string{"serve", "m", "--sim-latancy=false"}, "unknown flag --sim-latancy"},
		{[]string{"serve", "m", "--no-sim-latancy"}, "unknown flag --no-sim-latancy"},
	}
	for _, tt := range tests {
		_, err := Parse(tt.args)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Parse(%q) error %v; want it to mention %q", tt.args, err, tt.want)
		}
	}
	if _, err := Parse([]string{"--version"}); !errors.Is(err, ErrVersion) {
		t.Errorf("--version gave %v; want ErrVersion", err)
	}
}

func TestKVEventsDisabledByDefault(t *testing.T) {
	kv, err := ParseKVEvents(`{"endpoint":"tcp://*:1"}`)
	if err != nil || kv.Active() || kv.Publisher != "null" {
		t.Errorf("events without enable: %+v, %v; want the null publisher", kv, err)
	}
}

func FuzzParse(f *testing.F) {
	f.Add("serve m --port 8000 --kv-events-config {\"enable_kv_cache_events\":true}")
	f.Add("--no-headless --x=y -- --=")
	f.Fuzz(func(t *testing.T, line string) {
		c, err := Parse(strings.Fields(line))
		if err == nil && c.Validate() != nil {
			t.Fatalf("Parse accepted %q but the result does not validate", line)
		}
	})
}
