package deploy

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"
	"github.com/hashicorp/go-hclog"

	"github.com/llmgw/llmgw/cmd/vllm-sim/simproc"
	"github.com/llmgw/llmgw/consul"
	"github.com/llmgw/llmgw/consul/consultest"
	"github.com/llmgw/llmgw/driver/kvevents"
	"github.com/llmgw/llmgw/driver/kvevents/forward"
	"github.com/llmgw/llmgw/driver/kvevents/intake"
	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/router/config"
	"github.com/llmgw/llmgw/router/scheduler"
	"github.com/llmgw/llmgw/router/server"
)

const (
	model   = "sim-model"
	kvToken = "deploy-test-token"
	// The keys file's tenants: free has no limits; tiny a token budget
	// below any prompt, so its requests are refused with 429.
	freeKey = "free-key-0123456789abcdef"
	tinyKey = "tiny-key-0123456789abcdef"
)

var sims simproc.Shared

func TestMain(m *testing.M) {
	code := m.Run()
	sims.Remove()
	os.Exit(code)
}

// TestNamedMetricsExist: every metric the dashboard and the rules select
// shows in the /metrics of two real routers, registered in a real Consul
// agent and fed KV events by the real driver intake and forwarder from a
// vllm-sim replica, once traffic has gone through queueing, rate limits and
// peer sharing; every vllm:* metric shows in vllm-sim's /metrics.
func TestNamedMetricsExist(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Consul, vllm-sim and two routers")
	}
	named := namedMetrics(t)
	if len(named) < 20 {
		t.Fatalf("the dashboard and the rules name %d metrics; the scan misread them?", len(named))
	}
	agent := consultest.Start(t)
	const replica = "alloc-0/main"
	sim := startReplica(t, agent.Client, replica)
	a := startRouter(t, agent.Addr, "router-a", func(c *config.Config) {
		c.Auth.KeysFile = keysFile(t)
		// One request in flight makes the replica busy: the next one queues.
		c.Scheduler.Filters = append(c.Scheduler.Filters, scheduler.Spec{Type: "busy", Params: []byte(`{"max_in_flight":1}`)})
		c.QueueTimeout = 300 * time.Millisecond
	})
	b := startRouter(t, agent.Addr, "router-b", nil)
	for _, r := range []*server.Server{a, b} {
		poll.Until(t, "the replica exact on both routers", func() bool { return r.Replicas().Mode(replica) == scheduler.ModeExact })
		waitMetric(t, r, "llmgw_peer_routers 1", "llmgw_peer_routers_listed 2", "llmgw_kv_driver_sessions 1", "llmgw_replica_kv_capacity_blocks{")
	}

	// A long stream holds the replica busy until the test ends it; a second
	// request queues, times out and is shed; the tiny tenant is refused by
	// its token limit. The stream is cut, not timed: on a loaded machine a
	// stream of fixed length could end before the second request arrives.
	// ignore_eos keeps vllm-sim from ending it at a simulated EOS (1 to
	// 256 tokens in; this one drew 17, a third of a second at 20 ms a
	// token), which freed the replica for the queued request under load.
	holdCtx, release := context.WithCancel(context.Background())
	defer release()
	long := make(chan int, 1)
	go func() {
		long <- hold(holdCtx, a.Addr(), freeKey, `{"model":"`+model+`","prompt":"hold the replica","max_tokens":3500,"ignore_eos":true,"stream":true}`)
	}()
	waitMetric(t, a, `llmgw_replica_in_flight{replica="`+replica+`"} 1`)
	if code, body := post(a.Addr(), freeKey, `{"model":"`+model+`","prompt":"queued","max_tokens":2}`); code != http.StatusTooManyRequests {
		t.Errorf("request behind a busy replica: %d %s; want 429 after the queue timeout", code, body)
	}
	select {
	case code := <-long:
		t.Fatalf("the long stream ended (%d) before the test released it: the replica was not held busy", code)
	default:
	}
	release()
	if code := <-long; code != http.StatusOK {
		t.Errorf("long stream: %d", code)
	}
	waitMetric(t, a, `llmgw_replica_in_flight{replica="`+replica+`"} 0`)
	if code, body := post(a.Addr(), tinyKey, `{"model":"`+model+`","prompt":"a prompt of more tokens than a whole minute of the budget","max_tokens":2}`); code != http.StatusTooManyRequests {
		t.Errorf("tenant over its token budget: %d %s; want 429", code, body)
	}
	if code, body := post(b.Addr(), "", `{"model":"`+model+`","prompt":"through the other router","max_tokens":2}`); code != http.StatusOK {
		t.Errorf("router b: %d %s", code, body)
	}
	waitMetric(t, a, `llmgw_queue_rejected_total{band="0",reason="timeout"} 1`, `llmgw_rate_limited_total{limit="tokens_too_large",tenant="tiny"} 1`)

	have := map[string]bool{}
	for _, r := range []*server.Server{a, b} {
		for n := range scrape(t, "http://"+r.AdminAddr()+"/metrics") {
			have[n] = true
		}
	}
	engine := scrape(t, sim.URL+"/metrics")
	for _, n := range slices.Sorted(func(yield func(string) bool) {
		for n := range named {
			if !yield(n) {
				return
			}
		}
	}) {
		switch {
		case strings.HasPrefix(n, "llmgw_"):
			if !have[n] {
				t.Errorf("%s (%s) is not in the routers' /metrics", n, named[n])
			}
		case strings.HasPrefix(n, "vllm:"):
			if !engine[n] {
				t.Errorf("%s (%s) is not in vllm-sim's /metrics", n, named[n])
			}
		default:
			t.Errorf("%s (%s) is neither a router (llmgw_) nor an engine (vllm:) metric, nor a recording rule", n, named[n])
		}
	}
}

