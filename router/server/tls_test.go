package server

import (
	"context"
	"crypto/tls"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/internal/kvwire"
	"github.com/llmgw/llmgw/internal/testkit/testcert"
	"github.com/llmgw/llmgw/router/config"
)

// TestTLSListeners: with certificate files for each listener, the API,
// admin and ingest listeners all serve TLS, with real handshakes against a
// CA made for the test; a plain-HTTP client gets nowhere.
func TestTLSListeners(t *testing.T) {
	backend := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, `{}`) }))
	defer backend.Close()
	ca, err := testcert.NewCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	var leaves [3]testcert.Leaf
	for i, name := range []string{"api", "admin", "ingest"} {
		if leaves[i], err = ca.Issue(name); err != nil {
			t.Fatal(err)
		}
	}
	s := startWith(t, backend.Listener.Addr().String(), func(c *config.Config) {
		c.HTTP.APITLS = config.TLSFiles{CertFile: leaves[0].CertFile, KeyFile: leaves[0].KeyFile}
		c.HTTP.AdminTLS = config.TLSFiles{CertFile: leaves[1].CertFile, KeyFile: leaves[1].KeyFile}
		c.HTTP.IngestTLS = config.TLSFiles{CertFile: leaves[2].CertFile, KeyFile: leaves[2].KeyFile}
	})
	tr := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: ca.Pool}}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	get := func(url string) (int, string, error) {
		resp, err := client.Get(url)
		if err != nil {
			return 0, "", err
		}
		defer resp.Body.Close()
		if resp.TLS == nil {
			t.Errorf("%s answered without TLS", url)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		return resp.StatusCode, resp.TLS.PeerCertificates[0].Subject.CommonName, nil
	}
	for _, tt := range []struct{ url, cn string }{
		{"https://" + s.Addr() + "/health", "api"},
		{"https://" + s.AdminAddr() + "/metrics", "admin"},
	} {
		code, cn, err := get(tt.url)
		if err != nil || code != 200 || cn != tt.cn {
			t.Errorf("%s: %d from %q (%v); want 200 from %q", tt.url, code, cn, err, tt.cn)
		}
	}
	u := &kvwire.Update{Version: kvwire.Version, Driver: "n", Epoch: 1, Snapshot: true,
		Replicas: []kvwire.Replica{{ID: "a/1", Groups: []kvwire.Group{{Tier: kvwire.TierGPU, Add: []uint64{1}}}}}}
	if err := kvwire.Send(context.Background(), client, "https://"+s.IngestAddr(), "tok", u); err != nil {
		t.Errorf("kv update over TLS: %v", err)
	}
	if resp, err := http.Get("http://" + s.Addr() + "/health"); err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest { // Go's TLS server: "Client sent an HTTP request to an HTTPS server"
			t.Errorf("plain HTTP on a TLS listener: %d; want 400", resp.StatusCode)
		}
	}
	if _, err := (&http.Client{}).Get("https://" + s.Addr() + "/health"); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("a client without the CA: %v; want a certificate error", err)
	}
}
