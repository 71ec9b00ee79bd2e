package kvgroups

import (
	"fmt"
	"slices"
	"testing"

	"github.com/llmgw/llmgw/internal/kvwire"
	"github.com/llmgw/llmgw/router/index"
)

// held builds a replica's state: per group, the block positions held.
type held map[int][]int

func keysOf(n int) []uint64 {
	k := make([]uint64, n)
	for i := range k {
		k[i] = uint64(1000 + i)
	}
	return k
}

func load(t *testing.T, ms *index.Models, reg *Registry, replica, layout string, keys []uint64, h held) {
	t.Helper()
	l, err := ParseLayout(layout, 16)
	if err != nil {
		t.Fatal(err)
	}
	reg.FromEvents(replica, l.Groups, 16)
	for g, pos := range h {
		var ks []uint64
		for _, p := range pos {
			ks = append(ks, keys[p])
		}
		if err := ms.For(IndexName("m", g, l.Primary())).Replace(replica, []index.Blocks{{Tier: index.GPU, Keys: ks}}); err != nil {
			t.Fatal(err)
		}
	}
}

func span(from, to int) []int {
	var out []int
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

// Each case follows vLLM's coordinator on the blocks held; windows are
// in tokens with 16-token blocks (a 33-token window needs 2 blocks).
func TestHitRule(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		layout string
		h      held
		max    int
		want   int
	}{
		{"full only", "full", held{0: span(0, 6)}, 10, 6},
		{"window holds its last blocks", "full,sliding_window:33", held{0: span(0, 8), 1: span(5, 8)}, 10, 8},
		{"window ends earlier", "full,sliding_window:33", held{0: span(0, 8), 1: {2, 3, 7}}, 10, 4},
		{"window run from block 0", "full,sliding_window:64", held{0: span(0, 8), 1: {0, 1, 5}}, 10, 2},
		{"window nothing", "full,sliding_window:33", held{0: span(0, 8), 1: {3, 5}}, 10, 0},
		{"sliding window evicted the middle", "full,sliding_window:17", held{0: span(0, 8), 1: {7}}, 10, 8},
		{"mamba at the end", "full,mamba", held{0: span(0, 8), 1: {7}}, 10, 8},
		{"mamba earlier", "full,mamba", held{0: span(0, 8), 1: {3}}, 10, 4},
		{"mamba past the full hit", "full,mamba", held{0: span(0, 4), 1: {7}}, 10, 0},
		{"cap", "full,mamba", held{0: span(0, 8), 1: {3, 7}}, 7, 4},
		{"full without a window", "full,sliding_window:33", held{1: span(0, 8)}, 10, 0},
		{"iterates", "full,sliding_window:33,mamba", held{0: span(0, 10), 1: {0, 1, 2, 3, 6, 8, 9}, 2: {3, 6}}, 10, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ms, reg := index.NewModels(index.Options{}), NewRegistry()
			x := NewIndex(ms, reg)
			keys := keysOf(10)
			load(t, ms, reg, "r", tc.layout, keys, tc.h)
			got := x.LookupReplicasMax("m", keys, 1, tc.max, []string{"r", "other"}, nil)
			if got[0].Blocks != tc.want || got[1].Blocks != 0 {
				t.Errorf("hit %d (other %d); want %d", got[0].Blocks, got[1].Blocks, tc.want)
			}
			m, parts := x.Explain("m", keys, tc.max, "r")
			if m.Blocks != tc.want {
				t.Errorf("Explain hit %d; want %d", m.Blocks, tc.want)
			}
			if (tc.layout == "full") != (parts == nil) {
				t.Errorf("parts %v for layout %s", parts, tc.layout)
			}
		})
	}
}

