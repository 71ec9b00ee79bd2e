package config

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strconv"
	"time"

	"github.com/llmgw/llmgw/router/scheduler"
)

// Config is the router's whole configuration after every source is applied.
type Config struct {
	// Listen is the OpenAI API address (host:port; port 0 picks one).
	Listen string
	// IngestListen is the separate listener for drivers' KV updates.
	IngestListen string
	// AdvertiseAddress is the address registered in Consul (default: the
	// host of Listen, or 127.0.0.1 when that is unspecified).
	AdvertiseAddress string
	// KVToken is the shared secret drivers present; empty disables ingest.
	// It authenticates KV state only: a driver holding it cannot speak
	// for a router.
	KVToken string
	// PeerToken is the shared secret routers present to one another, for
	// peer loads, tenants' usage and conversation fetches; empty turns
	// all of that off. It must differ from KVToken, so that one
	// compromised GPU node cannot report load or spend for any tenant.
	PeerToken string
	// MaxBodyBytes caps a client request body.
	MaxBodyBytes int64
	// ResponsesStoreBytes bounds the Responses API conversations this
	// router keeps (router/respstore); ResponsesTTL is how long each is
	// kept after it is made.
	ResponsesStoreBytes int64
	ResponsesTTL        time.Duration
	// Attempts bounds how many replicas one request may try before its
	// first byte reaches the client (1: no retries).
	Attempts int
	// PinDataParallelRank sends vLLM's X-data-parallel-rank header for
	// the rank of a data-parallel replica predicted to cache the
	// prompt's prefix (router/gateway's rank.go). Off, the engine picks
	// every rank by load and finds a predicted prefix only by chance;
	// the switch is there to measure that.
	PinDataParallelRank bool
	// UpstreamTimeout bounds the wait for a replica's response headers.
	UpstreamTimeout time.Duration
	// QueueTimeout is how long a request waits for a replica under its busy
	// threshold before the router answers 429; MaxQueue bounds the waiters,
	// MaxQueuePerTenant one tenant's (0: MaxQueue; see admission.go).
	QueueTimeout      time.Duration
	MaxQueue          int
	MaxQueuePerTenant int
	// DriverExpiry drops the KV state of a driver silent for this long.
	DriverExpiry time.Duration
	// ScrapeInterval is how often each replica's /metrics is read.
	ScrapeInterval time.Duration
	// PeerInterval is how soon a change in this router's own load reaches
	// the other routers registered in Consul (router/peers); 0 turns the
	// sharing off. PeerExpiry forgets a peer that sent nothing this long.
	PeerInterval, PeerExpiry time.Duration
	LogLevel                 string
	// HTTP bounds the listeners and splits off the admin API.
	HTTP HTTP
	// Migration continues streams whose replica fails (router/gateway's
	// migration.go).
	Migration Migration
	// Scaling sets the autoscaling signal's targets (scaling.go).
	Scaling Scaling

	Auth Auth
	EngineAuth
	// Rates cap the scrapes and peer messages per second.
	Rates Rates
	// Index bounds the block index's CPU tier (index.go).
	Index Index
	// Tracing exports OpenTelemetry spans; off by default (tracing.go).
	Tracing Tracing

	// Discovery is DiscoveryConsul or DiscoveryNomad (nomad.go).
	Discovery string
	Consul    Consul
	Nomad     Nomad
	Models    map[string]Model
	Replicas  []StaticReplica
	Scheduler scheduler.Config
	PD        PD // disaggregated prefill/decode routing (pd.go)
}

// Consul says where the agent is and what to watch and register.
type Consul struct {
	// Address of the agent's HTTP API; empty: run on the static replicas only.
	Address string
	// Services are the Consul service names whose instances tagged "llmgw"
	// are model replicas.
	Services []string
	// Register makes the router register itself as llmgw-router.
	Register bool
	// ServiceID of the registration (default llmgw-router-<host:port>).
	ServiceID string
	// CheckInterval is how often Consul calls the router's /health.
	CheckInterval time.Duration
}

