package config

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/llmgw/llmgw/router/index"
	"github.com/llmgw/llmgw/router/scheduler"
)

const sample = `
listen        = "0.0.0.0:9000"
ingest_listen = "0.0.0.0:9001"
kv_token      = "secret"
peer_token    = "between-routers"
attempts      = 2
upstream_timeout = "30s"
pin_data_parallel_rank = false

consul {
  address  = "127.0.0.1:8500"
  services = ["vllm"]
  register = true
  check_interval = "2s"
}

model "qwen" {
  tokenizer_dir = "/models/qwen"
}

model "sim-model" {
  sim = true
}

model "remote" {
  engine_tokenize = true
}

model "openai/gpt-oss-20b" {
  tokenizer_dir      = "/models/gpt-oss-20b"
  harmony_start_date = "2025-08-05"
}

replica "a/x" {
  model   = "qwen"
  address = "10.0.0.1:8000"
  block_size = 32
  kv_events  = true
}

scheduler {
  filter "model" {}
  filter "busy" {
    params = { max_in_flight = 64, max_kv_usage = 0.97 }
  }
  scorer "prefix" {
    weight = 2
    params = { speculative_ttl = "1s" }
  }
  scorer "load" {
    weight = 1
  }
  picker "max-score" {}
}
`

func TestParseHCL(t *testing.T) {
	t.Parallel()
	c := Default()
	if err := c.ParseHCL([]byte(sample), "router.hcl"); err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	want := Default()
	want.Listen, want.IngestListen, want.KVToken, want.PeerToken = "0.0.0.0:9000", "0.0.0.0:9001", "secret", "between-routers"
	want.Attempts, want.UpstreamTimeout, want.PinDataParallelRank = 2, 30*time.Second, false
	want.Consul = Consul{Address: "127.0.0.1:8500", Services: []string{"vllm"}, Register: true, CheckInterval: 2 * time.Second}
	want.Models = map[string]Model{"qwen": {TokenizerDir: "/models/qwen"}, "sim-model": {Sim: true}, "remote": {EngineTokenize: true},
		"openai/gpt-oss-20b": {TokenizerDir: "/models/gpt-oss-20b", HarmonyStartDate: "2025-08-05"}}
	want.Replicas = []StaticReplica{{ID: "a/x", Model: "qwen", Address: "10.0.0.1:8000", BlockSize: 32, KVEvents: true}}
	want.Scheduler = scheduler.Config{
		Filters: []scheduler.Spec{{Type: "model"}, {Type: "busy", Params: []byte(`{"max_in_flight":64,"max_kv_usage":0.97}`)}},
		Scorers: []scheduler.Spec{{Type: "prefix", Weight: 2, Params: []byte(`{"speculative_ttl":"1s"}`)}, {Type: "load", Weight: 1}},
		Picker:  scheduler.Spec{Type: "max-score"},
	}
	if d := cmp.Diff(want, c); d != "" {
		t.Errorf("config (-want +got):\n%s", d)
	}
	// The scheduler section must build: params reach the plugins as JSON.
	reg := scheduler.NewRegistry()
	if err := scheduler.RegisterBuiltins(reg); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.Build(c.Scheduler, scheduler.Deps{Index: index.NewModels(index.Options{})}); err != nil {
		t.Errorf("build scheduler from config: %v", err)
	}
}

func TestParseHCLErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, src, want string
	}{
		{"syntax", `listen = `, "parse config"},
		{"unknown attribute", `lisen = "x"`, `Unsupported argument`},
		{"unknown block", `consull {}`, `Unsupported block type`},
		{"wrong type", `attempts = "many"`, `a number is required`},
		{"bad duration", `upstream_timeout = "soon"`, `upstream_timeout`},
		{"pinning not a bool", `pin_data_parallel_rank = "yes please"`, `a bool is required`},
		{"duplicate model", "model \"m\" {}\nmodel \"m\" {}", `model "m" declared twice`},
		{"replica without address", "replica \"r\" {\n model = \"m\"\n}", `address`},
		{"no picker", "scheduler {\n scorer \"load\" {\n weight = 1\n}\n}", "picker block is required"},
		{"weight on filter", "scheduler {\n filter \"model\" {\n weight = 1\n}\n picker \"max-score\" {}\n}", "weight applies to scorers only"},
		{"params not object", "scheduler {\n picker \"max-score\" {\n params = 3\n}\n}", "params must be an object"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := Default()
			err := c.ParseHCL([]byte(tt.src), "r.hcl")
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v; want an error containing %q", err, tt.want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		edit func(*Config)
		want string
	}{
		{"ok", func(*Config) {}, ""},
		{"bad listen", func(c *Config) { c.Listen = "nope" }, "listen"},
		{"zero body", func(c *Config) { c.MaxBodyBytes = 0 }, "max_body_bytes"},
		{"zero responses store", func(c *Config) { c.ResponsesStoreBytes = 0 }, "responses_store_bytes"},
		{"negative responses ttl", func(c *Config) { c.ResponsesTTL = -time.Second }, "responses_ttl"},
		{"unknown replica task", func(c *Config) {
			c.Replicas = []StaticReplica{{ID: "r", Model: "m", Address: "h:1", BlockSize: 16, Task: "chat"}}
		}, `task "chat"`},
		{"attempts", func(c *Config) { c.Attempts = 0 }, "attempts"},
		{"log level", func(c *Config) { c.LogLevel = "loud" }, "log_level"},
		{"register without consul", func(c *Config) { c.Consul.Register = true }, "register needs an address"},
		{"consul without services", func(c *Config) { c.Consul.Address = "127.0.0.1:8500" }, "services is empty"},
		{"duplicate replica", func(c *Config) {
			r := StaticReplica{ID: "r", Model: "m", Address: "h:1", BlockSize: 16}
			c.Replicas = []StaticReplica{r, r}
		}, "declared twice"},
		{"peer sharing off", func(c *Config) { c.PeerInterval = 0; c.PeerExpiry = 0 }, ""},
		{"peer and kv tokens distinct", func(c *Config) { c.KVToken, c.PeerToken = "drivers", "routers" }, ""},
		{"peer token only", func(c *Config) { c.PeerToken = "routers" }, ""},
		{"peer token equal to kv token", func(c *Config) { c.KVToken, c.PeerToken = "same", "same" }, "peer_token: must differ from kv_token"},
		{"negative peer interval", func(c *Config) { c.PeerInterval = -time.Second }, "peer_load_interval -1s: must not be negative"},
		{"peer expiry under the keep-alive", func(c *Config) { c.PeerExpiry = 1500 * time.Millisecond }, "peer_load_expiry 1.5s: must be at least twice"},
		{"bad block size", func(c *Config) {
			c.Replicas = []StaticReplica{{ID: "r", Model: "m", Address: "h:1", BlockSize: 0}}
		}, "block_size"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := Default()
			tt.edit(&c)
			err := c.Validate()
			if tt.want == "" {
				if err != nil {
					t.Errorf("got %v; want no error", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v; want an error containing %q", err, tt.want)
			}
		})
	}
}

// TestPrecedence checks file < environment < flags.
func TestPrecedence(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "router.hcl")
	src := "listen = \"127.0.0.1:1000\"\ningest_listen = \"127.0.0.1:1001\"\nlog_level = \"debug\"\npeer_token = \"file\"\nkv_token = \"file-kv\"\n"
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	f := BindFlags(fs)
	if err := fs.Parse([]string{"-config", path, "-listen", "127.0.0.1:3000", "-kv-token", "flag-kv"}); err != nil {
		t.Fatal(err)
	}
	env := []string{"LLMGW_LISTEN=127.0.0.1:2000", "LLMGW_INGEST_LISTEN=127.0.0.1:2001",
		"LLMGW_CONSUL_SERVICES=a, b,", "LLMGW_CONSUL_BIN=/ignored", "PATH=/bin", "LLMGW_PEER_TOKEN=env"}
	c, err := f.Resolve(env)
	if err != nil {
		t.Fatal(err)
	}
	got := []string{c.Listen, c.IngestListen, c.LogLevel, strings.Join(c.Consul.Services, "|"), c.PeerToken, c.KVToken}
	want := []string{"127.0.0.1:3000", "127.0.0.1:2001", "debug", "a|b", "env", "flag-kv"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

func TestResolveErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		env  []string
		want string
	}{
		{"missing file", []string{"-config", "/nonexistent/r.hcl"}, nil, "read config"},
		{"bad env int", nil, []string{"LLMGW_ATTEMPTS=x"}, "LLMGW_ATTEMPTS"},
		{"bad env bool", nil, []string{"LLMGW_CONSUL_REGISTER=maybe"}, "LLMGW_CONSUL_REGISTER"},
		{"bad flag duration", []string{"-upstream-timeout", "1x"}, nil, "-upstream-timeout"},
		{"bad env pinning", nil, []string{"LLMGW_PIN_DATA_PARALLEL_RANK=often"}, "LLMGW_PIN_DATA_PARALLEL_RANK"},
		{"invalid result", []string{"-listen", "nope"}, nil, "invalid config"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fs := flag.NewFlagSet("t", flag.ContinueOnError)
			f := BindFlags(fs)
			if err := fs.Parse(tt.args); err != nil {
				t.Fatal(err)
			}
			_, err := f.Resolve(tt.env)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v; want an error containing %q", err, tt.want)
			}
		})
	}
}

func FuzzParseHCL(f *testing.F) {
	f.Add([]byte(sample))
	f.Add([]byte(`scheduler { picker "x" { params = { a = [1, {b = null}] } } }`))
	f.Fuzz(func(t *testing.T, src []byte) {
		c := Default()
		if err := c.ParseHCL(src, "fuzz.hcl"); err == nil {
			_ = c.Validate()
		}
	})
}
