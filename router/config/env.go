package config

import (
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// EnvPrefix starts every environment variable the router reads.
const EnvPrefix = "LLMGW_"

// setting is one scalar that both an environment variable and a flag may set.
type setting struct {
	env, flag, usage string
	set              func(c *Config, v string) error
}

func str(f func(c *Config) *string) func(*Config, string) error {
	return func(c *Config, v string) error { *f(c) = v; return nil }
}

func dur(name string, f func(c *Config) *time.Duration) func(*Config, string) error {
	return func(c *Config, v string) error {
		d, err := time.ParseDuration(v)
		if err != nil {
			return fmt.Errorf("%s=%q: %w", name, v, err)
		}
		*f(c) = d
		return nil
	}
}

// settings lists what the environment and flags may override. Structured
// parts (models, static replicas, the scheduler) live in the file only.
var settings = append([]setting{
	{"LLMGW_LISTEN", "listen", "OpenAI API listen address (host:port)", str(func(c *Config) *string { return &c.Listen })},
	{"LLMGW_INGEST_LISTEN", "ingest-listen", "KV ingest listen address for drivers (host:port)", str(func(c *Config) *string { return &c.IngestListen })},
	{"LLMGW_ADVERTISE_ADDRESS", "advertise-address", "address registered in Consul", str(func(c *Config) *string { return &c.AdvertiseAddress })},
	{"LLMGW_KV_TOKEN", "kv-token", "shared token drivers present (prefer the environment: flags show in ps)", str(func(c *Config) *string { return &c.KVToken })},
	{"LLMGW_PEER_TOKEN", "peer-token", "shared token routers present to one another, distinct from kv-token (prefer the environment: flags show in ps)", str(func(c *Config) *string { return &c.PeerToken })},
	{"LLMGW_ENGINE_API_KEY", "engine-api-key", "key sent to engines started with --api-key (prefer the environment: flags show in ps)", str(func(c *Config) *string { return &c.EngineAPIKey })},
	{"LLMGW_LOG_LEVEL", "log-level", "trace, debug, info, warn or error", str(func(c *Config) *string { return &c.LogLevel })},
	{"LLMGW_CONSUL_ADDRESS", "consul-address", "Consul agent HTTP address; empty: static replicas only", str(func(c *Config) *string { return &c.Consul.Address })},
	{"LLMGW_CONSUL_SERVICE_ID", "consul-service-id", "service id of the router's own registration", str(func(c *Config) *string { return &c.Consul.ServiceID })},
	{"LLMGW_CONSUL_SERVICES", "consul-services", "comma-separated Consul services holding model replicas", func(c *Config, v string) error {
		c.Consul.Services = nil
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				c.Consul.Services = append(c.Consul.Services, s)
			}
		}
		return nil
	}},
	{"LLMGW_CONSUL_REGISTER", "consul-register", "register the router in Consul as llmgw-router (true/false)", func(c *Config, v string) error {
		b, err := parseBool("consul register", v)
		c.Consul.Register = b
		return err
	}},
	{"LLMGW_MAX_BODY_BYTES", "max-body-bytes", "largest accepted request body", func(c *Config, v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("max body bytes %q: want an integer", v)
		}
		c.MaxBodyBytes = n
		return nil
	}},
	{"LLMGW_RESPONSES_STORE_BYTES", "responses-store-bytes", "memory for Responses API conversations this router keeps", func(c *Config, v string) error {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			return fmt.Errorf("responses store bytes %q: want an integer", v)
		}
		c.ResponsesStoreBytes = n
		return nil
	}},
	{"LLMGW_RESPONSES_TTL", "responses-ttl", "how long a kept Responses API conversation can be continued", dur("responses ttl", func(c *Config) *time.Duration { return &c.ResponsesTTL })},
	{"LLMGW_ATTEMPTS", "attempts", "replicas one request may try before its first byte", func(c *Config, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("attempts %q: want an integer", v)
		}
		c.Attempts = n
		return nil
	}},
	{"LLMGW_PIN_DATA_PARALLEL_RANK", "pin-data-parallel-rank", "send X-data-parallel-rank for the rank predicted to cache the prompt (true/false)", func(c *Config, v string) error {
		b, err := parseBool("pin data parallel rank", v)
		c.PinDataParallelRank = b
		return err
	}},
	{"LLMGW_UPSTREAM_TIMEOUT", "upstream-timeout", "wait for a replica's response headers", dur("upstream timeout", func(c *Config) *time.Duration { return &c.UpstreamTimeout })},
	{"LLMGW_DRIVER_EXPIRY", "driver-expiry", "drop KV state of drivers silent this long", dur("driver expiry", func(c *Config) *time.Duration { return &c.DriverExpiry })},
	{"LLMGW_QUEUE_TIMEOUT", "queue-timeout", "wait for a replica under its busy threshold before 429", dur("queue timeout", func(c *Config) *time.Duration { return &c.QueueTimeout })},
	{"LLMGW_MAX_QUEUE", "max-queue", "requests that may wait for a replica, over every tenant", integer("max queue", func(c *Config) *int { return &c.MaxQueue })},
	{"LLMGW_MAX_QUEUE_PER_TENANT", "max-queue-per-tenant", "requests one tenant may have waiting (0: max_queue)", integer("max queue per tenant", func(c *Config) *int { return &c.MaxQueuePerTenant })},
	{"LLMGW_SCRAPE_INTERVAL", "scrape-interval", "replica /metrics scrape interval", dur("scrape interval", func(c *Config) *time.Duration { return &c.ScrapeInterval })},
	{"LLMGW_PEER_LOAD_INTERVAL", "peer-load-interval", "how soon other routers see this router's load change (0: off)", dur("peer load interval", func(c *Config) *time.Duration { return &c.PeerInterval })},
	{"LLMGW_PEER_LOAD_EXPIRY", "peer-load-expiry", "forget a peer router silent this long", dur("peer load expiry", func(c *Config) *time.Duration { return &c.PeerExpiry })},
}, httpSettings...)