// Model holds per-model settings.
type Model struct {
	// TokenizerDir holds tokenizer.json (and the chat template); empty: the
	// engines tokenize when EngineTokenize (or Sim) is set, else the local
	// Hugging Face cache, else approx routing on text.
	TokenizerDir string
	// EngineTokenize has the router tokenize each prompt on a ready
	// replica's /tokenize (router/enginetok): exact keys without tokenizer
	// files, at one round trip per request; a failure routes approx.
	EngineTokenize bool
	// HarmonyStartDate is the engines' VLLM_SYSTEM_START_DATE for a gpt-oss
	// model: the date its Harmony system message carries. Empty: the
	// router writes today's date in UTC, the engines' own clock in a
	// container.
	HarmonyStartDate string
	// Sim says the model's replicas are vllm-sim without a tokenizer
	// directory. The router tokenizes on them, as with EngineTokenize: it
	// carries no simulator code.
	Sim bool
}

// TokenizesOnEngines reports whether the router asks the model's engines
// for token ids (EngineTokenize or Sim) when it has no TokenizerDir.
func (m Model) TokenizesOnEngines() bool { return m.EngineTokenize || m.Sim }

// StaticReplica is a replica named in the config, for runs without Consul.
type StaticReplica struct {
	ID        string
	Model     string
	Address   string // host:port of the replica's HTTP API
	BlockSize int
	KVEvents  bool
	Role      string // "", "agg", "prefill" or "decode", as Consul meta llmgw-role
	// Task is what its engine serves, as Consul meta llmgw-task: "" or
	// "generate", "embed", "classify".
	Task string
}

// PeerKeepAlive is how often a router resends an unchanged load to its
// peers (router/server passes it to router/peers); PeerExpiry must leave
// room for two of them.
const PeerKeepAlive = time.Second

// Default returns the configuration used for anything no source sets.
func Default() Config {
	return Config{
		Listen:              "127.0.0.1:8080",
		IngestListen:        "127.0.0.1:8081",
		MaxBodyBytes:        8 << 20,
		ResponsesStoreBytes: 256 << 20,
		ResponsesTTL:        time.Hour,
		Attempts:            3,
		PinDataParallelRank: true,
		UpstreamTimeout:     5 * time.Minute,
		DriverExpiry:        30 * time.Second,
		QueueTimeout:        2 * time.Second,
		MaxQueue:            1024,
		ScrapeInterval:      time.Second,
		PeerInterval:        50 * time.Millisecond,
		PeerExpiry:          3 * time.Second,
		Rates:               defaultRates(),
		Index:               defaultIndex(),
		Tracing:             defaultTracing(),
		LogLevel:            "info",
		HTTP:                defaultHTTP(),
		Migration:           defaultMigration(),
		Scaling:             defaultScaling(),
		Discovery:           DiscoveryConsul,
		Nomad:               Nomad{ColdStartTimeout: DefaultColdStartTimeout, MaxColdQueue: DefaultMaxColdQueue},
		Consul:              Consul{CheckInterval: 10 * time.Second},
		Auth:                Auth{ReloadInterval: 2 * time.Second},
		Models:              map[string]Model{},
		Scheduler:           scheduler.DefaultConfig(),
		PD:                  defaultPD(),
	}
}

