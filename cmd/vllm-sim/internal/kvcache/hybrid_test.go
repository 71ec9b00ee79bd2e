package kvcache

import (
	"errors"
	"slices"
	"testing"
)

func newHybrid(t *testing.T, blocks int, groups string) *Pool {
	t.Helper()
	g, err := ParseGroups(groups)
	if err != nil {
		t.Fatal(err)
	}
	p, err := New(Config{NumBlocks: blocks, BlockSize: bs, HashSeed: "0", Groups: g})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// uncache drops group g's cached copy of s's block i, as if it had been
// evicted and reused.
func uncache(t *testing.T, p *Pool, s *Seq, g, i int) {
	t.Helper()
	b := p.firstCopy(s.hashes[i], g)
	if b == nil {
		t.Fatalf("group %d holds no block %d", g, i)
	}
	p.evict(b)
}

// TestHybridHitRule pins the hit length of vLLM's hybrid coordinator: a
// 20-token conversation (5 blocks) is cached, some of its blocks are then
// dropped from one group, and a longer prompt asks how much it may reuse.
func TestHybridHitRule(t *testing.T) {
	tests := []struct {
		name   string
		groups string
		prompt int // tokens of the follow-up that repeat the conversation
		drop   [][2]int
		want   int // cached tokens
	}{
		{"full only", "full", 20, nil, 20},
		{"full: a missing block ends the hit", "full", 20, [][2]int{{0, 3}}, 12},
		{"sliding window intact", "full,sliding_window:8", 20, nil, 20},
		// Window 8 needs the 2 blocks before the end (cdiv(8-1, 4)).
		{"window ending at block 3", "full,sliding_window:8", 20, [][2]int{{1, 4}}, 16},
		{"window ending at block 3, early blocks gone", "full,sliding_window:8", 20, [][2]int{{1, 4}, {1, 0}, {1, 1}}, 16},
		{"no full window: the leading run", "full,sliding_window:8", 20, [][2]int{{1, 1}, {1, 3}}, 4},
		{"window but full attention misses", "full,sliding_window:8", 20, [][2]int{{0, 2}}, 8},
		{"mamba state at the end", "full,mamba", 20, nil, 20},
		// The state was saved only at block 4: a prompt sharing 4 blocks
		// cannot start from it.
		{"mamba: no state inside the shared prefix", "full,mamba", 16, nil, 0},
		{"mamba state evicted", "full,mamba", 20, [][2]int{{1, 4}}, 0},
		{"full attention first whatever the order", "sliding_window:8,full", 20, [][2]int{{0, 4}}, 16},
		// Three kinds: the window shortens to 4 blocks, Mamba has no state
		// there, and the fixed point settles on nothing.
		{"three kinds iterate to a fixed point", "full,sliding_window:8,mamba", 20, [][2]int{{1, 4}}, 0},
		{"two groups of one spec need both", "full,sliding_window:8,sliding_window:8", 20, [][2]int{{2, 4}}, 16},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newHybrid(t, 64, tt.groups)
			a := seqOf(20, 100)
			run(t, p, a)
			p.Free(a)
			for _, d := range tt.drop {
				uncache(t, p, a, d[0], d[1])
			}
			b := seqOf(tt.prompt, 100)
			b.Tokens = append(b.Tokens, 900, 901, 902, 903, 904, 905)
			if got := p.Lookup(b).Tokens; got != tt.want {
				t.Errorf("cached tokens %d; want %d", got, tt.want)
			}
		})
	}
}

