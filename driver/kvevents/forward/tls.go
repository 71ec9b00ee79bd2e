package forward

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net/http"
	"os"
	"strings"
)

// TLSClient returns an HTTP client for routers whose KV-ingest listeners
// serve TLS (the router's ingest_tls_cert_file), trusting the CA
// certificates in caFile (PEM) and nothing else.
func TLSClient(caFile string) (*http.Client, error) {
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return nil, fmt.Errorf("ingest CA file: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("ingest CA file %s: no PEM certificate in it", caFile)
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return &http.Client{Transport: tr}, nil
}

// HTTPS is a RouterSource whose endpoints are reached over TLS: it turns
// the http:// URLs of Source (ConsulRouters) into https:// ones.
type HTTPS struct{ Source RouterSource }

// Changed forwards the source's wake-ups.
func (h HTTPS) Changed() <-chan struct{} { return h.Source.Changed() }

// Current returns the source's endpoints with https URLs.
func (h HTTPS) Current() []RouterEndpoint {
	eps := h.Source.Current()
	for i := range eps {
		if rest, ok := strings.CutPrefix(eps[i].URL, "http://"); ok {
			eps[i].URL = "https://" + rest
		}
	}
	return eps
}
