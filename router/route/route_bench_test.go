package route

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/llmgw/llmgw/internal/blockkey"
	"github.com/llmgw/llmgw/internal/kvwire"
	"github.com/llmgw/llmgw/router/index"
	"github.com/llmgw/llmgw/router/ingest"
	"github.com/llmgw/llmgw/router/kvgroups"
	"github.com/llmgw/llmgw/router/load"
	"github.com/llmgw/llmgw/router/replicas"
	"github.com/llmgw/llmgw/router/scheduler"
)

// BenchmarkRouteDecision measures the router's per-request decision as the
// planner runs it, after tokenization: hash an 8k-token prompt into 512
// block keys, build the candidates from the replica set (mode, health,
// load), then look up and score with the default scheduler, over 64
// replicas and 1,000,000 indexed blocks. p99-µs is the 99th percentile of
// single decisions. Run it with -cpu 1 (the target is for one core).
//
// "first": the prompt is new to the router's routing history (the same
// prompt every time, so its index slots stay in the core's caches);
// "repeat": it was just routed, so the prefix scorer also walks its
// speculative credit (Routed runs after each decision, outside the
// timing); "rotate": 64 different prompts in turn, each cached the same
// way, so a decision reads slots the 63 before it pushed out of the
// core's own caches, as a router does whose prompts were last seen
// seconds ago.
//
// Each case runs twice on one fleet: "index" with the scheduler reading
// router/index.Models directly, as before KV-cache groups, and "kvgroups"
// through router/kvgroups.Index (the engine's rule over hybrid replicas'
// groups) with every replica full-attention only, as the server runs it:
// the cost of the hybrid support to a fleet that does not use it.
func BenchmarkRouteDecision(b *testing.B) {
	cases := []struct {
		name    string
		prompts int
		repeat  bool
	}{{"first", 1, false}, {"repeat", 1, true}, {"rotate", 64, false}}
	fleets := map[int]*routeBench{}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			rb := fleets[c.prompts]
			if rb == nil {
				rb = newRouteBench(b, c.prompts)
				fleets[c.prompts] = rb
			}
			for _, ix := range []string{"index", "kvgroups"} {
				b.Run(ix, func(b *testing.B) { rb.withIndex(ix).decide(b, c.repeat) })
			}
		})
	}
}

// decide runs BenchmarkRouteDecision's loop over rb's prompts in turn.
func (rb *routeBench) decide(b *testing.B, repeat bool) {
	ctx := context.Background()
	// The loop reuses its buffers, as the planner reuses a pooled plan:
	// keys, the scheduler's Request (and its scratch) and the candidates.
	blocks := routeTokens / routeBlockSize
	buf := make([]blockkey.Key, 0, blocks)
	keyBuf := make([]uint64, blocks)
	var req scheduler.Request
	var cands []scheduler.Candidate
	var chosen scheduler.Candidate // outside the loop: Routed's pointer escapes
	lat := make([]float64, 0, 1<<16)
	cpu := make([]float64, 0, 1<<16)
	runtime.LockOSThread() // thread CPU time is per OS thread
	defer runtime.UnlockOSThread()
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		ids := rb.prompts[n%len(rb.prompts)]
		n++
		cpuStart := threadCPU(b)
		start := time.Now()
		buf = blockkey.PromptKeys(buf[:0], "", "", ids, routeBlockSize)
		for i, k := range buf {
			keyBuf[i] = uint64(k)
		}
		req.Reset(scheduler.Request{Model: "m", Keys: keyBuf, BlockTokens: routeBlockSize, PromptTokens: routeTokens, Fallbacks: routeFallbacks})
		cands = rb.set.AppendCandidates(cands[:0], "m")
		d, err := rb.sched.Schedule(ctx, &req, cands)
		if err != nil || d.Chosen.CachedBlocks != blocks {
			b.Fatalf("decision %+v, %v; want the replica holding the whole prompt", d.Chosen, err)
		}
		lat = append(lat, float64(time.Since(start).Nanoseconds())/1e3)
		cpu = append(cpu, float64(threadCPU(b)-cpuStart)/1e3)
		if repeat {
			chosen = d.Chosen.Candidate
			rb.sched.Routed(&req, &chosen)
		}
	}
	reportPercentiles(b, lat, "")
	reportPercentiles(b, cpu, "cpu-")
}

