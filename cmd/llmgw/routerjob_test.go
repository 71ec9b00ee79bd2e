package main

import (
	"maps"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"

	"github.com/llmgw/llmgw/router/config"
)

// TestRouterJobConfig renders the router config that jobs/llmgw-router.nomad.hcl
// writes from its template (with the allocation's env filled in as Nomad
// would) and loads it with the router's own strict config loader, so the
// jobspec cannot ship a config the router rejects at start.
func TestRouterJobConfig(t *testing.T) {
	path := jobsDir("llmgw-router.nomad.hcl")
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	data := templateData(t, src, path, "local/router.hcl")
	env := map[string]string{"NOMAD_PORT_http": "8080", "NOMAD_PORT_ingest": "24311", "NOMAD_PORT_admin": "24312", "NOMAD_IP_http": "10.0.0.7", "NOMAD_SECRETS_DIR": "/alloc/secrets"}
	rendered := regexp.MustCompile(`\{\{ env "([A-Za-z_]+)" \}\}`).ReplaceAllStringFunc(data, func(m string) string {
		name := regexp.MustCompile(`"([A-Za-z_]+)"`).FindStringSubmatch(m)[1]
		v, ok := env[name]
		if !ok {
			t.Errorf("template uses env %s, which this test does not fill in", name)
		}
		return v
	})
	if regexp.MustCompile(`\{\{`).MatchString(rendered) {
		t.Fatalf("template left unrendered:\n%s", rendered)
	}
	cfg := config.Default()
	if err := cfg.ParseHCL([]byte(rendered), "router.hcl"); err != nil {
		t.Fatalf("router rejects the jobspec's config: %v\n%s", err, rendered)
	}
	noToken := cfg
	if err := noToken.Validate(); err == nil || !strings.Contains(err.Error(), "set admin_token") {
		t.Errorf("the jobspec's admin port without the admin token: %v; want the router to refuse", err)
	}
	if err := cfg.ApplyEnv([]string{"LLMGW_KV_TOKEN=token-from-nomad-variables", "LLMGW_PEER_TOKEN=peer-from-nomad-variables", "LLMGW_ADMIN_TOKEN=admin-from-nomad-variables"}); err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("router rejects the jobspec's config: %v\n%s", err, rendered)
	}
	if cfg.Auth.KeysFile != "/alloc/secrets/keys.json" {
		t.Errorf("keys_file %q; want the keys template's destination", cfg.Auth.KeysFile)
	}
	if cfg.Listen != "0.0.0.0:8080" || cfg.IngestListen != "0.0.0.0:24311" || cfg.HTTP.AdminListen != "0.0.0.0:24312" {
		t.Errorf("listen %q, ingest_listen %q, admin_listen %q; want the allocated ports", cfg.Listen, cfg.IngestListen, cfg.HTTP.AdminListen)
	}
	secrets := templateData(t, src, path, "secrets/kv.env")
	if cfg.PeerInterval <= 0 || cfg.PeerToken == "" {
		t.Errorf("peer_load_interval %s, peer token %q: want the jobspec's routers to share their loads", cfg.PeerInterval, cfg.PeerToken)
	}
	for _, v := range []string{"LLMGW_KV_TOKEN={{ .kv_token }}", "LLMGW_PEER_TOKEN={{ .peer_token }}", "LLMGW_ADMIN_TOKEN={{ .admin_token }}", "LLMGW_ENGINE_API_KEY={{ .engine_api_key }}"} {
		if !strings.Contains(secrets, v) {
			t.Errorf("secrets template lacks %s:\n%s", v, secrets)
		}
	}
}

