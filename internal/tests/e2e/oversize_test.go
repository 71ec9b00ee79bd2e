package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/llmgw/llmgw/internal/kvwire"
	"github.com/llmgw/llmgw/internal/testkit/poll"
)

// lockedLog collects the router's log lines and passes them to the test log.
type lockedLog struct {
	t  *testing.T
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	l.b.Write(p)
	l.mu.Unlock()
	return testWriter{l.t}.Write(p)
}

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestOversizeAlarmWithSim runs a vllm-sim replica advertising only 16 GPU
// blocks (--num-gpu-blocks-override) beside a large one. A driver whose
// state for the small replica missed removals (a snapshot of 40 blocks)
// makes the router raise llmgw_replica_index_oversized and log a warning;
// a snapshot within capacity clears the alarm.
func TestOversizeAlarmWithSim(t *testing.T) {
	if testing.Short() {
		t.Skip("starts vllm-sim processes")
	}
	r, logs := smallAndLarge(t)
	send := func(epoch uint64, blocks int) {
		t.Helper()
		keys := make([]uint64, blocks)
		for i := range keys {
			keys[i] = uint64(i+1) * 0x9E3779B97F4A7C15
		}
		err := kvwire.Send(context.Background(), http.DefaultClient, "http://"+r.IngestAddr(), token, &kvwire.Update{
			Version: kvwire.Version, Driver: "node-1", Epoch: epoch, Snapshot: true,
			Replicas: []kvwire.Replica{{ID: "small/main", Groups: []kvwire.Group{{Tier: kvwire.TierGPU, Add: keys}}}},
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	gauge := func(v int) string {
		return fmt.Sprintf(`llmgw_replica_index_oversized{model=%q,replica="small/main",tier="gpu"} %d`, model, v)
	}
	poll.Until(t, "the small replica's advertised capacity", func() bool {
		return strings.Contains(metricsText(t, r), fmt.Sprintf(`llmgw_replica_kv_capacity_blocks{model=%q,replica="small/main",tier="gpu"} 16`, model))
	})
	send(1, 12)
	poll.Until(t, "12 indexed blocks, no alarm", func() bool {
		m := metricsText(t, r)
		return strings.Contains(m, `replica="small/main",tier="gpu"} 12`) && strings.Contains(m, gauge(0))
	})
	send(2, 40)
	poll.Until(t, "the oversize alarm", func() bool { return strings.Contains(metricsText(t, r), gauge(1)) })
	if l := logs.String(); !strings.Contains(l, "exceeds its advertised KV capacity") || !strings.Contains(l, "capacity_blocks=16") || !strings.Contains(l, "indexed_blocks=40") {
		t.Errorf("no warning naming 40 indexed and 16 advertised blocks; log:\n%s", l)
	}
	send(3, 8)
	poll.Until(t, "the alarm to clear", func() bool { return strings.Contains(metricsText(t, r), gauge(0)) })
	// The router still routes while it alarms.
	if a := call(t, r.Addr(), "/v1/completions", completion("hello there", false)); a.code != 200 {
		t.Errorf("request: %d %s", a.code, a.body)
	}
}
