package gateway

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/llmgw/llmgw/internal/blockkey"
	"github.com/llmgw/llmgw/internal/kvwire"
	"github.com/llmgw/llmgw/router/index"
	"github.com/llmgw/llmgw/router/ingest"
	"github.com/llmgw/llmgw/router/replicas"
	"github.com/llmgw/llmgw/router/scheduler"
)

// BenchmarkRouteDecision measures the router's per-request decision as the
// gateway runs it, after tokenization: hash an 8k-token prompt into 512
// block keys, build the candidates from the replica set (mode, health,
// load), then look up and score with the default scheduler, over 64
// replicas and 1,000,000 indexed blocks. p99-µs is the 99th percentile of
// single decisions. Run it with -cpu 1 (the target is for one core).
func BenchmarkRouteDecision(b *testing.B) {
	const nReplicas, tokens, keys, blockSize = 64, 8 * 1024, 1_000_000, 16
	rng := rand.New(rand.NewPCG(3, 4))
	ids := make([]uint32, tokens)
	for i := range ids {
		ids[i] = rng.Uint32N(150_000)
	}
	promptKeys := blockkey.PromptKeys(nil, "", "", ids, blockSize)
	models := index.NewModels(index.Options{})
	var set *replicas.Set
	sink := ingest.NewSink(models, func(id string) (string, bool) { return set.ModelOf(id) }, nil)
	tracker := scheduler.NewTracker()
	set = replicas.New(sink, tracker, replicas.Options{})
	var list []replicas.Replica
	for r := range nReplicas {
		list = append(list, replicas.Replica{ID: fmt.Sprintf("alloc-%02d/vllm", r), Model: "m", Address: "127.0.0.1:1", BlockSize: blockSize})
	}
	set.Replace(list)
	snap := &kvwire.Update{Version: kvwire.Version, Driver: "node", Epoch: 1, Snapshot: true}
	background := make([]uint64, keys/nReplicas)
	for r, rep := range list {
		for i := range background {
			background[i] = rng.Uint64()
		}
		depth := len(promptKeys) * (r + 1) / nReplicas
		prefix := make([]uint64, depth)
		for i := range prefix {
			prefix[i] = uint64(promptKeys[i])
		}
		add := append(append([]uint64(nil), background...), prefix...)
		snap.Replicas = append(snap.Replicas, kvwire.Replica{ID: rep.ID, Groups: []kvwire.Group{{Tier: kvwire.TierGPU, Add: add}}})
	}
	sink.ApplyUpdate(snap) // through the ingest, so every replica is in exact mode
	if st := sink.Stats(); st.Errors != 0 {
		b.Fatalf("ingest errors: %+v", st)
	}
	reg := scheduler.NewRegistry()
	if err := scheduler.RegisterBuiltins(reg); err != nil {
		b.Fatal(err)
	}
	sched, err := reg.Build(scheduler.DefaultConfig(), scheduler.Deps{Index: models, Rand: rand.NewPCG(1, 1)})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	// The loop reuses its buffers, as the gateway reuses a pooled plan:
	// keys, the scheduler's Request (and its scratch) and the candidates.
	buf := make([]blockkey.Key, 0, len(promptKeys))
	keyBuf := make([]uint64, len(promptKeys))
	var req scheduler.Request
	var cands []scheduler.Candidate
	var chosen scheduler.Candidate // outside the loop: Routed's pointer escapes
	// "first": the prompt is new to the router's routing history; "repeat":
	// it was just routed, so the prefix scorer also walks its speculative
	// credit (Routed runs after each decision, outside the timing).
	for _, repeat := range []bool{false, true} {
		b.Run(map[bool]string{false: "first", true: "repeat"}[repeat], func(b *testing.B) {
			lat := make([]float64, 0, 1<<16)
			b.ReportAllocs()
			for b.Loop() {
				start := time.Now()
				buf = blockkey.PromptKeys(buf[:0], "", "", ids, blockSize)
				for i, k := range buf {
					keyBuf[i] = uint64(k)
				}
				req.Reset(scheduler.Request{Model: "m", Keys: keyBuf, BlockTokens: blockSize, PromptTokens: tokens})
				cands = set.AppendCandidates(cands[:0], "m")
				d, err := sched.Schedule(ctx, &req, cands)
				if err != nil || d.Chosen.CachedBlocks != len(promptKeys) {
					b.Fatalf("decision %+v, %v; want the replica holding the whole prompt", d.Chosen, err)
				}
				lat = append(lat, float64(time.Since(start).Nanoseconds())/1e3)
				if repeat {
					chosen = d.Chosen.Candidate
					sched.Routed(&req, &chosen)
				}
			}
			slices.Sort(lat)
			b.ReportMetric(lat[len(lat)/2], "p50-µs")
			b.ReportMetric(lat[len(lat)*99/100], "p99-µs")
		})
	}
}