func TestHybridEventsPerGroup(t *testing.T) {
	p := newHybrid(t, 64, "full,sliding_window:8,mamba")
	s := seqOf(10, 100) // 2 full blocks and 2 tokens
	run(t, p, s)
	evs := p.TakeEvents()
	if len(evs) != 3 {
		t.Fatalf("events %v; want one BlockStored per group", kinds(evs))
	}
	want := []struct {
		kind   SpecKind
		window int
		hashes []Hash
	}{
		{FullAttention, 0, s.hashes[:2]},
		{SlidingWindow, 8, s.hashes[:2]},
		// Mamba keeps the state at the prompt's last full block only.
		{Mamba, 0, s.hashes[1:2]},
	}
	for g, w := range want {
		e := evs[g]
		if e.Kind != BlockStored || e.Group != g || e.SpecKind != w.kind || e.Window != w.window || !slices.Equal(e.Hashes, w.hashes) {
			t.Errorf("group %d: %s group %d kind %s window %d hashes %d; want BlockStored of group %d, %s, window %d, %d hashes",
				g, e.Kind, e.Group, e.SpecKind, e.Window, len(e.Hashes), g, w.kind, w.window, len(w.hashes))
		}
		if !slices.Equal(e.Tokens, s.Tokens[:8]) || len(e.Extra) != len(e.Hashes) {
			t.Errorf("group %d: %d tokens, %d extra keys; want the 8 tokens of the range and one extra entry per hash", g, len(e.Tokens), len(e.Extra))
		}
	}
}

func TestMambaChunkWithoutStateStoresNoHash(t *testing.T) {
	p := newHybrid(t, 64, "full,mamba")
	s := seqOf(20, 100)
	if err := p.Admit(s, p.Lookup(s)); err != nil {
		t.Fatal(err)
	}
	p.Compute(s, 8) // a chunk of the prefill: no state is saved at token 8
	evs := p.TakeEvents()
	if len(evs) != 2 || len(evs[1].Hashes) != 0 || len(evs[1].Tokens) != 8 || evs[1].Group != 1 {
		t.Fatalf("events %+v; want group 1 storing the 8 tokens' range with no block kept", evs)
	}
	p.Compute(s, 20)
	evs = p.TakeEvents()
	if len(evs) != 2 || !slices.Equal(evs[1].Hashes, s.hashes[4:5]) || evs[1].Parent == nil || *evs[1].Parent != s.hashes[1] {
		t.Fatalf("events %+v; want group 1 storing block 4 with block 1's hash as parent", evs)
	}
}

// TestSlidingWindowFreesBlocksOutOfTheWindow follows vLLM's
// remove_skipped_blocks: as decoding moves on, the blocks wholly before the
// window go back to the free list, still cached, and are evicted (with
// their group's BlockRemoved) only when reused.
func TestSlidingWindowFreesBlocksOutOfTheWindow(t *testing.T) {
	p := newHybrid(t, 9, "full,sliding_window:8")
	s := seqOf(8, 100)
	run(t, p, s)
	p.TakeEvents()
	if p.NumFree() != 5 {
		t.Fatalf("%d free after admitting 2 blocks in 2 groups; want 5", p.NumFree())
	}
	for len(s.Tokens) < 12 {
		s.Tokens = append(s.Tokens, 7)
		if err := p.Grow(s); err != nil {
			t.Fatal(err)
		}
		p.Compute(s, len(s.Tokens))
	}
	// 12 computed: the next token's window starts at token 5, so block 0
	// of the window group is skipped.
	s.Tokens = append(s.Tokens, 7)
	if err := p.Grow(s); err != nil {
		t.Fatal(err)
	}
	if p.NumFree() != 2 {
		t.Fatalf("%d free; want 2 (9 blocks: full attention holds 4, the window 3 after freeing its block 0)", p.NumFree())
	}
	if p.firstCopy(s.hashes[0], 1) == nil {
		t.Fatal("the freed window block lost its hash; vLLM keeps it cached until evicted")
	}
	o := seqOf(3, 500)
	if err := p.Admit(o, p.Lookup(o)); err != nil {
		t.Fatal(err)
	}
	if err := p.Admit(seqOf(3, 600), Match{}); !errors.Is(err, ErrNoSpace) {
		t.Fatalf("admit past the pool: %v; want ErrNoSpace", err)
	}
	var removed []Event
	for _, e := range p.TakeEvents() {
		if e.Kind == BlockRemoved {
			removed = append(removed, e)
		}
	}
	if len(removed) != 1 || removed[0].Group != 1 || removed[0].Hashes[0] != s.hashes[0] {
		t.Fatalf("removed %+v; want the window group's block 0", removed)
	}
}