// templateData returns the data of the template block with the given
// destination, anywhere in the jobspec.
func templateData(t *testing.T, src []byte, filename, destination string) string {
	t.Helper()
	file, diags := hclsyntax.ParseConfig(src, filename, hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	var found string
	var walk func(b *hclsyntax.Body)
	walk = func(b *hclsyntax.Body) {
		for _, blk := range b.Blocks {
			if blk.Type == "template" {
				d, _ := blk.Body.Attributes["destination"].Expr.Value(nil)
				if d.AsString() == destination {
					v, diags := blk.Body.Attributes["data"].Expr.Value(nil)
					if diags.HasErrors() {
						t.Fatal(diags.Error())
					}
					found = v.AsString()
				}
			}
			walk(blk.Body)
		}
	}
	walk(file.Body.(*hclsyntax.Body))
	if found == "" {
		t.Fatalf("%s has no template with destination %q", filename, destination)
	}
	return found
}

// TestRouterJobEnv evaluates the env block of jobs/llmgw-router.nomad.hcl
// with the input variables' defaults, with expose_route_headers set and
// with tracing on, renders each value as Nomad does (a string), and hands
// the result to the router's env parser: a misspelt name or a value the
// router cannot parse would otherwise show only on a real agent.
func TestRouterJobEnv(t *testing.T) {
	path := jobsDir("llmgw-router.nomad.hcl")
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	file, diags := hclsyntax.ParseConfig(src, path, hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	defaults := map[string]cty.Value{}
	var env *hclsyntax.Body
	var walk func(b *hclsyntax.Body)
	walk = func(b *hclsyntax.Body) {
		for _, blk := range b.Blocks {
			switch blk.Type {
			case "variable":
				v, diags := blk.Body.Attributes["default"].Expr.Value(nil)
				if diags.HasErrors() {
					t.Fatal(diags.Error())
				}
				defaults[blk.Labels[0]] = v
			case "env":
				env = blk.Body
			}
			walk(blk.Body)
		}
	}
	walk(file.Body.(*hclsyntax.Body))
	if env == nil {
		t.Fatal("no env block")
	}
	const collector = "http://otel.service.consul:4318/v1/traces"
	tests := []struct {
		name    string
		set     map[string]cty.Value
		headers bool
		tracing config.Tracing
	}{
		{"defaults", nil, false, config.Tracing{SampleRatio: 1}},
		{"expose_route_headers", map[string]cty.Value{"expose_route_headers": cty.True}, true, config.Tracing{SampleRatio: 1}},
		{"tracing", map[string]cty.Value{"tracing_endpoint": cty.StringVal(collector), "tracing_sample_ratio": cty.NumberFloatVal(0.1)},
			false, config.Tracing{Endpoint: collector, SampleRatio: 0.1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vars := maps.Clone(defaults)
			maps.Copy(vars, tt.set)
			ctx := &hcl.EvalContext{Variables: map[string]cty.Value{"var": cty.ObjectVal(vars)}}
			var environ []string
			for name, attr := range env.Attributes {
				v, diags := attr.Expr.Value(ctx)
				if diags.HasErrors() {
					t.Fatalf("env %s: %s", name, diags.Error())
				}
				s, err := convert.Convert(v, cty.String)
				if err != nil {
					t.Fatalf("env %s: Nomad cannot render %#v as a string: %v", name, v, err)
				}
				environ = append(environ, name+"="+s.AsString())
			}
			cfg := config.Default()
			if err := cfg.ApplyEnv(environ); err != nil {
				t.Fatalf("router rejects the jobspec's env %v: %v", environ, err)
			}
			if cfg.Consul.Address != defaults["consul_address"].AsString() || cfg.HTTP.ExposeRouteHeaders != tt.headers {
				t.Errorf("env %v: consul address %q, expose_route_headers %t; want %q, %t", environ,
					cfg.Consul.Address, cfg.HTTP.ExposeRouteHeaders, defaults["consul_address"].AsString(), tt.headers)
			}
			if cfg.Tracing != tt.tracing {
				t.Errorf("env %v: tracing %+v; want %+v", environ, cfg.Tracing, tt.tracing)
			}
		})
	}
}