func TestIterationTrace(t *testing.T) {
	t.Parallel()
	ms, reg := index.NewModels(index.Options{}), NewRegistry()
	x := NewIndex(ms, reg)
	keys := keysOf(10)
	load(t, ms, reg, "r", "full,sliding_window:33,mamba", keys, held{0: span(0, 10), 1: {0, 1, 2, 3, 6, 8, 9}, 2: {3, 6}})
	_, parts := x.Explain("m", keys, 10, "r")
	want := []GroupHit{{Group: 0, Kind: "full", Blocks: 10}, {Group: 1, Kind: "sliding_window", Window: 33, Blocks: 4}, {Group: 2, Kind: "mamba", Blocks: 4}}
	if !slices.Equal(parts, want) {
		t.Errorf("parts %+v; want %+v", parts, want)
	}
}

func TestParseLayout(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in, want string
		bad      bool
	}{
		{in: "full", want: "full"},
		{in: "full, sliding_window:128", want: "full,sliding_window:128"},
		{in: "full,mamba", want: "full,mamba"},
		{in: "", bad: true},
		{in: "full,sliding_window", bad: true},
		{in: "full,sliding_window:0", bad: true},
		{in: "full,mamba:3", bad: true},
		{in: "linear", bad: true},
	} {
		l, err := ParseLayout(tc.in, 16)
		if tc.bad {
			if err == nil {
				t.Errorf("%q: accepted as %s", tc.in, l)
			}
			continue
		}
		if err != nil || l.String() != tc.want {
			t.Errorf("%q: %v, %v; want %s", tc.in, l, err, tc.want)
		}
	}
	if l, _ := ParseLayout("full", 16); l.Hybrid() {
		t.Error("a full-attention layout is hybrid")
	}
	if l, _ := ParseLayout("sliding_window:8,full", 16); !l.Hybrid() || l.Primary() != 1 {
		t.Errorf("primary %d; want the full group, 1", l.Primary())
	}
}

func TestRegistryEventsWin(t *testing.T) {
	t.Parallel()
	reg := NewRegistry()
	if reg.Any() {
		t.Fatal("empty registry has hybrid replicas")
	}
	d, _ := ParseLayout("full,mamba", 16)
	reg.Declare("r", d)
	if !reg.Of("r").Mamba() {
		t.Fatal("declared layout not in effect")
	}
	reg.FromEvents("r", []kvwire.KVGroupSpec{{Index: 0, Kind: kvwire.KindFull}}, 16)
	if reg.Of("r") != nil || reg.Any() {
		t.Error("events saying full attention only did not override the declaration")
	}
	reg.Forget("r")
	if !reg.Of("r").Mamba() {
		t.Error("declaration lost with the events")
	}
}

// naiveWindow is SlidingWindowManager.find_longest_cache_hit read block
// by block, as vLLM does.
func naiveWindow(held map[int]bool, maxBlocks, need int) int {
	run := 0
	for i := maxBlocks - 1; i >= 0; i-- {
		if !held[i] {
			run = 0
			continue
		}
		run++
		if run >= need {
			return i + run
		}
	}
	return run
}

// The windowed lookup gives vLLM's block-by-block answer on random
// holdings.
func TestWindowHitMatchesBlockByBlock(t *testing.T) {
	t.Parallel()
	rng := uint64(7)
	next := func(n int) int { rng = rng*6364136223846793005 + 1442695040888963407; return int(rng>>33) % n }
	for trial := range 300 {
		ms, reg := index.NewModels(index.Options{}), NewRegistry()
		x := NewIndex(ms, reg)
		keys := keysOf(40)
		window := 1 + next(100)
		layout := fmt.Sprintf("full,sliding_window:%d", window)
		h := map[int]bool{}
		var pos []int
		for i := range keys {
			if next(4) != 0 {
				h[i] = true
				pos = append(pos, i)
			}
		}
		load(t, ms, reg, "r", layout, keys, held{0: span(0, 40), 1: pos})
		maxBlocks := 1 + next(40)
		need := max((window-1+15)/16, 1)
		if got, want := x.LookupReplicasMax("m", keys, 1, maxBlocks, []string{"r"}, nil)[0].Blocks, naiveWindow(h, maxBlocks, need); got != want {
			t.Fatalf("trial %d: window %d max %d held %v: hit %d; want %d", trial, window, maxBlocks, pos, got, want)
		}
	}
}