func TestMambaKeepsOnlyTheLatestState(t *testing.T) {
	p := newHybrid(t, 64, "full,mamba")
	s := seqOf(8, 100)
	run(t, p, s)
	for len(s.Tokens) < 17 {
		s.Tokens = append(s.Tokens, 7)
		if err := p.Grow(s); err != nil {
			t.Fatal(err)
		}
		p.Compute(s, len(s.Tokens)-1)
	}
	held := 0
	for _, b := range s.groups[1].blocks {
		if b != nil {
			held++
		}
	}
	// Computed 16: the state at block 3 and the running block 4.
	if held != 2 || s.groups[1].blocks[3] == nil {
		t.Fatalf("mamba holds %d blocks; want 2, the latest state at block 3 and the running one", held)
	}
	for i := 1; i < 4; i++ {
		if p.firstCopy(s.hashes[i], 1) == nil {
			t.Errorf("state at block %d was dropped from the cache; freed states stay cached", i)
		}
	}
	if p.firstCopy(s.hashes[0], 1) != nil {
		t.Error("block 0 holds a state: the prompt's state is saved at its last full block only")
	}
}

func TestFreeAndResetHybrid(t *testing.T) {
	p := newHybrid(t, 16, "full,sliding_window:8")
	s := seqOf(10, 100)
	run(t, p, s)
	p.Free(s)
	if p.NumFree() != 16 {
		t.Fatalf("%d free after Free; want all 16", p.NumFree())
	}
	if got := p.NumCached(); got != 4 {
		t.Fatalf("%d cached blocks; want 2 per group", got)
	}
	groups := map[int]int{}
	for _, b := range p.Blocks() {
		groups[b.Group]++
		if b.Spec != p.groups[b.Group] {
			t.Errorf("block %d of group %d reports spec %v", b.BlockID, b.Group, b.Spec)
		}
	}
	if groups[0] != 2 || groups[1] != 2 {
		t.Errorf("dump groups %v; want 2 blocks in each", groups)
	}
	if err := p.Reset(); err != nil || p.NumCached() != 0 {
		t.Fatalf("Reset: %v, %d cached", err, p.NumCached())
	}
}

func TestParseGroups(t *testing.T) {
	good := map[string]string{
		"full":                       "full",
		"full,sliding_window:128":    "full,sliding_window:128",
		" full , mamba ":             "full,mamba",
		"full_attention,mamba":       "full,mamba",
		"sliding_window:1":           "sliding_window:1",
		"mamba,mamba,mamba,full":     "mamba,mamba,mamba,full",
		"sliding_window:4096,full":   "sliding_window:4096,full",
		"full,sliding_window:8,full": "full,sliding_window:8,full",
	}
	for in, want := range good {
		g, err := ParseGroups(in)
		if err != nil || FormatGroups(g) != want {
			t.Errorf("ParseGroups(%q) = %s, %v; want %s", in, FormatGroups(g), err, want)
		}
	}
	for _, in := range []string{"", "full,", "sliding_window", "sliding_window:0", "sliding_window:-3", "sliding_window:x", "full:2", "mamba:1", "linear", "FULL"} {
		if _, err := ParseGroups(in); err == nil {
			t.Errorf("ParseGroups(%q) accepted", in)
		}
	}
	many := "full"
	for range MaxGroups {
		many += ",full"
	}
	if _, err := ParseGroups(many); err == nil {
		t.Error("more than MaxGroups groups accepted")
	}
}

func TestCPUTierNeedsTheDefaultGroup(t *testing.T) {
	g, _ := ParseGroups("full,mamba")
	if _, err := New(Config{NumBlocks: 8, BlockSize: bs, CPUBlocks: 4, Groups: g}); err == nil {
		t.Fatal("a CPU tier with hybrid groups was accepted")
	}
}
