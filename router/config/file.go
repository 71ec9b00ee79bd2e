package config

import (
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/gohcl"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/llmgw/llmgw/router/scheduler"
)

// fileConfig mirrors the HCL file. Optional attributes are pointers so an
// absent one keeps the default.
type fileConfig struct {
	Listen           *string   `hcl:"listen,optional"`
	IngestListen     *string   `hcl:"ingest_listen,optional"`
	AdvertiseAddress *string   `hcl:"advertise_address,optional"`
	KVToken          *string   `hcl:"kv_token,optional"`
	PeerToken        *string   `hcl:"peer_token,optional"`
	MaxBodyBytes     *int64    `hcl:"max_body_bytes,optional"`
	ResponsesBytes   *int64    `hcl:"responses_store_bytes,optional"`
	ResponsesTTL     *string   `hcl:"responses_ttl,optional"`
	Attempts         *int      `hcl:"attempts,optional"`
	PinRank          *bool     `hcl:"pin_data_parallel_rank,optional"`
	UpstreamTimeout  *string   `hcl:"upstream_timeout,optional"`
	DriverExpiry     *string   `hcl:"driver_expiry,optional"`
	ScrapeInterval   *string   `hcl:"scrape_interval,optional"`
	PeerInterval     *string   `hcl:"peer_load_interval,optional"`
	PeerExpiry       *string   `hcl:"peer_load_expiry,optional"`
	ScrapeMaxRate    *int      `hcl:"scrape_max_rate,optional"`
	PeerMaxRate      *int      `hcl:"peer_load_max_rate,optional"`
	IndexCPURatio    *int      `hcl:"index_cpu_ratio,optional"`
	TracingEndpoint  *string   `hcl:"tracing_endpoint,optional"`
	TracingRatio     *float64  `hcl:"tracing_sample_ratio,optional"`
	LogLevel         *string   `hcl:"log_level,optional"`
	QueueTimeout     *string   `hcl:"queue_timeout,optional"`
	MaxQueue         *int      `hcl:"max_queue,optional"`
	MaxTenantQueue   *int      `hcl:"max_queue_per_tenant,optional"`
	EngineAPIKey     *string   `hcl:"engine_api_key,optional"`
	APIKeys          []string  `hcl:"api_keys,optional"`
	Auth             *fileAuth `hcl:"auth,block"`

	Discovery *string        `hcl:"discovery,optional"`
	Consul    *fileConsul    `hcl:"consul,block"`
	Nomad     *fileNomad     `hcl:"nomad,block"`
	Models    []fileModel    `hcl:"model,block"`
	Replicas  []fileReplica  `hcl:"replica,block"`
	Scheduler *fileScheduler `hcl:"scheduler,block"`
	// The PD attributes (pd.go).
	PDSkipTokens     *int           `hcl:"pd_skip_prefill_tokens,optional"`
	PDSkipFraction   *float64       `hcl:"pd_skip_prefill_fraction,optional"`
	PrefillScheduler *fileScheduler `hcl:"prefill_scheduler,block"`
	Migration        *fileMigration `hcl:"migration,block"`
	Scaling          *fileScaling   `hcl:"scaling,block"`
	// Rest holds the listener attributes (fileHTTP), decoded strictly apart.
	Rest hcl.Body `hcl:",remain"`
}

type fileConsul struct {
	Address   *string  `hcl:"address,optional"`
	Services  []string `hcl:"services,optional"`
	Register  *bool    `hcl:"register,optional"`
	ServiceID *string  `hcl:"service_id,optional"`
	// CheckInterval is a duration string ("10s").
	CheckInterval *string `hcl:"check_interval,optional"`
}

type fileModel struct {
	Name         string  `hcl:"name,label"`
	TokenizerDir string  `hcl:"tokenizer_dir,optional"`
	Sim          bool    `hcl:"sim,optional"`
	EngineTok    bool    `hcl:"engine_tokenize,optional"`
	HarmonyDate  string  `hcl:"harmony_start_date,optional"`
	EngineAPIKey *string `hcl:"engine_api_key,optional"`
}

type fileReplica struct {
	ID        string `hcl:"id,label"`
	Model     string `hcl:"model"`
	Address   string `hcl:"address"`
	BlockSize *int   `hcl:"block_size,optional"`
	KVEvents  bool   `hcl:"kv_events,optional"`
	Role      string `hcl:"role,optional"`
	Task      string `hcl:"task,optional"`
}

