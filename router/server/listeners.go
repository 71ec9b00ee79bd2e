package server

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/llmgw/llmgw/router/config"
	"github.com/llmgw/llmgw/router/listener"
)

// openListeners opens the API, admin and ingest listeners, each capped at
// max_connections and serving TLS where its files are set, and builds
// their servers (router/listener's bounds on each).
func (s *Server) openListeners() error {
	h := s.cfg.HTTP
	limits := listener.Limits{
		ReadHeaderTimeout: h.ReadHeaderTimeout, BodyTimeout: h.BodyTimeout, WriteTimeout: h.WriteTimeout,
		IdleTimeout: h.IdleTimeout, MaxHeaderBytes: h.MaxHeaderBytes, MaxHeaders: h.MaxHeaders, MaxConnections: h.MaxConnections,
	}
	for _, l := range []struct {
		name, addr string
		files      config.TLSFiles
		ln         *net.Listener
	}{
		{"api", s.cfg.Listen, h.APITLS, &s.apiLn},
		{"admin", h.AdminListen, h.AdminTLS, &s.adminLn},
		{"kv ingest", s.cfg.IngestListen, h.IngestTLS, &s.ingestLn},
	} {
		var tc *tls.Config
		if l.files.Enabled() {
			var err error
			log := s.log.With("listener", l.name)
			tc, err = listener.TLSConfig(l.files.CertFile, l.files.KeyFile, func(err error) {
				log.Error("renewed TLS certificate does not load; serving the previous one", "error", err)
			})
			if err != nil {
				return fmt.Errorf("%s listener: %w", l.name, err)
			}
		}
		ln, err := listener.Listen(l.addr, limits.MaxConnections, tc)
		if err != nil {
			return fmt.Errorf("%s listener: %w", l.name, err)
		}
		*l.ln = ln
	}
	s.api = listener.NewServer(s.gw.Handler(), limits)
	s.admin = listener.NewServer(listener.RequireBearer(h.AdminToken, s.adminHandler()), limits)
	s.ingest = listener.NewServer(s.ingestHandler(), limits)
	// net/http's own complaints (failed TLS handshakes, above all) go to
	// the router's log at debug level: any scanner causes them.
	for _, srv := range []*http.Server{s.api, s.admin, s.ingest} {
		srv.ErrorLog = s.log.Named("http").StandardLogger(&hclog.StandardLoggerOptions{ForceLevel: hclog.Debug})
	}
	return nil
}

// scheme is the URL scheme of a listener with these TLS files.
func scheme(f config.TLSFiles) string {
	if f.Enabled() {
		return "https"
	}
	return "http"
}

// peerClient posts this router's load to its peers: over TLS verified with
// peer_ca_file (else the system roots) when the ingest listeners serve TLS.
func (s *Server) peerClient() (*http.Client, error) {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	if s.cfg.HTTP.PeerCAFile != "" {
		pem, err := os.ReadFile(s.cfg.HTTP.PeerCAFile)
		if err != nil {
			return nil, fmt.Errorf("peer_ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("peer_ca_file %s: no PEM certificate in it", s.cfg.HTTP.PeerCAFile)
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return &http.Client{Timeout: 2 * time.Second, Transport: tr}, nil
}

// AdminAddr is the admin listener's address.
func (s *Server) AdminAddr() string { return s.adminLn.Addr().String() }
