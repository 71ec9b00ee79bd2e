package config

import (
	"fmt"
	"strings"
	"time"
)

// Auth is who may use the API: the plain key list and the keys file
// (router/auth). Neither set: every client is served as one anonymous
// tenant, as before API keys existed.
type Auth struct {
	// APIKeys is the plain list; each key is its own tenant.
	APIKeys []string
	// KeysFile is the JSON keys file of tenants; empty for none.
	KeysFile string
	// ReloadInterval is how often the keys file is checked for a change
	// (SIGHUP reloads at once).
	ReloadInterval time.Duration
}

// fileAuth is the auth block.
type fileAuth struct {
	KeysFile       *string `hcl:"keys_file,optional"`
	ReloadInterval *string `hcl:"reload_interval,optional"`
}

func (c *Config) applyFileAuth(keys []string, fa *fileAuth) error {
	if keys != nil {
		c.Auth.APIKeys = keys
	}
	if fa == nil {
		return nil
	}
	setStr(&c.Auth.KeysFile, fa.KeysFile)
	if fa.ReloadInterval != nil {
		d, err := time.ParseDuration(*fa.ReloadInterval)
		if err != nil {
			return fmt.Errorf("config auth reload_interval: %w", err)
		}
		c.Auth.ReloadInterval = d
	}
	return nil
}

// setAPIKeys reads a comma-separated key list.
func setAPIKeys(c *Config, v string) error {
	c.Auth.APIKeys = nil
	for _, k := range strings.Split(v, ",") {
		if k = strings.TrimSpace(k); k != "" {
			c.Auth.APIKeys = append(c.Auth.APIKeys, k)
		}
	}
	return nil
}

// authSettings are the environment variables and flags of Auth.
var authSettings = []setting{
	{"LLMGW_API_KEYS", "api-keys", "comma-separated client API keys, each its own tenant (prefer the environment: flags show in ps)", setAPIKeys},
	{"LLMGW_KEYS_FILE", "keys-file", "JSON keys file of tenants (auth { keys_file })", str(func(c *Config) *string { return &c.Auth.KeysFile })},
}

func (a *Auth) validate() []error {
	var errs []error
	if a.ReloadInterval <= 0 {
		errs = append(errs, fmt.Errorf("auth reload_interval %s: must be positive", a.ReloadInterval))
	}
	for i, k := range a.APIKeys {
		if k == "" {
			errs = append(errs, fmt.Errorf("api_keys[%d] is empty", i))
		}
	}
	return errs
}
