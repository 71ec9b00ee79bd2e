package attack

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/cmd/llmgw-router/routertest"
	"github.com/llmgw/llmgw/cmd/vllm-sim/simproc"
	"github.com/llmgw/llmgw/consul/consultest"
	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/internal/testkit/testcert"
)

// TestPeerSources holds the peer_token to be stolen, and checks what the
// listing in a real Consul agent still refuses: a message from an
// address where Consul lists no router (403), and a flood of made-up
// router ids from a listed address, which the table holds as one peer
// per router listed there.
func TestPeerSources(t *testing.T) {
	if testing.Short() {
		t.Skip("attack suite: starts Consul, llmgw-router and vllm-sim; skipped with -short")
	}
	simBin, err := sims.Path()
	if err != nil {
		t.Fatal(err)
	}
	sim, err := simproc.Start(ctxFor(t, time.Minute), simproc.Options{Binary: simBin,
		Args: []string{model, "--host", "127.0.0.1", "--port", "0", "--block-size", "16", "--sim-latency=false"}}, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Stop)
	agent := consultest.Start(t)
	src := config(strings.TrimPrefix(sim.URL, "http://")) + fmt.Sprintf(`
consul {
  address        = %q
  services       = []
  register       = true
  check_interval = "1s"
}
`, agent.Addr)
	r := &router{routertest.Start(t, routers.Binary(t), src)}
	poll.Until(t, "Consul to list the router", func() bool { return adminMetric(t, r, "llmgw_peer_routers_listed") == 1 })

	t.Run("unlisted source", func(t *testing.T) {
		growth := r.peakGrowth(t, func() {
			code, body := peerPost(t, "127.0.0.2", r.Ingest, "stolen/1")
			if code != http.StatusForbidden || !strings.Contains(body, "source 127.0.0.2 is not the address of a router") {
				t.Errorf("peer load from 127.0.0.2 with the peer token: %d %s; want 403 naming the source", code, body)
			}
		})
		if n := adminMetric(t, r, `llmgw_peer_load_messages_total{result="unlisted"}`); n != 1 {
			t.Errorf("%v messages counted unlisted; want 1", n)
		}
		t.Logf("BOUND peer load from an unlisted address: 403; peak RSS growth %.1f MB", growth)
	})
	t.Run("flood of peer ids", func(t *testing.T) {
		const ids = 2000
		growth := r.peakGrowth(t, func() {
			for i := range ids {
				if code, body := peerPost(t, "127.0.0.1", r.Ingest, fmt.Sprintf("made-up/%d", i)); code != http.StatusNoContent {
					t.Fatalf("id %d: %d %s; want 204", i, code, body)
				}
			}
		})
		if n := adminMetric(t, r, "llmgw_peer_routers"); n != 1 {
			t.Errorf("%v peers held after %d ids from 127.0.0.1, where Consul lists 1 router; want 1", n, ids)
		}
		if n := adminMetric(t, r, "llmgw_peer_routers_replaced_total"); n != ids-1 {
			t.Errorf("%v peers replaced; want %d", n, ids-1)
		}
		if growth > maxGrowthMB {
			t.Errorf("router's peak RSS grew %.1f MB; want under %d MB", growth, maxGrowthMB)
		}
		t.Logf("BOUND %d peer ids from one listed address: 1 held, %d replaced; peak RSS growth %.1f MB", ids, ids-1, growth)
	})
}

// peerPost sends one peer load message, with the peer token, from the
// loopback address from.
func peerPost(t *testing.T, from, ingest, id string) (int, string) {
	t.Helper()
	d := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
	c := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true,
		DialContext: func(ctx context.Context, n, a string) (net.Conn, error) { return d.DialContext(ctx, n, a) }}}
	body := fmt.Sprintf(`{"version":1,"router":%q,"seq":1,"replicas":[{"replica":"sim/1","in_flight":1000}]}`, id)
	req, err := http.NewRequest("POST", "http://"+ingest+"/v1/peer-load", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+peerToken)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("peer load from %s: %v", from, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// adminMetric reads one sample from the router's /metrics, -1 when it
// is not there.
func adminMetric(t *testing.T, r *router, name string) float64 {
	t.Helper()
	req, _ := http.NewRequest("GET", "http://"+r.Admin+"/metrics", nil)
	req.Header.Set("Authorization", "Bearer "+adminToken)
	resp, err := noKeepAlive.Do(req)
	if err != nil {
		return -1
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(name) + ` (\S+)$`).FindSubmatch(b)
	if m == nil {
		return -1
	}
	v, _ := strconv.ParseFloat(string(m[1]), 64)
	return v
}

// TestPeerTLS runs peer sharing between two routers whose ingest
// listeners serve TLS, found through a real Consul agent: each verifies
// the other's certificate with peer_ca_file and counts it as a peer, and
// the ingest port refuses plain HTTP.
func TestPeerTLS(t *testing.T) {
	if testing.Short() {
		t.Skip("attack suite: starts Consul, two llmgw-routers and vllm-sim; skipped with -short")
	}
	simBin, err := sims.Path()
	if err != nil {
		t.Fatal(err)
	}
	sim, err := simproc.Start(ctxFor(t, time.Minute), simproc.Options{Binary: simBin,
		Args: []string{model, "--host", "127.0.0.1", "--port", "0", "--block-size", "16", "--sim-latency=false"}}, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sim.Stop)
	ca, err := testcert.NewCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	agent := consultest.Start(t)
	var rs []*router
	for i := range 2 {
		leaf, err := ca.Issue(fmt.Sprintf("router-%d", i))
		if err != nil {
			t.Fatal(err)
		}
		src := config(strings.TrimPrefix(sim.URL, "http://")) + fmt.Sprintf(`
ingest_tls_cert_file = %q
ingest_tls_key_file  = %q
peer_ca_file         = %q
peer_load_interval   = "50ms"
consul {
  address        = %q
  services       = []
  register       = true
  check_interval = "1s"
}
`, leaf.CertFile, leaf.KeyFile, ca.CertFile, agent.Addr)
		rs = append(rs, &router{routertest.Start(t, routers.Binary(t), src)})
	}
	for i, r := range rs {
		poll.Until(t, fmt.Sprintf("router %d to hear its peer over TLS", i), func() bool {
			return adminMetric(t, r, "llmgw_peer_routers") == 1 && adminMetric(t, r, `llmgw_peer_load_messages_total{result="accepted"}`) > 0
		})
		if n := adminMetric(t, r, `llmgw_peer_load_messages_total{result="rejected"}`); n != 0 {
			t.Errorf("router %d rejected %v peer messages; want 0", i, n)
		}
	}
	// The same ingest port answers plain HTTP with Go's TLS refusal, so
	// a token sent in the clear never reaches the handler.
	if code, _ := peerPost(t, "127.0.0.1", rs[0].Ingest, "plain/1"); code != http.StatusBadRequest {
		t.Errorf("plain HTTP to a TLS ingest port: %d; want 400", code)
	}
	t.Logf("BOUND peer sharing over TLS: both routers count each other, none rejected; plain HTTP 400")
}
