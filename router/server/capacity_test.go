package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-hclog"

	"github.com/llmgw/llmgw/internal/kvwire"
	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/router/config"
)

// syncBuffer is a log sink safe for the router's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// postSnapshot sends a driver snapshot holding blocks for replica to the
// router's ingest listener.
func postSnapshot(t *testing.T, ingest string, epoch uint64, replica string, blocks int) {
	t.Helper()
	keys := make([]uint64, blocks)
	for i := range keys {
		keys[i] = uint64(i+1) * 0x9E3779B97F4A7C15
	}
	err := kvwire.Send(context.Background(), http.DefaultClient, "http://"+ingest, "tok", &kvwire.Update{Version: kvwire.Version, Driver: "n", Epoch: epoch, Snapshot: true,
		Replicas: []kvwire.Replica{{ID: replica, Groups: []kvwire.Group{{Tier: kvwire.TierGPU, Add: keys}}}}})
	if err != nil {
		t.Fatal(err)
	}
}

// waitMetrics polls the router's /metrics until every want line shows.
func waitMetrics(t *testing.T, addr string, want ...string) {
	t.Helper()
	var m, missing string
	if !poll.Within(poll.Timeout, func() bool {
		_, m = get(t, "http://"+addr+"/metrics")
		missing = ""
		for _, w := range want {
			if !strings.Contains(m, w) {
				missing = w
				break
			}
		}
		return missing == ""
	}) {
		t.Fatalf("metrics never showed %s; metrics:\n%s", missing, m)
	}
}

// fakeReplica serves vLLM's /metrics advertising gpuBlocks and a model
// listing with one adapter, "sql".
func fakeReplica(t *testing.T, gpuBlocks int) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			io.WriteString(w, `{"object":"list","data":[{"id":"m","parent":null},{"id":"sql","parent":"m"}]}`)
			return
		}
		fmt.Fprintf(w, "vllm:num_requests_waiting 0\nvllm:cache_config_info{block_size=\"16\",num_gpu_blocks=\"%d\"} 1\n", gpuBlocks)
	}))
	t.Cleanup(srv.Close)
	return srv.Listener.Addr().String()
}

// TestOversizeAlarm: a replica advertising 8 GPU blocks whose index share
// grows to 20 (missed removals) raises the gauge and a warning; a snapshot
// within capacity clears both. (A second, large replica keeps the model's
// key cap, which a lone replica would hit first, out of the way.) The
// scraped adapters reach /v1/models on the way.
func TestOversizeAlarm(t *testing.T) {
	c := testConfig()
	c.Replicas[0].Address = fakeReplica(t, 8)
	c.Replicas = append(c.Replicas, config.StaticReplica{ID: "b/1", Model: "m", Address: fakeReplica(t, 100), BlockSize: 16})
	c.ScrapeInterval = 20 * time.Millisecond
	logs := &syncBuffer{}
	s, err := Start(context.Background(), c, hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Info}))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	postSnapshot(t, s.IngestAddr(), 1, "a/1", 10) // 10 <= 8 x 1.25: within slack
	waitMetrics(t, s.AdminAddr(),
		`llmgw_replica_kv_capacity_blocks{model="m",replica="a/1",tier="gpu"} 8`,
		`llmgw_replica_kv_capacity_blocks{model="m",replica="b/1",tier="gpu"} 100`, // the key cap out of the way (scrapes are spread)
		`llmgw_replica_index_blocks{model="m",replica="a/1",tier="gpu"} 10`,
		`llmgw_replica_index_oversized{model="m",replica="a/1",tier="gpu"} 0`)

	postSnapshot(t, s.IngestAddr(), 2, "a/1", 20)
	waitMetrics(t, s.AdminAddr(), `llmgw_replica_index_oversized{model="m",replica="a/1",tier="gpu"} 1`,
		`llmgw_replica_index_resnapshots_total{model="m",replica="a/1"} 1`)
	if l := logs.String(); !strings.Contains(l, "exceeds its advertised KV capacity") || !strings.Contains(l, "indexed_blocks=20") || !strings.Contains(l, "capacity_blocks=8") {
		t.Errorf("no oversize warning naming 20 indexed and 8 advertised blocks in the log:\n%s", l)
	}
	// The repair: the driver's next delta is answered "snapshot required".
	err = kvwire.Send(context.Background(), http.DefaultClient, "http://"+s.IngestAddr(), "tok",
		&kvwire.Update{Version: kvwire.Version, Driver: "n", Epoch: 2, Seq: 1})
	if !errors.Is(err, kvwire.ErrSnapshotRequired) {
		t.Errorf("driver's delta after the alarm: %v; want snapshot required", err)
	}

	postSnapshot(t, s.IngestAddr(), 3, "a/1", 4)
	waitMetrics(t, s.AdminAddr(), `llmgw_replica_index_oversized{model="m",replica="a/1",tier="gpu"} 0`)
	if l := logs.String(); !strings.Contains(l, "within its KV capacity again") {
		t.Errorf("no all-clear in the log:\n%s", l)
	}
	if _, b := get(t, "http://"+s.Addr()+"/v1/models"); !strings.Contains(b, `"id":"sql"`) || !strings.Contains(b, `"parent":"m"`) {
		t.Errorf("/v1/models lacks the scraped adapter: %s", b)
	}
}

// fakeSessions records the drivers asked for a snapshot.
type fakeSessions struct {
	owners map[string]string
	asked  []string
}

func (f *fakeSessions) Owner(replica string) (string, bool) { d, ok := f.owners[replica]; return d, ok }
func (f *fakeSessions) Resnapshot(driver string)            { f.asked = append(f.asked, driver) }

// TestRepairRateLimited: an oversized replica's driver is asked for a
// snapshot at most once per resnapshotEvery, whichever of its replicas is
// oversized; other drivers are not held back, and a replica with no
// driver session asks nobody.
func TestRepairRateLimited(t *testing.T) {
	fs := &fakeSessions{owners: map[string]string{"a/1": "d1", "b/1": "d1", "c/1": "d2"}}
	c := newCapacity(nil, nil, fs, 0, hclog.NewNullLogger())
	now := time.Unix(1000, 0)
	c.now = func() time.Time { return now }
	steps := []struct {
		after    time.Duration
		replicas []string
		want     []string // drivers asked so far
	}{
		{0, []string{"a/1"}, []string{"d1"}},
		{time.Second, []string{"a/1", "b/1", "c/1"}, []string{"d1", "d2"}},
		{resnapshotEvery - 2*time.Second, []string{"a/1", "x/1"}, []string{"d1", "d2"}},
		{2 * time.Second, []string{"b/1"}, []string{"d1", "d2", "d1"}},
	}
	for i, st := range steps {
		now = now.Add(st.after)
		for _, r := range st.replicas {
			c.repair(r)
		}
		if !cmp.Equal(fs.asked, st.want) {
			t.Errorf("step %d: asked %v; want %v", i, fs.asked, st.want)
		}
	}
	if got := [2]uint64{c.Repairs("a/1"), c.Repairs("b/1")}; got != [2]uint64{1, 1} {
		t.Errorf("repairs of a/1, b/1 = %v; want [1 1]", got)
	}
}
