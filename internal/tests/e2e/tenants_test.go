package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmgw/llmgw/consul/consultest"
	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/router/auth"
	"github.com/llmgw/llmgw/router/server"
)

// writeKeys writes a keys file of tenants (name: key and extra JSON
// fields) and returns its path.
func writeKeys(t *testing.T, tenants map[string][2]string) string {
	t.Helper()
	var list []string
	for name, v := range tenants {
		list = append(list, fmt.Sprintf(`{"name": %q, "keys_sha256": [%q]%s}`, name, auth.HashKey(v[0]).String(), v[1]))
	}
	src := `{"salt_secret": "e2e-salt-secret-0123456789abcdef0123", "tenants": [` + strings.Join(list, ",") + `]}`
	path := filepath.Join(t.TempDir(), "keys.json")
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// callAs is call with a bearer key.
func callAs(t *testing.T, key, router, path, body string) answer {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, "http://"+router+path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return answer{code: resp.StatusCode, replica: resp.Header.Get("X-Llmgw-Replica"), mode: resp.Header.Get("X-Llmgw-Routing-Mode"), body: b}
}

// TestFleetWideRateLimit drives one tenant at three times its requests
// per second through every router of a fleet of 2, then 3 (real Consul,
// real HTTP, vllm-sim replicas) and measures what the fleet admits in
// steady state against the configured rate. Without the routers sharing
// what they admit, the fleet would admit the limit once per router.
func TestFleetWideRateLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Consul and vllm-sim processes")
	}
	agent := consultest.Start(t)
	for _, id := range []string{"rl-0/main", "rl-1/main"} {
		registerReplica(t, agent.Client, id, startSim(t, "--sim-latency=false"), false)
	}
	const limit = 20.0 // requests per second, fleet-wide
	for _, n := range []int{2, 3} {
		t.Run(fmt.Sprintf("%d routers", n), func(t *testing.T) {
			key := fmt.Sprintf("llmgw-e2e-heavy-%d-0123456789abcdef", n)
			keys := writeKeys(t, map[string][2]string{fmt.Sprintf("heavy-%d", n): {key, fmt.Sprintf(`, "limits": {"requests_per_second": %g}`, limit)}})
			var routers []*server.Server
			for i := range n {
				c := routerConfig(token)
				c.Consul.Address, c.Consul.Services, c.Consul.Register = agent.Addr, []string{"vllm"}, true
				c.Consul.ServiceID = fmt.Sprintf("rl-router-%d-%d", n, i)
				c.Consul.CheckInterval = time.Second
				c.Auth.KeysFile = keys
				routers = append(routers, startRouter(t, c))
			}
			for _, r := range routers {
				poll.Until(t, "replicas from consul", func() bool { return len(r.Replicas().ForModel(model)) == 2 })
				waitMetrics(t, r, fmt.Sprintf("llmgw_peer_routers %d", n-1))
			}
			rate := measureAdmitted(t, routers, key, 3*limit, 2*time.Second, 8*time.Second)
			t.Logf("fleet-wide limit, %d routers: configured %.0f req/s, offered %.0f req/s spread over the routers, admitted %.1f req/s in steady state (%+.1f%% of the limit)",
				n, limit, 3*limit, rate, 100*(rate-limit)/limit)
			// The aim is within 10%; the bound here leaves room for a
			// loaded machine, and still fails if each router admitted the
			// limit on its own (n times it).
			if rate < 0.75*limit || rate > 1.25*limit {
				t.Errorf("admitted %.1f req/s with a fleet-wide limit of %.0f", rate, limit)
			}
		})
	}
}

