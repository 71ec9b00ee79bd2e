package ingest

import (
	"strconv"
	"testing"

	"github.com/llmgw/llmgw/internal/kvwire"
	"github.com/llmgw/llmgw/router/index"
)

// BenchmarkKeepAndAdopt measures the cost of state that arrives before its
// replica: a driver snapshot of one replica's 100,000 blocks kept while the
// replica is unknown, then moved into the index when it joins. Reported as
// keys per second over both steps.
func BenchmarkKeepAndAdopt(b *testing.B) {
	const blocks = 100_000
	keys := make([]uint64, blocks)
	for i := range keys {
		keys[i] = uint64(i+1) * 0x9E3779B97F4A7C15
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		id := "r/" + strconv.Itoa(i)
		known := false
		s := NewSink(index.NewModels(index.Options{}), func(string) (string, bool) { return "m", known }, nil)
		s.ApplyUpdate(&kvwire.Update{Driver: "d", Epoch: 1, Snapshot: true,
			Replicas: []kvwire.Replica{{ID: id, Groups: []kvwire.Group{{Tier: kvwire.TierGPU, Add: keys}}}}})
		known = true
		s.Joined(Member{ID: id, Model: "m"})
		if !s.Synced(id) {
			b.Fatal("not adopted")
		}
	}
	b.ReportMetric(float64(blocks)*float64(b.N)/b.Elapsed().Seconds(), "keys/s")
}