func init() { settings = append(settings, authSettings...) }

// ApplyEnv applies LLMGW_* variables from environ ("KEY=value" entries, as
// os.Environ returns). Variables the router does not know are left alone:
// other llmgw programs share the prefix.
func (c *Config) ApplyEnv(environ []string) error {
	vals := map[string]string{}
	for _, kv := range environ {
		if k, v, ok := strings.Cut(kv, "="); ok && strings.HasPrefix(k, EnvPrefix) {
			vals[k] = v
		}
	}
	for _, s := range settings {
		if v, ok := vals[s.env]; ok {
			if err := s.set(c, v); err != nil {
				return fmt.Errorf("environment %s: %w", s.env, err)
			}
		}
	}
	return nil
}

// Flags are the router's command-line flags. Bind them, parse, then Resolve.
type Flags struct {
	fs     *flag.FlagSet
	path   string
	values map[string]*string
}

// BindFlags defines -config and one flag per overridable setting on fs.
func BindFlags(fs *flag.FlagSet) *Flags {
	f := &Flags{fs: fs, values: map[string]*string{}}
	fs.StringVar(&f.path, "config", "", "HCL config file (optional)")
	for _, s := range settings {
		f.values[s.flag] = fs.String(s.flag, "", s.usage+" (env "+s.env+")")
	}
	return f
}

// Resolve builds the Config: defaults, the file named by -config (or by
// LLMGW_CONFIG), the environment, then the flags that were set.
func (f *Flags) Resolve(environ []string) (Config, error) {
	c := Default()
	path := f.path
	if path == "" {
		for _, kv := range environ {
			if v, ok := strings.CutPrefix(kv, "LLMGW_CONFIG="); ok {
				path = v
			}
		}
	}
	if path != "" {
		if err := c.LoadFile(path); err != nil {
			return c, err
		}
	}
	if err := c.ApplyEnv(environ); err != nil {
		return c, err
	}
	set := map[string]bool{}
	f.fs.Visit(func(fl *flag.Flag) { set[fl.Name] = true })
	for _, s := range settings {
		if set[s.flag] {
			if err := s.set(&c, *f.values[s.flag]); err != nil {
				return c, fmt.Errorf("flag -%s: %w", s.flag, err)
			}
		}
	}
	if err := c.Validate(); err != nil {
		return c, fmt.Errorf("invalid config: %w", err)
	}
	return c, nil
}