type fileScheduler struct {
	Filters []filePlugin `hcl:"filter,block"`
	Scorers []filePlugin `hcl:"scorer,block"`
	Picker  *filePlugin  `hcl:"picker,block"`
	// Replicator is optional: a scheduler block without one copies no
	// hot prefixes.
	Replicator *filePlugin `hcl:"replicator,block"`
}

type filePlugin struct {
	Type   string    `hcl:"type,label"`
	Name   string    `hcl:"name,optional"`
	Weight float64   `hcl:"weight,optional"`
	Params cty.Value `hcl:"params,optional"`
}

// LoadFile applies the HCL file at path over c.
func (c *Config) LoadFile(path string) error {
	src, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read config: %w", err)
	}
	return c.ParseHCL(src, path)
}

// ParseHCL applies HCL source (named filename in errors) over c.
func (c *Config) ParseHCL(src []byte, filename string) error {
	f, diags := hclsyntax.ParseConfig(src, filename, hcl.InitialPos)
	if diags.HasErrors() {
		return fmt.Errorf("parse config: %w", diags)
	}
	var fc fileConfig // gohcl rejects unknown attributes and blocks
	if diags := gohcl.DecodeBody(f.Body, nil, &fc); diags.HasErrors() {
		return fmt.Errorf("decode config: %w", diags)
	}
	var fh fileHTTP
	if diags := gohcl.DecodeBody(fc.Rest, nil, &fh); diags.HasErrors() {
		return fmt.Errorf("decode config: %w", diags)
	}
	if err := c.HTTP.applyFile(&fh); err != nil {
		return err
	}
	return c.applyFile(&fc)
}

func (c *Config) applyFile(fc *fileConfig) error {
	setStr(&c.Listen, fc.Listen)
	setStr(&c.IngestListen, fc.IngestListen)
	setStr(&c.AdvertiseAddress, fc.AdvertiseAddress)
	setStr(&c.KVToken, fc.KVToken)
	setStr(&c.PeerToken, fc.PeerToken)
	setStr(&c.LogLevel, fc.LogLevel)
	setStr(&c.EngineAPIKey, fc.EngineAPIKey)
	if fc.MaxBodyBytes != nil {
		c.MaxBodyBytes = *fc.MaxBodyBytes
	}
	if fc.ResponsesBytes != nil {
		c.ResponsesStoreBytes = *fc.ResponsesBytes
	}
	if fc.MaxQueue != nil {
		c.MaxQueue = *fc.MaxQueue
	}
	if fc.MaxTenantQueue != nil {
		c.MaxQueuePerTenant = *fc.MaxTenantQueue
	}
	if fc.Attempts != nil {
		c.Attempts = *fc.Attempts
	}
	if fc.PinRank != nil {
		c.PinDataParallelRank = *fc.PinRank
	}
	c.Migration.applyFile(fc.Migration)
	if err := c.Scaling.applyFile(fc.Scaling); err != nil {
		return err
	}
	if err := c.applyFileDurations(fc); err != nil {
		return err
	}
	c.applyFileRates(fc)
	c.applyFileIndex(fc)
	c.applyFileTracing(fc)
	c.applyFileNomad(fc)
	if err := c.applyFileScaleZero(fc.Nomad); err != nil {
		return err
	}
	if err := c.applyFileAuth(fc.APIKeys, fc.Auth); err != nil {
		return err
	}
	if err := c.applyFileConsul(fc.Consul); err != nil {
		return err
	}
	if err := c.applyFileFleet(fc); err != nil {
		return err
	}
	if fc.Scheduler != nil {
		sc, err := fc.Scheduler.toConfig()
		if err != nil {
			return err
		}
		c.Scheduler = sc
	}
	return c.applyFilePD(fc)
}

