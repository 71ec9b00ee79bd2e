package server

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/llmgw/llmgw/internal/kvwire"
	"github.com/llmgw/llmgw/router/config"
	"github.com/llmgw/llmgw/router/scheduler"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func testConfig() config.Config {
	c := config.Default()
	c.Listen, c.IngestListen, c.HTTP.AdminListen = "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:0"
	c.KVToken, c.PeerToken = "tok", "peer-tok"
	c.Replicas = []config.StaticReplica{{ID: "a/1", Model: "m", Address: "127.0.0.1:1", BlockSize: 16, KVEvents: true}}
	return c
}

func get(t *testing.T, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestStartServeClose starts a router on static replicas, checks both
// listeners answer, and that Close leaves no goroutine behind (TestMain).
func TestStartServeClose(t *testing.T) {
	s, err := Start(context.Background(), testConfig(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if c, b := get(t, "http://"+s.Addr()+"/v1/models"); c != 200 || !strings.Contains(b, `"id":"m"`) {
		t.Errorf("/v1/models: %d %s", c, b)
	}
	// A snapshot from a driver makes the replica exact; the metrics say so.
	body, err := kvwire.Encode(&kvwire.Update{Version: kvwire.Version, Driver: "n", Epoch: 1, Snapshot: true,
		Replicas: []kvwire.Replica{{ID: "a/1", Groups: []kvwire.Group{{Tier: kvwire.TierGPU, Add: []uint64{1, 2}}}}}})
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, "http://"+s.IngestAddr()+kvwire.Path, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer tok")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent {
		t.Fatalf("ingest: %d", resp.StatusCode)
	}
	if s.Replicas().Mode("a/1") != scheduler.ModeExact {
		t.Errorf("replica not exact after a snapshot")
	}
	_, m := get(t, "http://"+s.AdminAddr()+"/metrics")
	for _, want := range []string{
		`llmgw_replica_info{healthy="true",mode="exact",model="m",replica="a/1"} 1`,
		`llmgw_index_keys{model="m"} 2`,
		`llmgw_kv_ingest_requests_total{code="204"} 1`,
		`llmgw_replica_kv_events_missing{replica="a/1"} 0`,
	} {
		if !strings.Contains(m, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	s.Close()
	if _, err := http.Get("http://" + s.Addr() + "/health"); err == nil {
		t.Errorf("API still answers after Close")
	}
}

func TestStartErrors(t *testing.T) {
	tests := []struct {
		name string
		edit func(*config.Config)
		want string
	}{
		{"bad scheduler", func(c *config.Config) { c.Scheduler.Picker.Type = "nope" }, "scheduler config"},
		{"bad ingest address", func(c *config.Config) { c.IngestListen = "256.0.0.1:1" }, "kv ingest listener"},
		{"bad admin address", func(c *config.Config) { c.HTTP.AdminListen = "256.0.0.1:1" }, "admin listener"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := testConfig()
			tt.edit(&c)
			_, err := Start(context.Background(), c, nil)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v; want an error containing %q", err, tt.want)
			}
		})
	}
}

// TestScrapeFeedsLoadAndCapacity: a replica's /metrics reaches the load
// tracker and caps its model's index at 1.25x the advertised KV blocks.
func TestScrapeFeedsLoadAndCapacity(t *testing.T) {
	replica := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "vllm:num_requests_waiting 3\nvllm:num_requests_running 1\n"+
			`vllm:cache_config_info{block_size="16",num_gpu_blocks="80",num_cpu_blocks="20"} 1`+"\n")
	}))
	defer replica.Close()
	c := testConfig()
	c.Replicas[0].Address = replica.Listener.Addr().String()
	c.ScrapeInterval = 20 * time.Millisecond
	s, err := Start(context.Background(), c, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	waitMetrics(t, s.AdminAddr(), `llmgw_index_max_keys{model="m"} 125`, `llmgw_replica_waiting{replica="a/1"} 3`)
}
