package listener

import (
	"crypto/tls"
	"errors"
	"net/http"
	"os"
	"sync"
	"testing"

	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/internal/testkit/testcert"
)

// TestTLSReload: a listener serves the certificate on disk, serves a
// renewed one from the next handshake on, and keeps the last good one when
// the renewed files do not load.
func TestTLSReload(t *testing.T) {
	t.Parallel()
	ca, err := testcert.NewCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	first, err := ca.Issue("router")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var reported []error
	tc, err := TLSConfig(first.CertFile, first.KeyFile, func(err error) { mu.Lock(); reported = append(reported, err); mu.Unlock() })
	if err != nil {
		t.Fatal(err)
	}
	ln, err := Listen("127.0.0.1:0", 16, tc)
	if err != nil {
		t.Fatal(err)
	}
	srv := NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}), Limits{MaxHeaders: 100})
	go srv.Serve(ln)
	defer srv.Close()

	serial := func() string {
		conn, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{RootCAs: ca.Pool, ServerName: "127.0.0.1"})
		if err != nil {
			t.Fatalf("handshake: %v", err)
		}
		defer conn.Close()
		return conn.ConnectionState().PeerCertificates[0].SerialNumber.String()
	}
	if got := serial(); got != first.Serial.String() {
		t.Fatalf("serial %s; want the first certificate's %s", got, first.Serial)
	}
	if _, err := tls.Dial("tcp", ln.Addr().String(), &tls.Config{ServerName: "127.0.0.1"}); err == nil {
		t.Error("a client without the CA completed the handshake")
	}
	renewed, err := ca.Issue("router")
	if err != nil {
		t.Fatal(err)
	}
	poll.Until(t, "the renewed certificate to be served", func() bool { return serial() == renewed.Serial.String() })

	if err := os.WriteFile(renewed.CertFile, []byte("not a certificate"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := serial(); got != renewed.Serial.String() {
		t.Errorf("serial %s after a broken renewal; want the last good %s", got, renewed.Serial)
	}
	serial()
	mu.Lock()
	defer mu.Unlock()
	if len(reported) != 1 {
		t.Errorf("broken renewal reported %d times (%v); want once", len(reported), errors.Join(reported...))
	}
}

func TestTLSConfigErrors(t *testing.T) {
	t.Parallel()
	if _, err := TLSConfig("/nonexistent/cert.pem", "/nonexistent/key.pem", nil); err == nil {
		t.Error("missing files accepted")
	}
}