// applyFileDurations parses the top-level duration attributes, naming the
// attribute in the error.
func (c *Config) applyFileDurations(fc *fileConfig) error {
	for _, d := range []struct {
		name string
		src  *string
		dst  *time.Duration
	}{
		{"upstream_timeout", fc.UpstreamTimeout, &c.UpstreamTimeout},
		{"driver_expiry", fc.DriverExpiry, &c.DriverExpiry},
		{"scrape_interval", fc.ScrapeInterval, &c.ScrapeInterval},
		{"peer_load_interval", fc.PeerInterval, &c.PeerInterval},
		{"peer_load_expiry", fc.PeerExpiry, &c.PeerExpiry},
		{"queue_timeout", fc.QueueTimeout, &c.QueueTimeout},
		{"responses_ttl", fc.ResponsesTTL, &c.ResponsesTTL},
	} {
		if d.src == nil {
			continue
		}
		v, err := time.ParseDuration(*d.src)
		if err != nil {
			return fmt.Errorf("config %s: %w", d.name, err)
		}
		*d.dst = v
	}
	return nil
}

// applyFileConsul applies the consul block, if there is one.
func (c *Config) applyFileConsul(fcs *fileConsul) error {
	if fcs == nil {
		return nil
	}
	setStr(&c.Consul.Address, fcs.Address)
	setStr(&c.Consul.ServiceID, fcs.ServiceID)
	if fcs.Services != nil {
		c.Consul.Services = fcs.Services
	}
	if fcs.CheckInterval != nil {
		d, err := time.ParseDuration(*fcs.CheckInterval)
		if err != nil {
			return fmt.Errorf("config consul check_interval: %w", err)
		}
		c.Consul.CheckInterval = d
	}
	if fcs.Register != nil {
		c.Consul.Register = *fcs.Register
	}
	return nil
}

// applyFileFleet adds the model and static replica blocks; a model may be
// declared once.
func (c *Config) applyFileFleet(fc *fileConfig) error {
	for _, m := range fc.Models {
		if _, dup := c.Models[m.Name]; dup {
			return fmt.Errorf("config: model %q declared twice", m.Name)
		}
		c.Models[m.Name] = Model{TokenizerDir: m.TokenizerDir, Sim: m.Sim, EngineTokenize: m.EngineTok, HarmonyStartDate: m.HarmonyDate}
		c.setModelKey(m.Name, m.EngineAPIKey)
	}
	for _, r := range fc.Replicas {
		sr := StaticReplica{ID: r.ID, Model: r.Model, Address: r.Address, BlockSize: 16, KVEvents: r.KVEvents, Role: r.Role, Task: r.Task}
		if r.BlockSize != nil {
			sr.BlockSize = *r.BlockSize
		}
		c.Replicas = append(c.Replicas, sr)
	}
	return nil
}

func (fs *fileScheduler) toConfig() (scheduler.Config, error) {
	var out scheduler.Config
	for _, p := range fs.Filters {
		s, err := p.spec("filter")
		if err != nil {
			return out, err
		}
		out.Filters = append(out.Filters, s)
	}
	for _, p := range fs.Scorers {
		s, err := p.spec("scorer")
		if err != nil {
			return out, err
		}
		out.Scorers = append(out.Scorers, s)
	}
	if fs.Picker == nil {
		return out, fmt.Errorf("config scheduler: a picker block is required")
	}
	s, err := fs.Picker.spec("picker")
	if err != nil {
		return out, err
	}
	out.Picker = s
	if fs.Replicator != nil {
		r, err := fs.Replicator.spec("replicator")
		if err != nil {
			return out, err
		}
		out.Replicator = &r
	}
	return out, nil
}

// spec turns an HCL plugin block into the scheduler's Spec; params become
// JSON so the scheduler decodes them strictly, as it does for any source.
func (p filePlugin) spec(role string) (scheduler.Spec, error) {
	s := scheduler.Spec{Type: p.Type, Name: p.Name, Weight: p.Weight}
	if role != "scorer" && p.Weight != 0 {
		return s, fmt.Errorf("config scheduler: %s %q: weight applies to scorers only", role, p.Type)
	}
	if p.Params.IsNull() || !p.Params.IsKnown() {
		return s, nil
	}
	ty := p.Params.Type()
	if !ty.IsObjectType() && !ty.IsMapType() {
		return s, fmt.Errorf("config scheduler: %s %q: params must be an object, got %s", role, p.Type, ty.FriendlyName())
	}
	raw, err := ctyjson.SimpleJSONValue{Value: p.Params}.MarshalJSON()
	if err != nil {
		return s, fmt.Errorf("config scheduler: %s %q params: %w", role, p.Type, err)
	}
	s.Params = json.RawMessage(raw)
	return s, nil
}

func setStr(dst *string, src *string) {
	if src != nil {
		*dst = *src
	}
}