// BenchmarkRouteStages splits BenchmarkRouteDecision's "first" case into
// its stages, timed separately in each decision, to show where the time
// goes: hash (the prompt's 512 keys), candidates (the replica set's
// AppendCandidates) and schedule (index walk, scorers, picker).
func BenchmarkRouteStages(b *testing.B) {
	rb := newRouteBench(b, 1)
	ctx := context.Background()
	buf := make([]blockkey.Key, 0, routeTokens/routeBlockSize)
	keyBuf := make([]uint64, routeTokens/routeBlockSize)
	var req scheduler.Request
	var cands []scheduler.Candidate
	stages := []string{"hash", "candidates", "schedule"}
	lat := make([][]float64, len(stages))
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	for b.Loop() {
		t0 := time.Now()
		buf = blockkey.PromptKeys(buf[:0], "", "", rb.prompts[0], routeBlockSize)
		for i, k := range buf {
			keyBuf[i] = uint64(k)
		}
		t1 := time.Now()
		cands = rb.set.AppendCandidates(cands[:0], "m")
		t2 := time.Now()
		req.Reset(scheduler.Request{Model: "m", Keys: keyBuf, BlockTokens: routeBlockSize, PromptTokens: routeTokens, Fallbacks: routeFallbacks})
		if _, err := rb.sched.Schedule(ctx, &req, cands); err != nil {
			b.Fatal(err)
		}
		t3 := time.Now()
		for i, d := range []time.Duration{t1.Sub(t0), t2.Sub(t1), t3.Sub(t2)} {
			lat[i] = append(lat[i], float64(d.Nanoseconds())/1e3)
		}
	}
	for i, name := range stages {
		slices.Sort(lat[i])
		b.ReportMetric(lat[i][len(lat[i])/2], name+"-p50-µs")
	}
}

// routeBench is BenchmarkRouteDecision's fleet: 64 replicas of model "m"
// in exact mode over 1,000,000 indexed blocks, replica r holding the first
// (r+1)/64 of each prompt's blocks, and the default scheduler.
type routeBench struct {
	prompts [][]uint32 // their tokens
	set     *replicas.Set
	sched   *scheduler.Scheduler
	// groupsSched is sched over router/kvgroups.Index (see withIndex).
	groupsSched *scheduler.Scheduler
}

// The prompt's size and the fleet's block size.
const routeTokens, routeBlockSize = 8 * 1024, 16

// routeFallbacks is what the planner asks the scheduler to rank besides
// its choice with the default three attempts.
const routeFallbacks = 3 - 1 + fallbackSpare

