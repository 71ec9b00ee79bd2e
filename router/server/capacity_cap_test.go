package server

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/llmgw/llmgw/internal/kvwire"
	"github.com/llmgw/llmgw/router/index"
)

// TestKeyCap: the arithmetic of a model's key cap. Advertised CPU blocks
// count as they are; a replica advertising none gets ratio × its GPU
// blocks; the sum takes capacitySlack, and a cap that would leave int32 is
// clamped rather than wrapped (a negative cap would read as "no cap").
func TestKeyCap(t *testing.T) {
	for _, tt := range []struct {
		name  string
		advs  [][2]int
		ratio int
		want  int
	}{
		{"nothing advertised", nil, 8, 0},
		{"gpu only, no cpu room", [][2]int{{index.GPU: 80}}, 0, 100},
		{"gpu only, default room", [][2]int{{index.GPU: 80}}, 8, 900},
		{"advertised cpu wins over the ratio", [][2]int{{index.GPU: 80, index.CPU: 20}}, 8, 125},
		{"replicas summed, each by its own tier", [][2]int{{index.GPU: 80, index.CPU: 20}, {index.GPU: 40}}, 2, 125 + 150},
		{"negative ratio is none", [][2]int{{index.GPU: 80}}, -3, 100},
		{"negative advertised blocks count nothing", [][2]int{{index.GPU: -5, index.CPU: 8}}, 8, 10},
		{"huge advertised capacity is clamped", [][2]int{{index.GPU: 1 << 60}, {index.GPU: 1 << 60}}, 8, maxKeyCap},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := keyCap(tt.advs, tt.ratio); got != tt.want {
				t.Errorf("keyCap(%v, %d) = %d; want %d", tt.advs, tt.ratio, got, tt.want)
			}
		})
	}
}

// postOffloaded sends a driver snapshot holding gpu blocks on the GPU tier
// and cpu further blocks on the CPU tier for replica, as a driver does for
// an engine whose KV connector offloads to CPU.
func postOffloaded(t *testing.T, ingest, replica string, gpu, cpu int) error {
	t.Helper()
	keys := make([]uint64, gpu+cpu)
	for i := range keys {
		keys[i] = uint64(i+1) * 0x9E3779B97F4A7C15
	}
	return kvwire.Send(context.Background(), http.DefaultClient, "http://"+ingest, "tok", &kvwire.Update{Version: kvwire.Version, Driver: "n", Epoch: 1, Snapshot: true,
		Replicas: []kvwire.Replica{{ID: replica, Groups: []kvwire.Group{{Tier: kvwire.TierGPU, Add: keys[:gpu]}, {Tier: kvwire.TierCPU, Add: keys[gpu:]}}}}})
}

// TestOffloadedCPUTier: a replica whose engine advertises 8 GPU blocks and
// no CPU blocks (vLLM with a CPU-offloading KV connector) holds 8 GPU and
// 40 CPU blocks. With the default index_cpu_ratio the model's cap makes
// room for them, the replica is not refused and no tier raises the
// oversize alarm; with index_cpu_ratio 0 the cap is the GPU blocks' alone
// and the replica is refused, so the bound still holds.
func TestOffloadedCPUTier(t *testing.T) {
	for _, tt := range []struct {
		name    string
		ratio   int
		cap     int
		refused bool
	}{
		{"default ratio", 8, 90, false},
		{"no cpu room", 0, 10, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := testConfig()
			c.Replicas[0].Address = fakeReplica(t, 8)
			c.ScrapeInterval = 20 * time.Millisecond
			c.Index.CPURatio = tt.ratio
			s, err := Start(context.Background(), c, hclog.NewNullLogger())
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			waitMetrics(t, s.AdminAddr(), fmt.Sprintf(`llmgw_index_max_keys{model="m"} %d`, tt.cap))

			err = postOffloaded(t, s.IngestAddr(), "a/1", 8, 40)
			if tt.refused {
				if err == nil || !strings.Contains(err.Error(), "index holds its maximum number of keys") {
					t.Fatalf("snapshot beyond the cap: %v; want the replica refused at the key cap", err)
				}
				waitMetrics(t, s.AdminAddr(), `llmgw_replica_kv_refused{model="m",replica="a/1"} 1`)
				return
			}
			if err != nil {
				t.Fatalf("snapshot within the cap: %v", err)
			}
			waitMetrics(t, s.AdminAddr(),
				`llmgw_replica_info{healthy="true",mode="exact",model="m",replica="a/1"} 1`,
				`llmgw_replica_index_blocks{model="m",replica="a/1",tier="gpu"} 8`,
				`llmgw_replica_index_blocks{model="m",replica="a/1",tier="cpu"} 40`,
				`llmgw_index_rejected_total{model="m"} 0`)
			s.capacity.check() // the state is in: this check sees it
			for _, tier := range []index.Tier{index.GPU, index.CPU} {
				if s.capacity.Oversized("a/1", tier) {
					t.Errorf("tier %s raised the oversize alarm", tier)
				}
			}
			if n := s.capacity.Repairs("a/1"); n != 0 {
				t.Errorf("%d snapshots asked for a/1; want none", n)
			}
		})
	}
}