// measureAdmitted offers rate requests a second, spread round-robin over
// the routers, for warm+window, and returns the rate admitted (200)
// among the requests sent in the window after the warm-up (which spends
// the bucket's burst).
func measureAdmitted(t *testing.T, routers []*server.Server, key string, rate float64, warm, window time.Duration) float64 {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 30 * time.Second}
	defer client.CloseIdleConnections()
	body := completion("a short prompt", false)
	var admitted, refused, other atomic.Int64
	var once sync.Once
	var sample429 *http.Response
	var sampleBody []byte
	var wg sync.WaitGroup
	start := time.Now()
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer tick.Stop()
	for i := 0; ; i++ {
		now := <-tick.C
		if now.Sub(start) >= warm+window {
			break
		}
		counted := now.Sub(start) >= warm
		r := routers[i%len(routers)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, "http://"+r.Addr()+"/v1/completions", strings.NewReader(body))
			req.Header.Set("Authorization", "Bearer "+key)
			resp, err := client.Do(req)
			if err != nil {
				other.Add(1)
				return
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusTooManyRequests {
				once.Do(func() { sample429, sampleBody = resp, b })
			}
			switch {
			case !counted:
			case resp.StatusCode == http.StatusOK:
				admitted.Add(1)
			case resp.StatusCode == http.StatusTooManyRequests:
				refused.Add(1)
			default:
				other.Add(1)
			}
		}()
	}
	wg.Wait()
	if sample429 == nil {
		t.Fatal("no request was refused")
	}
	h := sample429.Header
	var e struct {
		Error struct{ Type, Code string }
	}
	if err := json.Unmarshal(sampleBody, &e); err != nil || e.Error.Code != "rate_limit_exceeded" || e.Error.Type != "requests" ||
		h.Get("Retry-After") == "" || h.Get("x-ratelimit-limit-requests") != "20" || h.Get("x-ratelimit-remaining-requests") != "0" || h.Get("x-ratelimit-reset-requests") == "" {
		t.Errorf("a 429 through a real router: %v %s", h, sampleBody)
	}
	if other.Load() > 0 {
		t.Errorf("%d requests failed other than with 429", other.Load())
	}
	t.Logf("in the %s window: %d admitted, %d refused with 429", window, admitted.Load(), refused.Load())
	return float64(admitted.Load()) / window.Seconds()
}

// TestIsolatedTenantsDoNotShareCache: two isolated tenants send the same
// prompt through a real router to vllm-sim replicas whose KV events reach
// the router through the driver. Each tenant's repeat is routed exact to
// its cached blocks and hits the engine's cache; the other tenant's first
// request never hits what the first tenant cached, as vllm-sim's reported
// cached_tokens show.
func TestIsolatedTenantsDoNotShareCache(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Consul and vllm-sim processes")
	}
	f := startFleetWith(t, nil, nil)
	keyA, keyB := "llmgw-e2e-tenant-a-0123456789abcdef", "llmgw-e2e-tenant-b-0123456789abcdef"
	c := routerConfig(token)
	c.Consul.Address, c.Consul.Services, c.Consul.Register = f.agent.Addr, []string{"vllm"}, true
	c.Consul.ServiceID, c.Consul.CheckInterval = "iso-router", time.Second
	c.Auth.KeysFile = writeKeys(t, map[string][2]string{"a": {keyA, `, "isolated": true`}, "b": {keyB, `, "isolated": true`}})
	r := startRouter(t, c)
	poll.Until(t, "two replicas from consul", func() bool { return len(r.Replicas().ForModel(model)) == 2 })

	prompt := longPrompt(42)
	first := callAs(t, keyA, r.Addr(), "/v1/completions", completion(prompt, false))
	if first.code != 200 {
		t.Fatalf("tenant a: %d %s", first.code, first.body)
	}
	waitExact(t, r, first.replica)
	// The router indexes a's salted blocks from the engine's KV events and
	// routes a's repeat to them, exact.
	var again answer
	poll.Until(t, "tenant a's repeat routed exact to its blocks", func() bool {
		again = callAs(t, keyA, r.Addr(), "/v1/completions", completion(prompt, false))
		return again.code == 200 && again.mode == "exact" && again.replica == first.replica && cachedTokens(t, again.body) > 0
	})
	// Tenant b, same prompt: routed exact, and no cached token on any
	// replica, the one holding a's blocks included.
	for i := range 2 {
		b := callAs(t, keyB, r.Addr(), "/v1/completions", completion(prompt, false))
		if b.code != 200 || b.mode != "exact" {
			t.Fatalf("tenant b: %d, mode %q: %s", b.code, b.mode, b.body)
		}
		if got := cachedTokens(t, b.body); i == 0 && got != 0 {
			t.Errorf("tenant b's first request hit %d cached tokens on %s: a's cache leaked across tenants", got, b.replica)
		}
	}
}
