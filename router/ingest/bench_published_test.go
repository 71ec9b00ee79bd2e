package ingest

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/llmgw/llmgw/internal/kvwire"
	"github.com/llmgw/llmgw/router/index"
)

// BenchmarkSynced measures the request path's read of the published state:
// the replica set asks Synced for each candidate whenever the synced set's
// generation changes (router/replicas' modes), and Refused for a candidate
// in approx mode. The ids are the replica set's, "<alloc id>/<task>", and
// each lookup takes the next replica in turn, as a rebuild of a model's
// modes does; a tenth of the fleet is refused, so both answers are read.
// cpu-ns/op is the process's CPU time per lookup: on a shared machine it
// does not count the time other processes held the core.
func BenchmarkSynced(b *testing.B) {
	for _, n := range []int{64, 4096} {
		b.Run(fmt.Sprintf("replicas=%d", n), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(uint64(n), 2))
			ids := make([]string, n)
			maxKeys := 2 * n
			big := make([]uint64, maxKeys+1) // more than the index takes: refused
			for i := range big {
				big[i] = rng.Uint64()
			}
			snap := &kvwire.Update{Version: kvwire.Version, Driver: "node", Epoch: 1, Snapshot: true}
			for r := range ids {
				ids[r] = allocID(rng)
				keys := []uint64{rng.Uint64()}
				if r%10 == 9 {
					keys = big
				}
				snap.Replicas = append(snap.Replicas, kvwire.Replica{ID: ids[r], BlockSize: 16,
					Groups: []kvwire.Group{group(0, kvwire.TierGPU, keys)}})
			}
			s := NewSink(index.NewModels(index.Options{MaxKeys: maxKeys}), func(string) (string, bool) { return "m", true }, nil)
			s.ApplyUpdate(snap)
			synced := 0
			for _, id := range ids {
				if s.Synced(id) {
					synced++
				}
			}
			if synced == 0 || synced == n {
				b.Fatalf("%d of %d replicas synced; want some refused", synced, n)
			}
			b.ReportAllocs()
			got := 0
			cpu0 := processCPU(b)
			for i := 0; b.Loop(); i++ {
				id := ids[i%n]
				if s.Synced(id) {
					got++
				} else if _, refused := s.Refused(id); refused {
					got--
				}
			}
			b.ReportMetric((processCPU(b)-cpu0)*1e9/float64(b.N), "cpu-ns/op")
			if got == 0 {
				b.Fatal("no lookup answered")
			}
		})
	}
}

// allocID returns a replica id as the replica set names them: a Nomad
// allocation's UUID and the task.
func allocID(rng *rand.Rand) string {
	return fmt.Sprintf("%08x-%04x-%04x-%04x-%012x/vllm", rng.Uint32(), rng.Uint32()>>16,
		rng.Uint32()>>16, rng.Uint32()>>16, rng.Uint64()>>16)
}

// BenchmarkPublish measures publishing changes of the published state
// alone: each op, touched replicas (in turn over the fleet) turn refused
// or back, and publishSynced makes the new version. 8 of them is an
// update's refusals or joins; all of them a driver's snapshot after a
// restart, or a router's start. Reported per op and per replica changed.
func BenchmarkPublish(b *testing.B) {
	for _, c := range []struct{ replicas, touched int }{{64, 8}, {4096, 8}, {4096, 4096}} {
		b.Run(fmt.Sprintf("replicas=%d/touched=%d", c.replicas, c.touched), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(uint64(c.replicas), 3))
			ids := make([]string, c.replicas)
			snap := &kvwire.Update{Version: kvwire.Version, Driver: "node", Epoch: 1, Snapshot: true}
			for r := range ids {
				ids[r] = allocID(rng)
				snap.Replicas = append(snap.Replicas, kvwire.Replica{ID: ids[r], BlockSize: 16,
					Groups: []kvwire.Group{group(0, kvwire.TierGPU, []uint64{rng.Uint64()})}})
			}
			s := NewSink(index.NewModels(index.Options{}), func(string) (string, bool) { return "m", true }, nil)
			s.ApplyUpdate(snap)
			s.mu.Lock()
			defer s.mu.Unlock()
			next := 0
			b.ReportAllocs()
			cpu0 := processCPU(b)
			for b.Loop() {
				for range c.touched {
					id := ids[next]
					if s.refusals.byID[id] != nil {
						delete(s.refusals.byID, id)
					} else {
						s.refusals.byID[id] = &refusal{id: id, reason: "full"}
					}
					s.published.touch(id)
					next = (next + 1) % len(ids)
				}
				s.published.publish(s.stateOf)
			}
			b.ReportMetric((processCPU(b)-cpu0)*1e9/float64(b.N*c.touched), "cpu-ns/replica")
			for _, id := range ids {
				why, refused := s.Refused(id)
				if refused != (s.refusals.byID[id] != nil) || (refused && why != "full") {
					b.Fatalf("%s published refused %v (%q); want %v", id, refused, why, s.refusals.byID[id] != nil)
				}
			}
		})
	}
}
