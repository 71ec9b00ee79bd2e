package config

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Discovery names where the router finds replicas and peer routers.
const (
	// DiscoveryConsul reads Consul's catalogue (the consul block); the
	// default.
	DiscoveryConsul = "consul"
	// DiscoveryNomad reads Nomad's own service catalogue (services with
	// provider = "nomad"; the nomad block).
	DiscoveryNomad = "nomad"
)

// Nomad says where the Nomad agent is and what to watch when Discovery is
// "nomad". Empty Address, Token, Namespace and Region fall back to
// Nomad's own NOMAD_ADDR, NOMAD_TOKEN, NOMAD_NAMESPACE and NOMAD_REGION
// (the nomad package reads them), then to the agent's defaults.
type Nomad struct {
	// Address is the agent's HTTP API URL (http://127.0.0.1:4646).
	Address string
	// Token is an ACL token with read-job in Namespace.
	Token             string
	Namespace, Region string
	// Services are the Nomad service names whose registrations tagged
	// "llmgw" are model replicas.
	Services []string
	// ScaleFromZero lists the models scaled from and to zero, with how
	// long a request waits for the first replica and how many wait per
	// model (scalezero.go; 0 takes DefaultColdStartTimeout and
	// DefaultMaxColdQueue).
	ScaleFromZero    []ScaleFromZero
	ColdStartTimeout time.Duration
	MaxColdQueue     int
}

type fileNomad struct {
	Address   *string  `hcl:"address,optional"`
	Token     *string  `hcl:"token,optional"`
	Namespace *string  `hcl:"namespace,optional"`
	Region    *string  `hcl:"region,optional"`
	Services  []string `hcl:"services,optional"`

	ScaleFromZero    []fileScaleFromZero `hcl:"scale_from_zero,block"`
	ColdStartTimeout *string             `hcl:"cold_start_timeout,optional"`
	MaxColdQueue     *int                `hcl:"max_cold_queue,optional"`
}

// nomadSettings are the environment variables and flags of Discovery and
// Nomad.
var nomadSettings = []setting{
	{"LLMGW_DISCOVERY", "discovery", "where replicas and peers are found: consul or nomad", str(func(c *Config) *string { return &c.Discovery })},
	{"LLMGW_NOMAD_ADDRESS", "nomad-address", "Nomad agent HTTP API URL (default NOMAD_ADDR, else http://127.0.0.1:4646)", str(func(c *Config) *string { return &c.Nomad.Address })},
	{"LLMGW_NOMAD_TOKEN", "nomad-token", "Nomad ACL token (default NOMAD_TOKEN; prefer the environment: flags show in ps)", str(func(c *Config) *string { return &c.Nomad.Token })},
	{"LLMGW_NOMAD_NAMESPACE", "nomad-namespace", "Nomad namespace of the services (default NOMAD_NAMESPACE, else default)", str(func(c *Config) *string { return &c.Nomad.Namespace })},
	{"LLMGW_NOMAD_REGION", "nomad-region", "Nomad region (default NOMAD_REGION, else the agent's)", str(func(c *Config) *string { return &c.Nomad.Region })},
	{"LLMGW_NOMAD_SERVICES", "nomad-services", "comma-separated Nomad services holding model replicas", func(c *Config, v string) error {
		c.Nomad.Services = splitList(v)
		return nil
	}},
}

func init() { settings = append(settings, nomadSettings...) }

func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// applyFileNomad takes the file's discovery attribute and nomad block.
func (c *Config) applyFileNomad(fc *fileConfig) {
	setStr(&c.Discovery, fc.Discovery)
	if fn := fc.Nomad; fn != nil {
		setStr(&c.Nomad.Address, fn.Address)
		setStr(&c.Nomad.Token, fn.Token)
		setStr(&c.Nomad.Namespace, fn.Namespace)
		setStr(&c.Nomad.Region, fn.Region)
		if fn.Services != nil {
			c.Nomad.Services = fn.Services
		}
	}
}

// UsesNomad reports whether replicas and peers come from Nomad.
func (c *Config) UsesNomad() bool { return c.Discovery == DiscoveryNomad }

func (c *Config) validateNomad() []error {
	var errs []error
	switch c.Discovery {
	case DiscoveryConsul:
	case DiscoveryNomad:
		if c.Nomad.Address != "" {
			u, err := url.Parse(c.Nomad.Address)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				errs = append(errs, fmt.Errorf("nomad address %q: want a URL such as http://127.0.0.1:4646", c.Nomad.Address))
			}
		}
		if len(c.Nomad.Services) == 0 && len(c.Replicas) == 0 {
			errs = append(errs, errors.New("nomad: services is empty, so no replica would ever be found"))
		}
		if c.Consul.Address != "" || c.Consul.Register {
			errs = append(errs, errors.New(`discovery "nomad": leave the consul block out (Nomad registers the router from its jobspec)`))
		}
	default:
		errs = append(errs, fmt.Errorf("discovery %q: want consul or nomad", c.Discovery))
	}
	return append(errs, c.validateScaleZero()...)
}
