package config

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"
)

// HTTP is how the router's listeners face the network: where the admin
// API answers, what the client port reveals, and the bounds every
// connection is held to. router/listener applies it.
type HTTP struct {
	// AdminListen serves /admin/*, /metrics and the explain API, apart
	// from the client port (loopback by default: operators, not tenants).
	AdminListen string
	// AdminToken, when set, is the Bearer token the admin listener asks for.
	AdminToken string
	// ExposeRouteHeaders adds the X-Llmgw-* headers (replica, routing mode,
	// predicted cached tokens, attempts) to routed responses. Off by
	// default: they let any client probe whether a prefix someone else sent
	// is cached, and name the fleet's replicas.
	ExposeRouteHeaders bool
	// ReadHeaderTimeout bounds reading a request's headers; BodyTimeout
	// reading its body (a body that trickles is cut off with 408).
	ReadHeaderTimeout, BodyTimeout time.Duration
	// WriteTimeout bounds each write to a client, not the whole response,
	// so a long stream lives while a client that stops reading is dropped.
	WriteTimeout time.Duration
	// IdleTimeout closes a kept-alive connection idle this long.
	IdleTimeout time.Duration
	// MaxHeaderBytes caps a request's header block; MaxHeaders the number
	// of header fields (more: 431).
	MaxHeaderBytes, MaxHeaders int
	// MaxConnections caps the open connections of each listener; more wait
	// in the kernel's accept queue.
	MaxConnections int
	// TLS of each listener; empty files: plain HTTP.
	APITLS, AdminTLS, IngestTLS TLSFiles
	// PeerCAFile verifies peer routers' ingest certificates when this
	// router posts its load to them over TLS (empty: the system roots).
	PeerCAFile string
}

// TLSFiles name a PEM certificate chain and its key. Both set or neither;
// the files are read again when they change.
type TLSFiles struct {
	CertFile, KeyFile string
}

// Enabled reports whether the listener serves TLS.
func (t TLSFiles) Enabled() bool { return t.CertFile != "" }

func defaultHTTP() HTTP {
	return HTTP{
		AdminListen:       "127.0.0.1:8082",
		ReadHeaderTimeout: 10 * time.Second,
		BodyTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
		IdleTimeout:       90 * time.Second,
		MaxHeaderBytes:    64 << 10,
		MaxHeaders:        100,
		MaxConnections:    4096,
	}
}

func (h *HTTP) validate() error {
	var errs []error
	for name, d := range map[string]time.Duration{"read_header_timeout": h.ReadHeaderTimeout, "body_timeout": h.BodyTimeout, "write_timeout": h.WriteTimeout, "idle_timeout": h.IdleTimeout} {
		if d <= 0 {
			errs = append(errs, fmt.Errorf("%s %s: must be positive", name, d))
		}
	}
	for name, n := range map[string]int{"max_header_bytes": h.MaxHeaderBytes, "max_headers": h.MaxHeaders, "max_connections": h.MaxConnections} {
		if n <= 0 {
			errs = append(errs, fmt.Errorf("%s %d: must be positive", name, n))
		}
	}
	if h.AdminToken == "" && !loopback(h.AdminListen) {
		errs = append(errs, fmt.Errorf("admin_listen %q is not a loopback address: set admin_token, or bind it to 127.0.0.1", h.AdminListen))
	}
	for name, t := range map[string]TLSFiles{"tls": h.APITLS, "admin_tls": h.AdminTLS, "ingest_tls": h.IngestTLS} {
		if (t.CertFile == "") != (t.KeyFile == "") {
			errs = append(errs, fmt.Errorf("%s_cert_file and %s_key_file: set both or neither", name, name))
		}
	}
	return errors.Join(errs...)
}

// loopback reports whether addr's host is a loopback IP or localhost; an
// address that does not parse is left to the address check.
func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return true
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// fileHTTP is the HCL attributes of HTTP, at the top level of the file.
type fileHTTP struct {
	AdminListen        *string `hcl:"admin_listen,optional"`
	AdminToken         *string `hcl:"admin_token,optional"`
	ExposeRouteHeaders *bool   `hcl:"expose_route_headers,optional"`
	ReadHeaderTimeout  *string `hcl:"read_header_timeout,optional"`
	BodyTimeout        *string `hcl:"body_timeout,optional"`
	WriteTimeout       *string `hcl:"write_timeout,optional"`
	IdleTimeout        *string `hcl:"idle_timeout,optional"`
	MaxHeaderBytes     *int    `hcl:"max_header_bytes,optional"`
	MaxHeaders         *int    `hcl:"max_headers,optional"`
	MaxConnections     *int    `hcl:"max_connections,optional"`
	TLSCertFile        *string `hcl:"tls_cert_file,optional"`
	TLSKeyFile         *string `hcl:"tls_key_file,optional"`
	AdminTLSCertFile   *string `hcl:"admin_tls_cert_file,optional"`
	AdminTLSKeyFile    *string `hcl:"admin_tls_key_file,optional"`
	IngestTLSCertFile  *string `hcl:"ingest_tls_cert_file,optional"`
	IngestTLSKeyFile   *string `hcl:"ingest_tls_key_file,optional"`
	PeerCAFile         *string `hcl:"peer_ca_file,optional"`
}

