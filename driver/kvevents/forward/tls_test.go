package forward

import (
	"crypto/tls"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/driver/kvevents"
	"github.com/llmgw/llmgw/driver/kvevents/kvtest"
	"github.com/llmgw/llmgw/internal/kvwire"
	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/internal/testkit/testcert"
)

// TestForwarderOverTLS: with TLSClient and HTTPS, updates reach a router
// serving TLS with a certificate from the CA; a client trusting another CA
// never gets through.
func TestForwarderOverTLS(t *testing.T) {
	dir := t.TempDir()
	ca, err := testcert.NewCA(dir)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := ca.Issue("router")
	if err != nil {
		t.Fatal(err)
	}
	m := kvwire.NewMirror()
	rec, err := kvwire.NewReceiver("secret", m)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(rec)
	srv.TLS = tlsServerConfig(t, leaf)
	srv.StartTLS()
	defer srv.Close()
	plain := strings.Replace(srv.URL, "https://", "http://", 1) // as Consul's meta gives it

	s := kvevents.NewStore()
	kvtest.Apply(s, "a", 0, kvtest.Stored([]uint64{1, 2}, nil, kvtest.Toks(0, 8), 4))
	client, err := TLSClient(ca.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	f, err := Start(s, HTTPS{newStaticRouters(RouterEndpoint{ID: "r1", URL: plain})}, Config{
		DriverID: "node-1", Token: "secret", FlushInterval: 10 * time.Millisecond, Client: client,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	poll.Until(t, "the snapshot to reach the TLS router", func() bool { return len(m.Blocks("node-1", "a")) == 2 })

	other, err := testcert.NewCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	wrong, err := TLSClient(other.CertFile)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wrong.Post(srv.URL+kvwire.Path, kvwire.ContentType, strings.NewReader("x")); err == nil || !strings.Contains(err.Error(), "certificate") {
		t.Errorf("a client trusting another CA: %v; want a certificate error", err)
	}
	if _, err := TLSClient(leaf.KeyFile); err == nil {
		t.Error("a key file taken as a CA file")
	}
}

func tlsServerConfig(t *testing.T, leaf testcert.Leaf) *tls.Config {
	t.Helper()
	cert, err := tls.LoadX509KeyPair(leaf.CertFile, leaf.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}}
}
