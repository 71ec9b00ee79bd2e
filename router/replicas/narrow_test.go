package replicas

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/llmgw/llmgw/internal/kvwire"
	"github.com/llmgw/llmgw/router/index"
	"github.com/llmgw/llmgw/router/ingest"
	"github.com/llmgw/llmgw/router/load"
	"github.com/llmgw/llmgw/router/scheduler"
)

// narrowFleet is n replicas of model "m" in exact mode over a real index,
// load tracker and default scheduler; holders[i] caches the first
// depths[i] blocks of prompt, every other replica a block of its own.
type narrowFleet struct {
	set     *Set
	tracker *load.Tracker
	models  *index.Models
	ids     []string
	holders map[string]int // id -> depth
	prompt  []uint64
}

func newNarrowFleet(t *testing.T, rng *rand.Rand, n int) *narrowFleet {
	t.Helper()
	f := &narrowFleet{models: index.NewModels(index.Options{}), tracker: load.NewTracker(), holders: map[string]int{}}
	sink := ingest.New(f.models, ingest.Options{})
	f.set = New(sink, f.tracker, Options{Holders: f.models})
	list := make([]Replica, n)
	for i := range list {
		id := fmt.Sprintf("alloc-%04d/vllm", i)
		f.ids = append(f.ids, id)
		list[i] = Replica{ID: id, Model: "m", BlockSize: 16}
	}
	f.set.Replace(list)
	f.prompt = make([]uint64, 8+rng.IntN(56))
	for i := range f.prompt {
		f.prompt[i] = rng.Uint64() | 1
	}
	for range 1 + rng.IntN(min(n, 40)) {
		f.holders[f.ids[rng.IntN(n)]] = 1 + rng.IntN(len(f.prompt))
	}
	u := &kvwire.Update{Version: kvwire.Version, Driver: "d", Epoch: 1, Seq: 1, Snapshot: true}
	for _, id := range f.ids {
		add := []uint64{rng.Uint64() | 1}
		if d, ok := f.holders[id]; ok {
			add = append(add, f.prompt[:d]...)
		}
		u.Replicas = append(u.Replicas, kvwire.Replica{ID: id, BlockSize: 16, Groups: []kvwire.Group{{Tier: kvwire.TierGPU, Add: add}}})
	}
	sink.ApplyUpdate(u)
	for _, id := range f.ids {
		if rng.IntN(3) > 0 {
			f.tracker.Begin(id, rng.IntN(4000))
			f.tracker.SetScraped(id, float64(rng.IntN(4)), float64(rng.IntN(8)), rng.Float64())
		}
	}
	return f
}

func (f *narrowFleet) scheduler(t *testing.T, seed uint64) *scheduler.Scheduler {
	t.Helper()
	reg := scheduler.NewRegistry()
	if err := scheduler.RegisterBuiltins(reg); err != nil {
		t.Fatal(err)
	}
	s, err := reg.Build(scheduler.DefaultConfig(), scheduler.Deps{Index: f.models, Rand: rand.NewPCG(seed, 2)})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func (f *narrowFleet) request() *scheduler.Request {
	return &scheduler.Request{Model: "m", Keys: f.prompt, BlockTokens: 16, PromptTokens: 16 * len(f.prompt), Fallbacks: 3}
}

// TestNarrowBelowThresholdIsExact: below NarrowFrom replicas the
// candidates are every replica's, as AppendCandidates gives them, and the
// decision is the full scoring's, on randomized fleets, loads and holders.
func TestNarrowBelowThresholdIsExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for c := range 30 {
		n := []int{1, 8, 64, DefaultNarrowFrom - 1}[c%4]
		f := newNarrowFleet(t, rng, n)
		full := f.set.AppendCandidates(nil, "m")
		got := f.set.AppendCandidatesFor(nil, "m", f.request())
		if !cmp.Equal(got, full) {
			t.Fatalf("case %d, %d replicas: narrowed candidates differ from all replicas':\n%s", c, n, cmp.Diff(full, got))
		}
		want, err := f.scheduler(t, uint64(c)).Schedule(context.Background(), f.request(), full)
		if err != nil {
			t.Fatal(err)
		}
		dec, err := f.scheduler(t, uint64(c)).Schedule(context.Background(), f.request(), got)
		if err != nil {
			t.Fatal(err)
		}
		if dec.Chosen.Candidate.ID != want.Chosen.Candidate.ID || dec.Chosen.Total != want.Chosen.Total {
			t.Errorf("case %d, %d replicas: chose %s (%g); full scoring chose %s (%g)", c, n,
				dec.Chosen.Candidate.ID, dec.Chosen.Total, want.Chosen.Candidate.ID, want.Chosen.Total)
		}
	}
}