// startReplica runs vllm-sim with its KV events going through the
// driver's intake and forwarder to the routers Consul lists, and registers
// it as Nomad would from a model jobspec.
func startReplica(t *testing.T, client *api.Client, id string) *simproc.Proc {
	t.Helper()
	store := kvevents.NewStore()
	in, err := intake.Open(intake.Config{Replica: id}, store)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = in.Close() })
	in.EngineRestarted()
	bin, err := sims.Path()
	if err != nil {
		t.Fatal(err)
	}
	p, err := simproc.Start(context.Background(), simproc.Options{Binary: bin, Args: []string{model, "--host", "127.0.0.1", "--port", "0",
		"--block-size", "16", "--seed", "1", "--sim-inter-token-latency=20ms", "--kv-events-config", in.EngineFlag()}}, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	host, port, _ := net.SplitHostPort(strings.TrimPrefix(p.URL, "http://"))
	pn, _ := strconv.Atoi(port)
	err = client.Agent().ServiceRegister(&api.AgentServiceRegistration{
		ID: "vllm-" + strings.ReplaceAll(id, "/", "-"), Name: "vllm", Tags: []string{consul.ReplicaTag}, Address: host, Port: pn,
		Meta: map[string]string{consul.MetaModel: model, consul.MetaReplica: id, consul.MetaBlockSize: "16", consul.MetaKVEvents: "true"},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	w, err := consul.WatchRouters(ctx, client, consul.WatchOptions{WaitTime: 2 * time.Second})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	fw, err := forward.Start(store, forward.ConsulRouters{W: w}, forward.Config{
		DriverID: "node-1", Token: kvToken, FlushInterval: 50 * time.Millisecond, MaxBackoff: 500 * time.Millisecond,
	})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	t.Cleanup(func() { fw.Close(); cancel(); w.Close() })
	return p
}

// startRouter runs a router that registers itself in Consul, follows the
// replicas there and shares its load with its peers.
func startRouter(t *testing.T, consulAddr, serviceID string, edit func(*config.Config)) *server.Server {
	t.Helper()
	c := config.Default()
	c.Listen, c.IngestListen, c.HTTP.AdminListen = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	c.KVToken, c.PeerToken = kvToken, "deploy-test-peer-token"
	c.Models = map[string]config.Model{model: {Sim: true}}
	c.ScrapeInterval = 200 * time.Millisecond
	c.Consul.Address, c.Consul.Services, c.Consul.Register, c.Consul.ServiceID = consulAddr, []string{"vllm"}, true, serviceID
	c.Consul.CheckInterval = time.Second
	c.PeerInterval = 20 * time.Millisecond
	if edit != nil {
		edit(&c)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	s, err := server.Start(context.Background(), c, hclog.New(&hclog.LoggerOptions{Name: serviceID, Level: hclog.Warn, Output: testWriter{t}}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// keysFile writes a keys file with the free and tiny tenants.
func keysFile(t *testing.T) string {
	t.Helper()
	hash := func(k string) string { s := sha256.Sum256([]byte(k)); return hex.EncodeToString(s[:]) }
	b, _ := json.Marshal(map[string]any{"tenants": []map[string]any{
		{"name": "free", "keys_sha256": []string{hash(freeKey)}},
		{"name": "tiny", "keys_sha256": []string{hash(tinyKey)}, "limits": map[string]any{"tokens_per_minute": 4}},
	}})
	p := filepath.Join(t.TempDir(), "keys.json")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// post sends a completion with key (none when empty) and reads the answer.
func post(addr, key, body string) (int, string) {
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/completions", strings.NewReader(body))
	if err != nil {
		return 0, err.Error()
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// hold streams body's completion until ctx ends or the stream does, and
// returns the response's status.
func hold(ctx context.Context, addr, key, body string) int {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+"/v1/completions", strings.NewReader(body))
	if err != nil {
		return 0
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body) // ends with ctx
	return resp.StatusCode
}

// waitMetric polls r's /metrics until every want substring shows.
func waitMetric(t *testing.T, r *server.Server, want ...string) {
	t.Helper()
	var last string
	if !poll.Within(poll.Timeout, func() bool {
		resp, err := http.Get("http://" + r.AdminAddr() + "/metrics")
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		last = string(b)
		for _, w := range want {
			if !strings.Contains(last, w) {
				return false
			}
		}
		return true
	}) {
		t.Fatalf("/metrics of %s never showed all of %q:\n%s", r.AdminAddr(), want, last)
	}
}

// scrape returns the sample names of a Prometheus text exposition:
// counters with _total, histograms' _bucket, _sum and _count.
func scrape(t *testing.T, url string) map[string]bool {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	names := map[string]bool{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		if i := strings.IndexAny(line, "{ "); i > 0 {
			names[line[:i]] = true
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read %s: %v", url, err)
	}
	if len(names) == 0 {
		t.Fatalf("%s has no samples", url)
	}
	return names
}
