package index

import (
	"fmt"
	"testing"
)

// liveSets counts the sets published in ix's registry, checking that each
// is interned under its fingerprint and counts as many keys as point at it.
func liveSets(t *testing.T, ix *Index) int {
	t.Helper()
	refs := map[*extSet]int{}
	count := func(tb *hashTable, s *slot) {
		if e := tb.ext(s); e != nil {
			refs[e]++
		} else if s.meta.Load()>>16 != 0 {
			t.Fatalf("slot meta %#x names no published set", s.meta.Load())
		}
	}
	for i := range ix.shards {
		tb := &ix.shards[i].t
		if tb.hasZero.Load() {
			count(tb, &tb.zero)
		}
		a := tb.arr.Load()
		for j := range a.s {
			if a.s[j].key.Load() != 0 {
				count(tb, &a.s[j])
			}
		}
	}
	live := 0
	if r := ix.sets.reg.Load(); r != nil {
		for i := range *r {
			e := (*r)[i].Load()
			if e == nil {
				continue
			}
			live++
			if e.refs != refs[e] || e.refs == 0 {
				t.Errorf("set %d counts %d keys; %d point at it", e.id, e.refs, refs[e])
			}
			if ix.sets.byFP[e.fp] != e {
				t.Errorf("set %d is not interned under its fingerprint", e.id)
			}
		}
	}
	if live != len(refs) || live != len(ix.sets.byFP) {
		t.Errorf("%d sets published, %d pointed at, %d interned", live, len(refs), len(ix.sets.byFP))
	}
	return live
}

// TestHolderSetsAreShared: keys held by the same holders of several pages
// share one interned set, so a prompt cached on 64 holders spread one per
// page has as many sets as its distinct holder sets (one per depth at
// which a holder drops out), not one per key; consecutive sets differ in
// one page, so they share all their chunks but one; every set and chunk
// is freed once no key points at it, and the numbers are reused. (One
// test for both: building the 4,096-holder index is most of its time.)
func TestHolderSetsAreShared(t *testing.T) {
	const pages, blocks = staggeredPages, staggeredBlocks
	ix, prompt := staggered(t)
	// Keys of depth d are held by the holders of pages d*64/512 and up:
	// the last 8 keys by page 63 alone (inline, no set).
	if got, want := liveSets(t, ix), pages-1; got != want {
		t.Errorf("%d live sets for a prompt on %d holders of %d pages; want %d", got, pages, pages, want)
	}
	// Sets of pages k+1..63 for k = 0..62: those of more than 8 words
	// (k < 55) have chunks; chunk c of such a set depends only on
	// whether k has passed into it, so each chunk has at most 9 versions.
	if chunked := liveChunks(t, ix); chunked != 55 {
		t.Errorf("%d sets with chunks; want 55", chunked)
	}
	if n := len(ix.sets.parts); n > chunks*(chunkPages+1) {
		t.Errorf("%d interned chunks; want at most %d", n, chunks*(chunkPages+1))
	}
	got := ix.Lookup(prompt, nil)
	if len(got) != pages || got[pages-1].Blocks != blocks {
		t.Fatalf("lookup: %d matches, last %+v; want %d, the last with all %d blocks", len(got), got[len(got)-1], pages, blocks)
	}
	for i, m := range got {
		if want := blocks * (i + 1) / pages; m.Blocks != want {
			t.Errorf("%s: %d blocks; want %d", m.Replica, m.Blocks, want)
		}
	}
	// The holders of pages 1-31 leave: the prompt's keys change sets.
	for j := 1; j < 32; j++ {
		ix.Remove(fmt.Sprintf("r-%04d", j*64))
	}
	ix.sweepDead()
	if got, want := liveSets(t, ix), pages-32; got != want {
		t.Errorf("after 31 holders left: %d live sets; want %d", got, want)
	}
	// Only the prompt's holders are in sets (every other holder's one key
	// is inline), so their leaving frees every set and chunk.
	for j := 0; j < pages; j++ {
		ix.Remove(fmt.Sprintf("r-%04d", j*64))
	}
	ix.sweepDead()
	if got := liveSets(t, ix); got != 0 {
		t.Errorf("after the prompt's holders left: %d live sets; want 0", got)
	}
	if len(ix.sets.parts) != 0 {
		t.Errorf("after the prompt's holders left: %d interned chunks; want 0", len(ix.sets.parts))
	}
	if n := ix.sets.next; int(n) != len(ix.sets.free) {
		t.Errorf("%d set numbers handed out, %d free again", n, len(ix.sets.free))
	}
}

// The staggered prompt: staggeredBlocks keys cached on staggeredPages
// holders spread one per page of MaxHolders, the holder of page j the
// first (j+1)/staggeredPages of it, every holder with one key of its own.
const staggeredPages, staggeredBlocks = 64, 512

func staggered(t *testing.T) (*Index, []uint64) {
	t.Helper()
	ix := New(Options{})
	prompt := randomKeys(staggeredBlocks, 7)
	for i := range MaxHolders {
		cs := []Change{{Tier: GPU, Add: []uint64{uint64(1e6 + i)}}}
		if i%64 == 0 {
			cs = append(cs, Change{Tier: GPU, Add: prompt[:staggeredBlocks*(i/64+1)/staggeredPages]})
		}
		if err := ix.Update(fmt.Sprintf("r-%04d", i), cs); err != nil {
			t.Fatal(err)
		}
	}
	return ix, prompt
}