func (h *HTTP) applyFile(f *fileHTTP) error {
	for _, s := range []struct{ dst, src *string }{
		{&h.AdminListen, f.AdminListen}, {&h.AdminToken, f.AdminToken},
		{&h.APITLS.CertFile, f.TLSCertFile}, {&h.APITLS.KeyFile, f.TLSKeyFile},
		{&h.AdminTLS.CertFile, f.AdminTLSCertFile}, {&h.AdminTLS.KeyFile, f.AdminTLSKeyFile},
		{&h.IngestTLS.CertFile, f.IngestTLSCertFile}, {&h.IngestTLS.KeyFile, f.IngestTLSKeyFile},
		{&h.PeerCAFile, f.PeerCAFile},
	} {
		setStr(s.dst, s.src)
	}
	if f.ExposeRouteHeaders != nil {
		h.ExposeRouteHeaders = *f.ExposeRouteHeaders
	}
	for _, n := range []struct {
		dst *int
		src *int
	}{{&h.MaxHeaderBytes, f.MaxHeaderBytes}, {&h.MaxHeaders, f.MaxHeaders}, {&h.MaxConnections, f.MaxConnections}} {
		if n.src != nil {
			*n.dst = *n.src
		}
	}
	for _, d := range []struct {
		name string
		src  *string
		dst  *time.Duration
	}{
		{"read_header_timeout", f.ReadHeaderTimeout, &h.ReadHeaderTimeout},
		{"body_timeout", f.BodyTimeout, &h.BodyTimeout},
		{"write_timeout", f.WriteTimeout, &h.WriteTimeout},
		{"idle_timeout", f.IdleTimeout, &h.IdleTimeout},
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

func intSetting(name string, f func(c *Config) *int) func(*Config, string) error {
	return func(c *Config, v string) error {
		n, err := strconv.Atoi(v)
		if err != nil {
			return fmt.Errorf("%s %q: want an integer", name, v)
		}
		*f(c) = n
		return nil
	}
}

// httpSettings are HTTP's environment variables and flags.
var httpSettings = []setting{
	{"LLMGW_ADMIN_LISTEN", "admin-listen", "admin API and /metrics listen address (host:port)", str(func(c *Config) *string { return &c.HTTP.AdminListen })},
	{"LLMGW_ADMIN_TOKEN", "admin-token", "Bearer token the admin listener asks for (prefer the environment: flags show in ps)", str(func(c *Config) *string { return &c.HTTP.AdminToken })},
	{"LLMGW_EXPOSE_ROUTE_HEADERS", "expose-route-headers", "send X-Llmgw-* route headers (replica, mode, cached tokens) to clients (true/false)", func(c *Config, v string) error {
		b, err := parseBool("expose route headers", v)
		c.HTTP.ExposeRouteHeaders = b
		return err
	}},
	{"LLMGW_READ_HEADER_TIMEOUT", "read-header-timeout", "time to read a request's headers", dur("read header timeout", func(c *Config) *time.Duration { return &c.HTTP.ReadHeaderTimeout })},
	{"LLMGW_BODY_TIMEOUT", "body-timeout", "time to read a request's body", dur("body timeout", func(c *Config) *time.Duration { return &c.HTTP.BodyTimeout })},
	{"LLMGW_WRITE_TIMEOUT", "write-timeout", "time each write to a client may take", dur("write timeout", func(c *Config) *time.Duration { return &c.HTTP.WriteTimeout })},
	{"LLMGW_IDLE_TIMEOUT", "idle-timeout", "close a kept-alive connection idle this long", dur("idle timeout", func(c *Config) *time.Duration { return &c.HTTP.IdleTimeout })},
	{"LLMGW_MAX_HEADER_BYTES", "max-header-bytes", "largest request header block", intSetting("max header bytes", func(c *Config) *int { return &c.HTTP.MaxHeaderBytes })},
	{"LLMGW_MAX_HEADERS", "max-headers", "most header fields in a request", intSetting("max headers", func(c *Config) *int { return &c.HTTP.MaxHeaders })},
	{"LLMGW_MAX_CONNECTIONS", "max-connections", "most open connections per listener", intSetting("max connections", func(c *Config) *int { return &c.HTTP.MaxConnections })},
	{"LLMGW_TLS_CERT_FILE", "tls-cert-file", "API listener certificate (PEM)", str(func(c *Config) *string { return &c.HTTP.APITLS.CertFile })},
	{"LLMGW_TLS_KEY_FILE", "tls-key-file", "API listener key (PEM)", str(func(c *Config) *string { return &c.HTTP.APITLS.KeyFile })},
	{"LLMGW_ADMIN_TLS_CERT_FILE", "admin-tls-cert-file", "admin listener certificate (PEM)", str(func(c *Config) *string { return &c.HTTP.AdminTLS.CertFile })},
	{"LLMGW_ADMIN_TLS_KEY_FILE", "admin-tls-key-file", "admin listener key (PEM)", str(func(c *Config) *string { return &c.HTTP.AdminTLS.KeyFile })},
	{"LLMGW_INGEST_TLS_CERT_FILE", "ingest-tls-cert-file", "KV ingest listener certificate (PEM)", str(func(c *Config) *string { return &c.HTTP.IngestTLS.CertFile })},
	{"LLMGW_INGEST_TLS_KEY_FILE", "ingest-tls-key-file", "KV ingest listener key (PEM)", str(func(c *Config) *string { return &c.HTTP.IngestTLS.KeyFile })},
	{"LLMGW_PEER_CA_FILE", "peer-ca-file", "CA (PEM) verifying peer routers' ingest certificates", str(func(c *Config) *string { return &c.HTTP.PeerCAFile })},
}
