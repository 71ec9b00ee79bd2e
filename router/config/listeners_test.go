package config

import (
	"flag"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestHTTPFromEverySource(t *testing.T) {
	t.Parallel()
	src := `
admin_listen         = "127.0.0.1:9000"
admin_token          = "from-file"
expose_route_headers = true
read_header_timeout  = "3s"
body_timeout         = "4s"
write_timeout        = "5s"
idle_timeout         = "6s"
max_header_bytes     = 4096
max_headers          = 50
max_connections      = 10
tls_cert_file        = "/c.pem"
tls_key_file         = "/k.pem"
admin_tls_cert_file  = "/ac.pem"
admin_tls_key_file   = "/ak.pem"
ingest_tls_cert_file = "/ic.pem"
ingest_tls_key_file  = "/ik.pem"
peer_ca_file         = "/ca.pem"
`
	c := Default()
	if err := c.ParseHCL([]byte(src), "r.hcl"); err != nil {
		t.Fatal(err)
	}
	want := HTTP{
		AdminListen: "127.0.0.1:9000", AdminToken: "from-file", ExposeRouteHeaders: true,
		ReadHeaderTimeout: 3 * time.Second, BodyTimeout: 4 * time.Second, WriteTimeout: 5 * time.Second, IdleTimeout: 6 * time.Second,
		MaxHeaderBytes: 4096, MaxHeaders: 50, MaxConnections: 10,
		APITLS: TLSFiles{"/c.pem", "/k.pem"}, AdminTLS: TLSFiles{"/ac.pem", "/ak.pem"}, IngestTLS: TLSFiles{"/ic.pem", "/ik.pem"},
		PeerCAFile: "/ca.pem",
	}
	if d := cmp.Diff(want, c.HTTP); d != "" {
		t.Errorf("file (-want +got):\n%s", d)
	}
	if err := c.Validate(); err != nil {
		t.Errorf("valid file rejected: %v", err)
	}

	fs := flag.NewFlagSet("t", flag.ContinueOnError)
	f := BindFlags(fs)
	if err := fs.Parse([]string{"-body-timeout", "7s", "-max-connections", "20", "-expose-route-headers", "false"}); err != nil {
		t.Fatal(err)
	}
	env := []string{"LLMGW_ADMIN_TOKEN=from-env", "LLMGW_IDLE_TIMEOUT=8s", "LLMGW_MAX_HEADERS=30", "LLMGW_BODY_TIMEOUT=1s",
		"LLMGW_TLS_CERT_FILE=/e.pem", "LLMGW_TLS_KEY_FILE=/ek.pem", "LLMGW_ADMIN_LISTEN=0.0.0.0:9001"}
	got, err := f.Resolve(env)
	if err != nil {
		t.Fatal(err)
	}
	h := got.HTTP
	if h.AdminToken != "from-env" || h.IdleTimeout != 8*time.Second || h.MaxHeaders != 30 || h.BodyTimeout != 7*time.Second ||
		h.MaxConnections != 20 || h.ExposeRouteHeaders || h.APITLS != (TLSFiles{"/e.pem", "/ek.pem"}) || h.AdminListen != "0.0.0.0:9001" {
		t.Errorf("env and flags not applied: %+v", h)
	}
}

func TestHTTPDefaults(t *testing.T) {
	t.Parallel()
	h := Default().HTTP
	if h.AdminListen != "127.0.0.1:8082" || h.ExposeRouteHeaders || h.AdminToken != "" || h.IdleTimeout < time.Minute || h.IdleTimeout > 2*time.Minute {
		t.Errorf("defaults %+v: want loopback admin, no route headers, idle timeout within 1 to 2 minutes", h)
	}
}

func TestHTTPValidate(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		edit func(*HTTP)
		want string
	}{
		{"admin address", func(h *HTTP) { h.AdminListen = "nope" }, "admin_listen"},
		{"open admin without token", func(h *HTTP) { h.AdminListen = "0.0.0.0:8082" }, "set admin_token"},
		{"zero body timeout", func(h *HTTP) { h.BodyTimeout = 0 }, "body_timeout"},
		{"negative idle timeout", func(h *HTTP) { h.IdleTimeout = -time.Second }, "idle_timeout"},
		{"zero header cap", func(h *HTTP) { h.MaxHeaders = 0 }, "max_headers"},
		{"zero connections", func(h *HTTP) { h.MaxConnections = 0 }, "max_connections"},
		{"cert without key", func(h *HTTP) { h.AdminTLS.CertFile = "/c.pem" }, "admin_tls_cert_file and admin_tls_key_file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Default()
			tt.edit(&c.HTTP)
			if err := c.Validate(); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v; want an error containing %q", err, tt.want)
			}
		})
	}
	c := Default()
	c.HTTP.AdminListen, c.HTTP.AdminToken = "0.0.0.0:8082", "t"
	if err := c.Validate(); err != nil {
		t.Errorf("open admin with a token: %v", err)
	}
}

func TestHTTPFileErrors(t *testing.T) {
	t.Parallel()
	for src, want := range map[string]string{
		`body_timeout = "soon"`:    "body_timeout",
		`max_headers = "many"`:     "a number is required",
		`admin_tokn = "x"`:         "admin_tokn",
		`expose_route_headers = 3`: "bool required",
	} {
		c := Default()
		if err := c.ParseHCL([]byte(src), "r.hcl"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: got %v; want an error naming %q", src, err, want)
		}
	}
}
