package route

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/llmgw/llmgw/internal/blockkey"
	"github.com/llmgw/llmgw/internal/kvwire"
	"github.com/llmgw/llmgw/router/index"
	"github.com/llmgw/llmgw/router/ingest"
	"github.com/llmgw/llmgw/router/load"
	"github.com/llmgw/llmgw/router/replicas"
	"github.com/llmgw/llmgw/router/scheduler"
)

// BenchmarkRouteFleet is BenchmarkRouteDecision's "first" case at fleet
// scale: an 8k-token prompt held by 64 replicas (holder j the first
// (j+1)/64 of it), among 64 replicas or among 4,096 with the holders
// spread one per index page (every 64th replica), 1,000,000 indexed
// blocks, every odd replica but the whole prompt's holder with a request
// in flight. "narrow" decides
// as the planner does (replicas.Set.AppendCandidatesFor: the holders and
// a sample from 256 replicas); "full" scores every replica, as before
// the narrowing. "shared-prefix" adds a fleet-wide system prompt: every
// replica also holds the prompt's first 64 blocks (1,024 tokens), so
// block 0's holders are the whole fleet and the narrowed list is capped
// (replicas.DefaultHolderCap). cands-p50 and sched-p50 are the medians
// of the candidates' and the schedule's part of each decision (the rest
// is the hash). Run it with -cpu 1.
func BenchmarkRouteFleet(b *testing.B) {
	for _, c := range []struct {
		n      int
		shared int
		name   string
	}{{64, 0, "replicas=64"}, {4096, 0, "replicas=4096"}, {4096, 64, "replicas=4096/shared-prefix"}} {
		var fb *fleetBench
		for _, mode := range []string{"narrow", "full"} {
			b.Run(c.name+"/"+mode, func(b *testing.B) {
				if fb == nil {
					fb = newFleetBench(b, c.n, c.shared)
				}
				fb.decide(b, mode == "narrow")
			})
		}
	}
}

type fleetBench struct {
	prompt []uint32
	set    *replicas.Set
	sched  *scheduler.Scheduler
}

// newFleetBench builds the fleet; every replica holds the first shared
// blocks of the prompt besides its own.
func newFleetBench(b *testing.B, nReplicas, shared int) *fleetBench {
	const holders, keys = 64, 1_000_000
	rng := rand.New(rand.NewPCG(5, 6))
	fb := &fleetBench{prompt: make([]uint32, routeTokens)}
	for i := range fb.prompt {
		fb.prompt[i] = rng.Uint32N(150_000)
	}
	pk := blockkey.PromptKeys(nil, "", "", fb.prompt, routeBlockSize)
	models := index.NewModels(index.Options{})
	sink := ingest.New(models, ingest.Options{})
	tracker := load.NewTracker()
	fb.set = replicas.New(sink, tracker, replicas.Options{Holders: models})
	list := make([]replicas.Replica, nReplicas)
	for r := range list {
		list[r] = replicas.Replica{ID: fmt.Sprintf("alloc-%04d/vllm", r), Model: "m", Address: "127.0.0.1:1", BlockSize: routeBlockSize}
	}
	fb.set.Replace(list)
	snap := &kvwire.Update{Version: kvwire.Version, Driver: "node", Epoch: 1, Snapshot: true}
	per := (keys - len(pk)) / nReplicas
	spread := nReplicas / holders
	for r, rep := range list {
		add := make([]uint64, per, per+len(pk))
		for i := range add {
			add[i] = rng.Uint64()
		}
		depth := shared
		if r%spread == 0 {
			depth = max(depth, len(pk)*(r/spread+1)/holders)
		}
		for _, k := range pk[:depth] {
			add = append(add, uint64(k))
		}
		snap.Replicas = append(snap.Replicas, kvwire.Replica{ID: rep.ID, Groups: []kvwire.Group{{Tier: kvwire.TierGPU, Add: add}}})
		if r%2 == 1 && r != (holders-1)*spread {
			tracker.Begin(rep.ID, 1000+r)
		}
	}
	sink.ApplyUpdate(snap)
	if st := sink.Stats(); st.Errors != 0 {
		b.Fatalf("ingest errors: %+v", st)
	}
	reg := scheduler.NewRegistry()
	if err := scheduler.RegisterBuiltins(reg); err != nil {
		b.Fatal(err)
	}
	var err error
	if fb.sched, err = reg.Build(scheduler.DefaultConfig(), scheduler.Deps{Index: models, Rand: rand.NewPCG(1, 1)}); err != nil {
		b.Fatal(err)
	}
	return fb
}

func (fb *fleetBench) decide(b *testing.B, narrow bool) {
	ctx := context.Background()
	blocks := routeTokens / routeBlockSize
	buf := make([]blockkey.Key, 0, blocks)
	keyBuf := make([]uint64, blocks)
	var req scheduler.Request
	var cands []scheduler.Candidate
	lat := make([]float64, 0, 1<<16)
	cpu := make([]float64, 0, 1<<16)
	candLat := make([]float64, 0, 1<<16) // the candidates' and the schedule's part of lat
	schedLat := make([]float64, 0, 1<<16)
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	b.ReportAllocs()
	for b.Loop() {
		cpuStart := threadCPU(b)
		start := time.Now()
		buf = blockkey.PromptKeys(buf[:0], "", "", fb.prompt, routeBlockSize)
		for i, k := range buf {
			keyBuf[i] = uint64(k)
		}
		req.Reset(scheduler.Request{Model: "m", Keys: keyBuf, BlockTokens: routeBlockSize, PromptTokens: routeTokens, Fallbacks: routeFallbacks})
		t1 := time.Now()
		if narrow {
			cands = fb.set.AppendCandidatesFor(cands[:0], "m", &req)
		} else {
			cands = fb.set.AppendCandidates(cands[:0], "m")
		}
		t2 := time.Now()
		d, err := fb.sched.Schedule(ctx, &req, cands)
		if err != nil || d.Chosen.CachedBlocks != blocks {
			b.Fatalf("decision %+v, %v; want the replica holding the whole prompt", d.Chosen, err)
		}
		t3 := time.Now()
		lat = append(lat, float64(t3.Sub(start).Nanoseconds())/1e3)
		candLat = append(candLat, float64(t2.Sub(t1).Nanoseconds())/1e3)
		schedLat = append(schedLat, float64(t3.Sub(t2).Nanoseconds())/1e3)
		cpu = append(cpu, float64(threadCPU(b)-cpuStart)/1e3)
	}
	reportPercentiles(b, lat, "")
	reportPercentiles(b, cpu, "cpu-")
	for _, st := range []struct {
		name string
		lat  []float64
	}{{"cands", candLat}, {"sched", schedLat}} {
		slices.Sort(st.lat)
		b.ReportMetric(st.lat[len(st.lat)/2], st.name+"-p50-µs")
	}
}