// TestNarrowAboveThreshold: from NarrowFrom replicas the candidates are
// exactly the prompt's holders plus Sample distinct others, in replica
// order, with the same health, mode and load full scoring sees; and the
// choice is never worse, by the scheduler's own totals, than the best
// holder nor than the least-loaded non-holder scored.
func TestNarrowAboveThreshold(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	for c := range 20 {
		n := DefaultNarrowFrom + rng.IntN(1200)
		f := newNarrowFleet(t, rng, n)
		full := f.set.AppendCandidates(nil, "m")
		byID := map[string]scheduler.Candidate{}
		for _, cd := range full {
			byID[cd.ID] = cd
		}
		got := f.set.AppendCandidatesFor(nil, "m", f.request())
		if want := len(f.holders) + DefaultSample; len(got) != want {
			t.Fatalf("case %d, %d replicas, %d holders: %d candidates; want %d", c, n, len(f.holders), len(got), want)
		}
		if !slices.IsSortedFunc(got, func(a, b scheduler.Candidate) int { return strings.Compare(a.ID, b.ID) }) {
			t.Errorf("case %d: candidates not in replica order", c)
		}
		seen := map[string]bool{}
		for _, cd := range got {
			if seen[cd.ID] {
				t.Fatalf("case %d: %s listed twice", c, cd.ID)
			}
			seen[cd.ID] = true
			if cd != byID[cd.ID] {
				t.Errorf("case %d: candidate %+v; full list has %+v", c, cd, byID[cd.ID])
			}
		}
		for id := range f.holders {
			if !seen[id] {
				t.Errorf("case %d: holder %s missing from the candidates", c, id)
			}
		}

		req := f.request()
		dec, err := f.scheduler(t, uint64(c)).Schedule(context.Background(), req, got)
		if err != nil {
			t.Fatal(err)
		}
		all := append([]scheduler.Ranked{dec.Chosen}, dec.Fallbacks...)
		bestHolder, leastLoaded, leastBusy := -1.0, -1.0, -1.0
		for _, r := range all {
			if _, ok := f.holders[r.Candidate.ID]; ok {
				bestHolder = max(bestHolder, r.Total)
				continue
			}
			if busy := 1 - dec.Score(r, "load"); leastBusy < 0 || busy < leastBusy {
				leastBusy, leastLoaded = busy, r.Total
			}
		}
		if dec.Chosen.Total < bestHolder || dec.Chosen.Total < leastLoaded {
			t.Errorf("case %d: chose %s scoring %g; best holder scores %g, least-loaded non-holder %g",
				c, dec.Chosen.Candidate.ID, dec.Chosen.Total, bestHolder, leastLoaded)
		}
		if _, ok := f.holders[dec.Chosen.Candidate.ID]; ok && dec.Chosen.CachedBlocks != f.holders[dec.Chosen.Candidate.ID] {
			t.Errorf("case %d: chosen holder %s predicted %d cached blocks; it holds %d",
				c, dec.Chosen.Candidate.ID, dec.Chosen.CachedBlocks, f.holders[dec.Chosen.Candidate.ID])
		}
	}
}

// TestNarrowAllocates: a reused candidate buffer is filled without
// allocating once the pool is warm.
func TestNarrowAllocates(t *testing.T) {
	if raceEnabled {
		t.Skip("allocation counts mean nothing under the race detector")
	}
	f := newNarrowFleet(t, rand.New(rand.NewPCG(3, 3)), 1000)
	req := f.request()
	buf := f.set.AppendCandidatesFor(nil, "m", req)
	if allocs := testing.AllocsPerRun(100, func() { buf = f.set.AppendCandidatesFor(buf[:0], "m", req) }); allocs > 0 {
		t.Errorf("AppendCandidatesFor into a buffer with room: %v allocations; want 0", allocs)
	}
}
