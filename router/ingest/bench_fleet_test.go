package ingest

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/llmgw/llmgw/internal/kvwire"
	"github.com/llmgw/llmgw/router/index"
)

// BenchmarkDeltaUpdate measures a busy fleet's steady KV intake as the
// fleet grows: each update is one driver's 8 shards, each storing 8 blocks
// and removing the 8 it stored an update before, taken in turn over every
// replica (the growth sweep's ingest workload, without the wire decode).
// A batch's cost should follow its events, not the fleet: block events
// per second at 64 and at 4,096 replicas should stay about the same.
func BenchmarkDeltaUpdate(b *testing.B) {
	for _, n := range []int{64, 1024, 4096} {
		b.Run(fmt.Sprintf("replicas=%d", n), func(b *testing.B) {
			const shards, batch = 8, 8
			ids := make([]string, n)
			snap := &kvwire.Update{Version: kvwire.Version, Driver: "node", Epoch: 1, Snapshot: true}
			rng := rand.New(rand.NewPCG(uint64(n), 1))
			for r := range ids {
				ids[r] = fmt.Sprintf("alloc-%04d/vllm", r)
				snap.Replicas = append(snap.Replicas, kvwire.Replica{ID: ids[r], BlockSize: 16,
					Groups: []kvwire.Group{group(0, kvwire.TierGPU, []uint64{rng.Uint64(), rng.Uint64()})}})
			}
			s := NewSink(index.NewModels(index.Options{}), func(string) (string, bool) { return "m", true }, nil)
			s.ApplyUpdate(snap)
			if st := s.Stats(); st.RefusedNow != 0 || st.Errors != 0 {
				b.Fatalf("fleet of %d: %d refused, %d errors", n, st.RefusedNow, st.Errors)
			}
			// Prepare the updates up front: the loop measures the Sink alone.
			live := make([][]uint64, n)
			updates := make([]*kvwire.Update, 0, 2*n/shards+1)
			next := 0
			for seq := uint64(1); len(updates) < cap(updates); seq++ {
				u := &kvwire.Update{Version: kvwire.Version, Driver: "node", Epoch: 1, Seq: seq}
				for range min(shards, n) {
					add := make([]uint64, batch)
					for i := range add {
						add[i] = rng.Uint64()
					}
					u.Replicas = append(u.Replicas, kvwire.Replica{ID: ids[next], Groups: []kvwire.Group{group(0, kvwire.TierGPU, add, live[next]...)}})
					live[next] = add
					next = (next + 1) % n
				}
				updates = append(updates, u)
			}
			events := 0
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				// Replaying the same updates adds keys already held and
				// removes ones already gone: the same work for the Sink.
				u := updates[i%len(updates)]
				s.ApplyUpdate(u)
				for _, r := range u.Replicas {
					events += len(r.Groups[0].Add) + len(r.Groups[0].Del)
				}
			}
			b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
			if !s.Synced(ids[n-1]) {
				b.Fatal("last replica not synced")
			}
		})
	}
}
