package attack

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/cmd/llmgw-router/routertest"
	"github.com/llmgw/llmgw/cmd/vllm-sim/simproc"
	"github.com/llmgw/llmgw/internal/testkit/poll"
)

// Two tenants' keys: each plain API key is a tenant of its own.
const (
	keyA = "sk-attack-tenant-a"
	keyB = "sk-attack-tenant-b"
)

// tenantConfig is a router with two tenants' keys and two replicas, routed
// by the session scorer alone, so a request outside any session picks
// either replica at random and one inside a session goes where the session
// is pinned. Route headers are on: the attacks read which replica served.
func tenantConfig(sims [2]string) string {
	return fmt.Sprintf(`
listen               = "127.0.0.1:0"
ingest_listen        = "127.0.0.1:0"
admin_listen         = "127.0.0.1:0"
admin_token          = %q
api_keys             = [%q, %q]
expose_route_headers = true
log_level            = "info"

model %q {
  sim = true
}

replica "sim/1" {
  model      = %q
  address    = %q
  block_size = 16
}

replica "sim/2" {
  model      = %q
  address    = %q
  block_size = 16
}

scheduler {
  filter "model" {}
  scorer "session" {
    weight = 1
  }
  picker "max-score" {}
}
`, adminToken, keyA, keyB, model, model, sims[0], model, sims[1])
}

// TestTenantAttacks starts a router with two tenants and runs the attacks
// one tenant (or a client without a key) can make on another.
func TestTenantAttacks(t *testing.T) {
	if testing.Short() {
		t.Skip("attack suite: builds and starts llmgw-router and vllm-sim; skipped with -short")
	}
	simBin, err := sims.Path()
	if err != nil {
		t.Fatal(err)
	}
	var addrs [2]string
	for i := range addrs {
		sim, err := simproc.Start(ctxFor(t, time.Minute), simproc.Options{Binary: simBin,
			Args: []string{model, "--host", "127.0.0.1", "--port", "0", "--block-size", "16", "--sim-latency=false"}}, 30*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(sim.Stop)
		addrs[i] = strings.TrimPrefix(sim.URL, "http://")
	}
	r := &router{routertest.Start(t, routers.Binary(t), tenantConfig(addrs))}
	poll.Until(t, "the router to be ready", func() bool { return status(t, "GET", "http://"+r.API+"/ready", nil, "") == 200 })
	t.Run("readiness without a key", func(t *testing.T) { readyWithoutKey(t, r) })
	t.Run("session id reused across tenants", func(t *testing.T) { sessionAcrossTenants(t, r) })
}

// sessionAcrossTenants: tenant B sending tenant A's session ids neither
// follows A's replicas nor re-pins A's sessions. A pins each of n sessions
// to a replica; B sends each id once. B's first request in a session of
// its own picks a replica at random, so over n ids B lands away from A's
// replica about n/2 times (all n on A's replicas, as when sessions were one
// namespace, has odds 2^-n); each of those would have re-pinned A's
// session, and A's next request in every session still reaches its
// replica.
func sessionAcrossTenants(t *testing.T, r *router) {
	const n = 32
	pinned := make([]string, n)
	away := 0
	for i := range pinned {
		id := fmt.Sprintf("attack-session-%d", i)
		pinned[i] = served(t, r, keyA, id)
		if served(t, r, keyB, id) != pinned[i] {
			away++
		}
		if got := served(t, r, keyA, id); got != pinned[i] {
			t.Errorf("session %s: tenant A's request went to %s after tenant B used the id; want %s, where A pinned it", id, got, pinned[i])
		}
	}
	if away == 0 {
		t.Errorf("tenant B, sending A's %d session ids, reached A's replica every time; want B's sessions its own", n)
	}
	t.Logf("BOUND session id reused across tenants: B away from A's replica for %d of %d ids; A's next request in each checked", away, n)
}

// served sends one completion with the tenant's key in the session and
// returns the replica that served it.
func served(t *testing.T, r *router, key, session string) string {
	t.Helper()
	req, err := http.NewRequest("POST", "http://"+r.API+"/v1/completions", strings.NewReader(`{"model":"sim-model","prompt":"hello","max_tokens":1}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Session-Id", session)
	resp, err := noKeepAlive.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	replica := resp.Header.Get("X-Llmgw-Replica")
	if resp.StatusCode != 200 || replica == "" {
		t.Fatalf("completion in session %s: %d %s, replica %q; want 200 from a named replica", session, resp.StatusCode, b, replica)
	}
	return replica
}
