package replicas

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/llmgw/llmgw/internal/kvwire"
	"github.com/llmgw/llmgw/router/index"
	"github.com/llmgw/llmgw/router/ingest"
	"github.com/llmgw/llmgw/router/load"
	"github.com/llmgw/llmgw/router/scheduler"
)

// ladderFleet is a fleet of len(depths) replicas of model "m" over a real
// index, replica i caching the first depths[i] blocks of a 64-block
// prompt (and one block of its own).
func ladderFleet(t *testing.T, depths []int, opts Options) (*Set, []string, *scheduler.Request) {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(len(depths)), 1))
	models := index.NewModels(index.Options{})
	opts.Holders = models
	sink := ingest.New(models, ingest.Options{})
	set := New(sink, load.NewTracker(), opts)
	prompt := make([]uint64, 64)
	for i := range prompt {
		prompt[i] = rng.Uint64() | 1
	}
	ids := make([]string, len(depths))
	list := make([]Replica, len(depths))
	u := &kvwire.Update{Version: kvwire.Version, Driver: "d", Epoch: 1, Seq: 1, Snapshot: true}
	for i, d := range depths {
		ids[i] = fmt.Sprintf("alloc-%04d/vllm", i)
		list[i] = Replica{ID: ids[i], Model: "m", BlockSize: 16}
		add := append([]uint64{rng.Uint64() | 1}, prompt[:d]...)
		u.Replicas = append(u.Replicas, kvwire.Replica{ID: ids[i], BlockSize: 16, Groups: []kvwire.Group{{Tier: kvwire.TierGPU, Add: add}}})
	}
	set.Replace(list)
	sink.ApplyUpdate(u)
	if st := sink.Stats(); st.Errors != 0 {
		t.Fatalf("ingest errors: %+v", st)
	}
	return set, ids, &scheduler.Request{Model: "m", Keys: prompt, BlockTokens: 16, PromptTokens: 16 * len(prompt)}
}

// depthsOf is n replicas holding nothing of the prompt but those set.
func depthsOf(n int, set map[int]int) []int {
	d := make([]int, n)
	for i, v := range set {
		d[i] = v
	}
	return d
}

// TestNarrowHolderLadder: the narrowed list takes the holders of the
// shallowest block whose holders fit under the cap (all of block 0's when
// they fit), or a sample of the deepest block's when none fits, so no
// replica with a longer match than every candidate's is left out, and a
// prefix every replica holds costs the cap, not the fleet.
func TestNarrowHolderLadder(t *testing.T) {
	systemPrompt := func(n, blocks int, deeper map[int]int) []int {
		d := make([]int, n)
		for i := range d {
			d[i] = blocks
		}
		for i, v := range deeper {
			d[i] = v
		}
		return d
	}
	staggered := map[int]int{}
	for j := range 20 {
		staggered[17*j+3] = 9 + j*55/19 // 9 to 64 blocks
	}
	for _, tc := range []struct {
		name   string
		depths []int
		cap    int
		// want lists the replicas that must be candidates; size is the
		// candidates' count (holders taken + DefaultSample others).
		want []int
		size int
	}{
		{"fleet-wide prefix", systemPrompt(600, 8, staggered), 0, keys(staggered), 20 + DefaultSample},
		{"fleet-wide prefix, nothing deeper", systemPrompt(600, 8, nil), 0, nil, DefaultHolderCap + DefaultSample},
		{"no holder", depthsOf(400, nil), 0, nil, DefaultSample},
		{"few holders", depthsOf(400, map[int]int{5: 1, 50: 64, 399: 30}), 0, []int{5, 50, 399}, 3 + DefaultSample},
		{"staggered under a small cap", depthsOf(400, staggered), 8, deepest(staggered, 8), 8 + DefaultSample},
		{"many at the deepest block", systemPrompt(700, 64, nil), 0, nil, DefaultHolderCap + DefaultSample},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set, ids, req := ladderFleet(t, tc.depths, Options{HolderCap: tc.cap})
			got := set.AppendCandidatesFor(nil, "m", req)
			limit := tc.cap
			if limit == 0 {
				limit = DefaultHolderCap
			}
			if tc.size >= 0 && len(got) != tc.size {
				t.Errorf("%d candidates; want %d", len(got), tc.size)
			}
			if len(got) > limit+DefaultSample {
				t.Errorf("%d candidates; want at most the cap %d + %d", len(got), limit, DefaultSample)
			}
			in := map[string]bool{}
			best := 0
			for _, c := range got {
				in[c.ID] = true
				best = max(best, tc.depths[idIndex(t, ids, c.ID)])
			}
			for _, i := range tc.want {
				if !in[ids[i]] {
					t.Errorf("%s (%d blocks) is not a candidate", ids[i], tc.depths[i])
				}
			}
			// The bound: no replica left out matches longer than every
			// candidate.
			for i, d := range tc.depths {
				if d > best && !in[ids[i]] {
					t.Errorf("%s holds %d blocks, left out; the best candidate holds %d", ids[i], d, best)
				}
			}
		})
	}
}

// deepest is the k replicas of m holding the most blocks (none tied).
func deepest(m map[int]int, k int) []int {
	out := keys(m)
	slices.SortFunc(out, func(a, b int) int { return m[b] - m[a] })
	return out[:k]
}

func keys(m map[int]int) []int {
	var out []int
	for k := range m {
		out = append(out, k)
	}
	return out
}

func idIndex(t *testing.T, ids []string, id string) int {
	t.Helper()
	var i int
	if _, err := fmt.Sscanf(id, "alloc-%04d/vllm", &i); err != nil || ids[i] != id {
		t.Fatalf("candidate %q is no replica of the fleet", id)
	}
	return i
}

// TestNarrowCapSamplesFairly: when more replicas hold the deepest block
// than the cap takes, each of them is taken with the same chance, not the
// first by name or slot: over many decisions every one is taken, and the
// first half by name gets about half the places.
func TestNarrowCapSamplesFairly(t *testing.T) {
	const n, holding, trials = 700, 400, 40
	depths := make([]int, n)
	for i := range holding {
		depths[i] = 64
	}
	set, ids, req := ladderFleet(t, depths, Options{})
	taken := make([]int, holding)
	firstHalf, all := 0, 0
	var buf []scheduler.Candidate
	for range trials {
		buf = set.AppendCandidatesFor(buf[:0], "m", req)
		holders := 0
		for _, c := range buf {
			i := idIndex(t, ids, c.ID)
			if i >= holding {
				continue
			}
			holders++
			taken[i]++
			all++
			if i < holding/2 {
				firstHalf++
			}
		}
		if holders < DefaultHolderCap {
			t.Fatalf("%d of the deepest holders taken; want at least the cap %d", holders, DefaultHolderCap)
		}
	}
	for i, k := range taken {
		if k == 0 {
			t.Errorf("%s, a holder of the whole prompt, never taken in %d decisions", ids[i], trials)
		}
	}
	if share := float64(firstHalf) / float64(all); share < 0.4 || share > 0.6 {
		t.Errorf("the first half of the holders by name got %.2f of the places; want about 0.5", share)
	}
}
