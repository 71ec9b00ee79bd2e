package config

import (
	"flag"
	"slices"
	"strings"
	"testing"
)

func TestNomadDiscoveryFromEverySource(t *testing.T) {
	t.Parallel()
	c := Default()
	if c.UsesNomad() || c.Discovery != DiscoveryConsul {
		t.Fatalf("default discovery %q", c.Discovery)
	}
	src := `
discovery = "nomad"
nomad {
  address   = "http://10.0.0.1:4646"
  token     = "file-token"
  namespace = "llm"
  region    = "eu"
  services  = ["vllm", "vllm-70b"]
}`
	if err := c.ParseHCL([]byte(src), "router.hcl"); err != nil {
		t.Fatal(err)
	}
	want := Nomad{Address: "http://10.0.0.1:4646", Token: "file-token", Namespace: "llm", Region: "eu", Services: []string{"vllm", "vllm-70b"}}
	if !c.UsesNomad() || c.Nomad.Address != want.Address || c.Nomad.Token != want.Token || c.Nomad.Namespace != want.Namespace || c.Nomad.Region != want.Region || !slices.Equal(c.Nomad.Services, want.Services) {
		t.Errorf("from HCL: %+v", c.Nomad)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("valid config rejected: %v", err)
	}
	if err := c.ApplyEnv([]string{"LLMGW_NOMAD_TOKEN=env-token", "LLMGW_NOMAD_SERVICES=a, b", "LLMGW_NOMAD_NAMESPACE=ns2"}); err != nil {
		t.Fatal(err)
	}
	if c.Nomad.Token != "env-token" || !slices.Equal(c.Nomad.Services, []string{"a", "b"}) || c.Nomad.Namespace != "ns2" {
		t.Errorf("from env: %+v", c.Nomad)
	}

	fs := flag.NewFlagSet("router", flag.ContinueOnError)
	f := BindFlags(fs)
	if err := fs.Parse([]string{"-discovery", "nomad", "-nomad-address", "https://nomad.example:4646", "-nomad-region", "us", "-nomad-services", "vllm"}); err != nil {
		t.Fatal(err)
	}
	got, err := f.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !got.UsesNomad() || got.Nomad.Address != "https://nomad.example:4646" || got.Nomad.Region != "us" || !slices.Equal(got.Nomad.Services, []string{"vllm"}) {
		t.Errorf("from flags: %q %+v", got.Discovery, got.Nomad)
	}
}

func TestNomadDiscoveryValidation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		edit func(*Config)
		want string // "" : valid
	}{
		{"consul default", func(c *Config) {}, ""},
		{"unknown", func(c *Config) { c.Discovery = "etcd" }, `discovery "etcd": want consul or nomad`},
		{"no services", func(c *Config) { c.Discovery = DiscoveryNomad }, "nomad: services is empty"},
		{"host:port address", func(c *Config) {
			c.Discovery, c.Nomad.Services, c.Nomad.Address = DiscoveryNomad, []string{"v"}, "127.0.0.1:4646"
		}, "want a URL"},
		{"consul too", func(c *Config) {
			c.Discovery, c.Nomad.Services, c.Consul.Address, c.Consul.Services = DiscoveryNomad, []string{"v"}, "127.0.0.1:8500", []string{"v"}
		}, "leave the consul block out"},
		{"default address", func(c *Config) { c.Discovery, c.Nomad.Services = DiscoveryNomad, []string{"v"} }, ""},
	} {
		c := Default()
		tc.edit(&c)
		err := c.Validate()
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v; want %q", tc.name, err, tc.want)
		}
	}
}