func newRouteBench(b *testing.B, prompts int) *routeBench {
	const nReplicas, keys = 64, 1_000_000
	rng := rand.New(rand.NewPCG(3, 4))
	rb := &routeBench{}
	var promptKeys [][]blockkey.Key
	for range prompts {
		ids := make([]uint32, routeTokens)
		for i := range ids {
			ids[i] = rng.Uint32N(150_000)
		}
		rb.prompts = append(rb.prompts, ids)
		promptKeys = append(promptKeys, blockkey.PromptKeys(nil, "", "", ids, routeBlockSize))
	}
	models := index.NewModels(index.Options{})
	sink := ingest.New(models, ingest.Options{})
	tracker := load.NewTracker()
	rb.set = replicas.New(sink, tracker, replicas.Options{})
	var list []replicas.Replica
	for r := range nReplicas {
		list = append(list, replicas.Replica{ID: fmt.Sprintf("alloc-%02d/vllm", r), Model: "m", Address: "127.0.0.1:1", BlockSize: routeBlockSize})
	}
	rb.set.Replace(list)
	snap := &kvwire.Update{Version: kvwire.Version, Driver: "node", Epoch: 1, Snapshot: true}
	// Random blocks fill the index to 1,000,000 keys besides the prompts'.
	background := make([]uint64, (keys-prompts*len(promptKeys[0]))/nReplicas)
	for r, rep := range list {
		for i := range background {
			background[i] = rng.Uint64()
		}
		add := append([]uint64(nil), background...)
		for _, pk := range promptKeys {
			for _, k := range pk[:len(pk)*(r+1)/nReplicas] {
				add = append(add, uint64(k))
			}
		}
		snap.Replicas = append(snap.Replicas, kvwire.Replica{ID: rep.ID, Groups: []kvwire.Group{{Tier: kvwire.TierGPU, Add: add}}})
	}
	sink.ApplyUpdate(snap) // through the ingest, so every replica is in exact mode
	if st := sink.Stats(); st.Errors != 0 {
		b.Fatalf("ingest errors: %+v", st)
	}
	if got := models.For("m").Stats().Keys; got < keys*99/100 || got > keys {
		b.Fatalf("index holds %d keys; want about %d", got, keys)
	}
	reg := scheduler.NewRegistry()
	if err := scheduler.RegisterBuiltins(reg); err != nil {
		b.Fatal(err)
	}
	var err error
	rb.sched, err = reg.Build(scheduler.DefaultConfig(), scheduler.Deps{Index: models, Rand: rand.NewPCG(1, 1)})
	if err != nil {
		b.Fatal(err)
	}
	groups := kvgroups.NewIndex(models, kvgroups.NewRegistry())
	if rb.groupsSched, err = reg.Build(scheduler.DefaultConfig(), scheduler.Deps{Index: groups, Rand: rand.NewPCG(1, 1)}); err != nil {
		b.Fatal(err)
	}
	return rb
}

// withIndex is rb deciding with the scheduler over router/index.Models
// ("index") or over router/kvgroups.Index ("kvgroups").
func (rb *routeBench) withIndex(name string) *routeBench {
	c := *rb
	if name == "kvgroups" {
		c.sched = rb.groupsSched
	}
	return &c
}

// BenchmarkHostJitter is the control for BenchmarkRouteDecision's
// percentiles: a fixed CPU-only loop with no memory traffic, at about half
// and about the decision's median cost. Its wall-clock p99 against its
// p50 is what the machine itself adds (preemption, a shared host's steal
// time); its thread-CPU p99 shows how much of that the CPU-time figures
// remove. Two lengths show whether the tail scales with the work (a
// slower core) or is a fixed cost that hits more samples the longer they
// run (interruptions).
func BenchmarkHostJitter(b *testing.B) {
	for _, n := range []int{10_000, 20_000} {
		b.Run(fmt.Sprintf("iters=%d", n), func(b *testing.B) {
			lat := make([]float64, 0, 1<<16)
			cpu := make([]float64, 0, 1<<16)
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			x := uint64(1)
			for b.Loop() {
				cpuStart := threadCPU(b)
				start := time.Now()
				for range n {
					x = x*6364136223846793005 + 1442695040888963407
				}
				lat = append(lat, float64(time.Since(start).Nanoseconds())/1e3)
				cpu = append(cpu, float64(threadCPU(b)-cpuStart)/1e3)
			}
			if x == 0 {
				b.Log(x) // keeps the loop from being optimised away
			}
			reportPercentiles(b, lat, "")
			reportPercentiles(b, cpu, "cpu-")
		})
	}
}

// threadCPU is the calling OS thread's CPU time in nanoseconds: time the
// thread ran, excluding time it waited for a core.
func threadCPU(b *testing.B) int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		b.Fatalf("thread CPU clock: %v", err)
	}
	return ts.Nano()
}

// reportPercentiles reports the p50 and p99 of samples (µs) as
// <prefix>p50-µs and <prefix>p99-µs.
func reportPercentiles(b *testing.B, samples []float64, prefix string) {
	slices.Sort(samples)
	b.ReportMetric(samples[len(samples)/2], prefix+"p50-µs")
	b.ReportMetric(samples[len(samples)*99/100], prefix+"p99-µs")
}
