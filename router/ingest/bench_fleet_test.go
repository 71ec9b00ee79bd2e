package ingest

import (
	"fmt"
	"math/rand/v2"
	"syscall"
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
//
// The refused and pending cases add replicas whose state the Sink keeps
// apart, which must not cost the busy replicas' updates either: 128
// refused for lack of room (each sent a snapshot larger than
// the index's key cap), or DefaultPendingReplicas not listed yet.
func BenchmarkDeltaUpdate(b *testing.B) {
	for _, c := range []struct{ replicas, refused, pending int }{
		{64, 0, 0}, {1024, 0, 0}, {4096, 0, 0},
		{1024, 128, 0}, {1024, 0, DefaultPendingReplicas},
	} {
		name := fmt.Sprintf("replicas=%d", c.replicas)
		if c.refused > 0 {
			name += fmt.Sprintf("/refused=%d", c.refused)
		}
		if c.pending > 0 {
			name += fmt.Sprintf("/pending=%d", c.pending)
		}
		b.Run(name, func(b *testing.B) { benchDeltas(b, c.replicas, c.refused, c.pending) })
	}
}

func benchDeltas(b *testing.B, n, refused, pending int) {
	const shards, batch = 8, 8
	maxKeys := n*(2+2*batch) + 2*shards*batch // room for the churn's peak
	rng := rand.New(rand.NewPCG(uint64(n), 1))
	ids := make([]string, n)
	snap := &kvwire.Update{Version: kvwire.Version, Driver: "node", Epoch: 1, Snapshot: true}
	for r := range ids {
		ids[r] = fmt.Sprintf("alloc-%04d/vllm", r)
		snap.Replicas = append(snap.Replicas, kvwire.Replica{ID: ids[r], BlockSize: 16,
			Groups: []kvwire.Group{group(0, kvwire.TierGPU, []uint64{rng.Uint64(), rng.Uint64()})}})
	}
	big := make([]uint64, maxKeys+1)
	for i := range big {
		big[i] = rng.Uint64()
	}
	for r := range refused {
		snap.Replicas = append(snap.Replicas, kvwire.Replica{ID: fmt.Sprintf("refused-%04d/vllm", r), BlockSize: 16,
			Groups: []kvwire.Group{group(0, kvwire.TierGPU, big)}})
	}
	for r := range pending {
		snap.Replicas = append(snap.Replicas, kvwire.Replica{ID: fmt.Sprintf("pending-%04d/vllm", r), BlockSize: 16,
			Groups: []kvwire.Group{group(0, kvwire.TierGPU, []uint64{rng.Uint64()})}})
	}
	listed := func(id string) bool { return id[0] != 'p' }
	s := NewSink(index.NewModels(index.Options{MaxKeys: maxKeys}), func(id string) (string, bool) { return "m", listed(id) }, nil)
	s.ApplyUpdate(snap)
	if st := s.Stats(); st.RefusedNow != refused || st.Pending != pending || st.Errors != 0 {
		b.Fatalf("fleet of %d: %d refused, %d pending, %d errors; want %d refused, %d pending",
			n, st.RefusedNow, st.Pending, st.Errors, refused, pending)
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
	cpu0 := processCPU(b)
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		// Replaying the updates keeps each replica at its two keys and at
		// most 16 of the churn's (2 batches), within the key cap.
		u := updates[i%len(updates)]
		s.ApplyUpdate(u)
		for _, r := range u.Replicas {
			events += len(r.Groups[0].Add) + len(r.Groups[0].Del)
		}
	}
	b.ReportMetric(float64(events)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(events)/(processCPU(b)-cpu0), "events/cpu-s")
	if st := s.Stats(); !s.Synced(ids[n-1]) || st.RefusedNow != refused || st.Errors != 0 {
		b.Fatalf("after the deltas: last replica synced %v, %d refused (want %d), %d errors", s.Synced(ids[n-1]), st.RefusedNow, refused, st.Errors)
	}
}

// processCPU is the CPU seconds the process has used (user and system, GC
// included): on a shared machine, events per CPU-second do not count the
// time other processes held the core.
func processCPU(b *testing.B) float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatalf("getrusage: %v", err)
	}
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}
