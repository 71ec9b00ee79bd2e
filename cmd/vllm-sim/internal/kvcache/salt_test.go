package kvcache

import (
	"slices"
	"testing"
)

// salted is seqOf with a LoRA and a cache_salt.
func salted(n int, base uint32, lora, salt string) *Seq {
	s := seqOf(n, base)
	s.LoRA, s.CacheSalt = lora, salt
	return s
}

// TestCacheSaltIsolates follows vLLM: the salt keys block 0, and every later
// block chains from it, so a prompt shares its prefix only with requests of
// the same salt (and LoRA).
func TestCacheSaltIsolates(t *testing.T) {
	tests := []struct {
		name        string
		first, then *Seq
		hit         int
	}{
		{"same salt hits", salted(13, 100, "", "tenant-a"), salted(13, 100, "", "tenant-a"), 12},
		{"another salt misses", salted(13, 100, "", "tenant-a"), salted(13, 100, "", "tenant-b"), 0},
		{"unsalted after salted misses", salted(13, 100, "", "tenant-a"), salted(13, 100, "", ""), 0},
		{"salted after unsalted misses", salted(13, 100, "", ""), salted(13, 100, "", "tenant-a"), 0},
		{"an empty salt is no salt", salted(13, 100, "", ""), seqOf(13, 100), 12},
		// vLLM hashes the tuple ("x",) for both, so block 0 aliases; the
		// next blocks differ (("x",) against None).
		{"a LoRA name and an equal salt alias on block 0, as in vLLM", salted(13, 100, "x", ""), salted(13, 100, "", "x"), 4},
		{"LoRA and salt together hit", salted(13, 100, "sql", "s"), salted(13, 100, "sql", "s"), 12},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPool(t, 16, 0)
			run(t, p, tt.first)
			p.Free(tt.first)
			if hit := run(t, p, tt.then); hit != tt.hit {
				t.Errorf("second request hit %d tokens; want %d", hit, tt.hit)
			}
		})
	}
}

// TestCacheSaltInEvents checks the extra keys a salted store carries: the
// LoRA name on every block and the salt on block 0 only, as vLLM emits them;
// a store that continues the chain past block 0 carries no salt.
func TestCacheSaltInEvents(t *testing.T) {
	p := newPool(t, 16, 0)
	s := salted(10, 100, "sql", "tenant-a")
	m := p.Lookup(s)
	if err := p.Admit(s, m); err != nil {
		t.Fatal(err)
	}
	p.Compute(s, 4)
	p.Compute(s, 10)
	evs := p.TakeEvents()
	if len(evs) != 2 {
		t.Fatalf("events %v; want two BlockStored (one per computed chunk)", kinds(evs))
	}
	want := [][][]string{{{"sql", "tenant-a"}}, {{"sql"}}}
	for i, e := range evs {
		if len(e.Extra) != len(want[i]) {
			t.Fatalf("event %d: extra keys %v; want %v", i, e.Extra, want[i])
		}
		for j := range e.Extra {
			if !slices.Equal(e.Extra[j], want[i][j]) {
				t.Errorf("event %d block %d: extra keys %v; want %v", i, j, e.Extra[j], want[i][j])
			}
		}
	}
	plain := seqOf(8, 500)
	run(t, p, plain)
	if e := p.TakeEvents()[0]; len(e.Extra) != 2 || e.Extra[0] != nil || e.Extra[1] != nil {
		t.Errorf("plain store extra keys %v; want [nil nil]", e.Extra)
	}
}
