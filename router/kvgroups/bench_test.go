package kvgroups

import (
	"fmt"
	"testing"

	"github.com/llmgw/llmgw/router/index"
)

// BenchmarkLookup is one scheduler lookup of a 512-block prompt over 16
// candidates: "full" with every replica full-attention only (the fast
// path), "sliding_window" and "mamba" with every replica hybrid, each
// holding a different share of the prompt in every group.
func BenchmarkLookup(b *testing.B) {
	const blocks, replicas = 512, 16
	keys := make([]uint64, blocks)
	for i := range keys {
		keys[i] = uint64(i)*0x9e3779b97f4a7c15 + 1
	}
	ids := make([]string, replicas)
	for i := range ids {
		ids[i] = fmt.Sprintf("r%02d", i)
	}
	for _, layout := range []string{"full", "full,sliding_window:4096", "full,mamba"} {
		b.Run(layout, func(b *testing.B) {
			ms, reg := index.NewModels(index.Options{}), NewRegistry()
			x := NewIndex(ms, reg)
			for r, id := range ids {
				n := blocks * (r + 1) / replicas
				h := held{0: span(0, n)}
				if layout != "full" {
					h[1] = span(n/2, n)
				}
				l, _ := ParseLayout(layout, 16)
				if l.Hybrid() {
					reg.FromEvents(id, l.Groups, 16)
				}
				for g, pos := range h {
					var ks []uint64
					for _, p := range pos {
						ks = append(ks, keys[p])
					}
					if err := ms.For(IndexName("m", g, 0)).Replace(id, []index.Blocks{{Tier: index.GPU, Keys: ks}}); err != nil {
						b.Fatal(err)
					}
				}
			}
			out := make([]index.Match, replicas)
			b.ReportAllocs()
			for b.Loop() {
				out = x.LookupReplicasMax("m", keys, 1, blocks, ids, out)
			}
		})
	}
}
