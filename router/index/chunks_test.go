package index

import (
	"fmt"
	"slices"
	"testing"
)

// liveChunks checks the chunks of ix's published sets: each set of more
// than chunkMin words has them, each chunk holds exactly its set's words
// of its pages and counts the sets pointing at it, and the interned ones
// are under their fingerprints. It returns how many sets have chunks.
func liveChunks(t *testing.T, ix *Index) int {
	t.Helper()
	refs := map[*chunk]int{}
	chunked := 0
	if r := ix.sets.reg.Load(); r != nil {
		for i := range *r {
			e := (*r)[i].Load()
			if e == nil {
				continue
			}
			if (e.parts != nil) != (len(e.words) > chunkMin) {
				t.Fatalf("set %d of %d words: has chunks %v", e.id, len(e.words), e.parts != nil)
			}
			if e.parts == nil {
				continue
			}
			chunked++
			var joined []word
			for c, ch := range e.parts {
				if ch == nil {
					continue
				}
				refs[ch]++
				for _, w := range ch.words {
					if w.page/chunkPages != c {
						t.Fatalf("set %d: chunk %d holds page %d", e.id, c, w.page)
					}
				}
				joined = append(joined, ch.words...)
			}
			if fmt.Sprint(joined) != fmt.Sprint(e.words) {
				t.Fatalf("set %d: chunks %v; words %v", e.id, joined, e.words)
			}
		}
	}
	for ch, n := range refs {
		if ch.refs != n {
			t.Errorf("a chunk counts %d sets; %d point at it", ch.refs, n)
		}
	}
	for fp, ch := range ix.sets.parts {
		if ch.fp != fp || refs[ch] == 0 {
			t.Errorf("interned chunk %#x: fingerprint %#x, %d sets", fp, ch.fp, refs[ch])
		}
	}
	return chunked
}

// TestChunkedIndexMatchesModel is TestIndexMatchesModel over holders on
// many pages: fillers take the slots of 21 pages, and the replicas that
// churn are some of them, one every half page, so keys' sets have many
// words, are cut into chunks, and the walk steps from set to set by their
// differing chunks.
func TestChunkedIndexMatchesModel(t *testing.T) {
	ix, ref := New(Options{}), refIndex{}
	var churn []string
	for i := range 21 * 64 {
		name := fmt.Sprintf("fill-%04d", i)
		cs := []Change{{Tier: GPU, Add: []uint64{uint64(1e6 + i)}}}
		if err := ix.Update(name, cs); err != nil {
			t.Fatal(err)
		}
		ref.update(name, cs)
		if i%31 == 7 {
			churn = append(churn, name)
		}
	}
	matchModel(t, ix, ref, churn, 800)
	if n := liveChunks(t, ix); n == 0 {
		t.Error("no set was cut into chunks: the test did not exercise the chunked step")
	}
	liveSets(t, ix)
}

// TestGallop: gallop finds what slices.BinarySearch finds, from any
// starting position, for names present and absent.
func TestGallop(t *testing.T) {
	names := []string{"b", "d", "f", "h", "j", "l", "n"}
	for _, name := range []string{"a", "b", "c", "d", "g", "h", "m", "n", "o"} {
		wi, wok := slices.BinarySearch(names, name)
		for from := 0; from <= len(names)+1; from++ {
			if i, ok := gallop(names, from, name); i != wi || ok != wok {
				t.Errorf("gallop(%q from %d) = %d, %v; want %d, %v", name, from, i, ok, wi, wok)
			}
		}
	}
}