// Validate checks what the decoders cannot: addresses, ranges, duplicates.
func (c *Config) Validate() error {
	var errs []error
	checkAddr := func(name, v string) {
		if _, _, err := net.SplitHostPort(v); err != nil {
			errs = append(errs, fmt.Errorf("%s %q: want host:port: %w", name, v, err))
		}
	}
	checkAddr("listen", c.Listen)
	checkAddr("ingest_listen", c.IngestListen)
	checkAddr("admin_listen", c.HTTP.AdminListen)
	errs = append(errs, c.HTTP.validate())
	if c.ResponsesStoreBytes <= 0 {
		errs = append(errs, fmt.Errorf("responses_store_bytes %d: must be positive", c.ResponsesStoreBytes))
	}
	if c.ResponsesTTL <= 0 {
		errs = append(errs, fmt.Errorf("responses_ttl %s: must be positive", c.ResponsesTTL))
	}
	if c.MaxBodyBytes <= 0 {
		errs = append(errs, fmt.Errorf("max_body_bytes %d: must be positive", c.MaxBodyBytes))
	}
	errs = append(errs, c.validateAdmission()...)
	errs = append(errs, c.Rates.validate()...)
	errs = append(errs, c.Index.validate()...)
	errs = append(errs, c.Tracing.validate()...)
	errs = append(errs, c.Migration.validate()...)
	errs = append(errs, c.Scaling.validate()...)
	errs = append(errs, c.validateNomad()...)
	errs = append(errs, c.validatePD()...)
	if c.Attempts < 1 || c.Attempts > 16 {
		errs = append(errs, fmt.Errorf("attempts %d: want 1..16", c.Attempts))
	}
	if c.PeerInterval < 0 {
		errs = append(errs, fmt.Errorf("peer_load_interval %s: must not be negative (0 turns peer load sharing off)", c.PeerInterval))
	}
	if c.PeerToken != "" && c.PeerToken == c.KVToken {
		errs = append(errs, errors.New("peer_token: must differ from kv_token, or every driver could speak for a router"))
	}
	if c.PeerInterval > 0 && c.PeerExpiry < 2*max(c.PeerInterval, PeerKeepAlive) {
		errs = append(errs, fmt.Errorf("peer_load_expiry %s: must be at least twice peer_load_interval and the 1s keep-alive, or peers drop out between messages", c.PeerExpiry))
	}
	for name, d := range map[string]time.Duration{"upstream_timeout": c.UpstreamTimeout, "driver_expiry": c.DriverExpiry, "scrape_interval": c.ScrapeInterval, "consul check_interval": c.Consul.CheckInterval} {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("%s %s: must be positive", name, d))
		}
	}
	errs = append(errs, c.Auth.validate()...)
	switch c.LogLevel {
	case "trace", "debug", "info", "warn", "error":
	default:
		errs = append(errs, fmt.Errorf("log_level %q: want trace, debug, info, warn or error", c.LogLevel))
	}
	if c.Consul.Address != "" {
		checkAddr("consul address", c.Consul.Address)
		if len(c.Consul.Services) == 0 && len(c.Replicas) == 0 {
			errs = append(errs, errors.New("consul: services is empty, so no replica would ever be found"))
		}
	}
	if c.Consul.Register && c.Consul.Address == "" {
		errs = append(errs, errors.New("consul: register needs an address"))
	}
	errs = append(errs, c.validateReplicas()...)
	errs = append(errs, c.EngineAuth.validate()...)
	return errors.Join(errs...)
}

// validateReplicas checks the static replicas: ids set and unique, a
// model, a host:port address, a block size and a task the router knows.
func (c *Config) validateReplicas() []error {
	var errs []error
	seen := map[string]bool{}
	for i, r := range c.Replicas {
		where := fmt.Sprintf("replica %q", r.ID)
		switch {
		case r.ID == "":
			errs = append(errs, fmt.Errorf("replica #%d: id is empty", i))
		case seen[r.ID]:
			errs = append(errs, fmt.Errorf("%s: declared twice", where))
		}
		seen[r.ID] = true
		if r.Model == "" {
			errs = append(errs, fmt.Errorf("%s: model is empty", where))
		}
		if _, _, err := net.SplitHostPort(r.Address); err != nil {
			errs = append(errs, fmt.Errorf("%s address %q: want host:port: %w", where, r.Address, err))
		}
		if r.BlockSize <= 0 || r.BlockSize > 4096 {
			errs = append(errs, fmt.Errorf("%s: block_size %d: want 1..4096", where, r.BlockSize))
		}
		switch r.Task {
		case "", "generate", "embed", "classify":
		default:
			errs = append(errs, fmt.Errorf("%s: task %q: want generate, embed or classify", where, r.Task))
		}
	}
	return errs
}

// ModelNames lists the configured models, sorted.
func (c *Config) ModelNames() []string {
	out := slices.Sorted(maps.Keys(c.Models))
	return out
}

func parseBool(name, v string) (bool, error) {
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%s=%q: want true or false", name, v)
	}
	return b, nil
}
