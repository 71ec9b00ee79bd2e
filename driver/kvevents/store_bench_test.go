package kvevents

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/llmgw/llmgw/internal/blockkey"
)

// fillStore stores n blocks spread over four replicas, in chains of 8.
func fillStore(n int) *Store {
	s := NewStore()
	tk := make([]uint32, 8*16)
	for i := 0; i < n; i += 8 {
		for j := range tk {
			tk[j] = uint32(i*16 + j)
		}
		hashes := make([]uint64, 8)
		for j := range hashes {
			hashes[j] = uint64(i + j + 1)
		}
		s.Apply(fmt.Sprintf("alloc-%d/main", (i/8)%4), 0, &Batch{Events: []Event{{Type: BlockStored, Hashes: hashes, Tokens: tk, BlockSize: 16}}})
	}
	return s
}

// BenchmarkSnapshot100k builds a session's first drain over 100,000 cached
// blocks.
func BenchmarkSnapshot100k(b *testing.B) {
	s := fillStore(100_000)
	b.ReportAllocs()
	for b.Loop() {
		ss := s.Open()
		d := ss.Drain()
		ss.Close()
		if !d.Snapshot || len(d.Replicas) != 4 {
			b.Fatalf("drain %v", d.Snapshot)
		}
	}
}

// BenchmarkStateMemory reports the heap a Store takes per cached block
// (1Mi blocks, base-model chains of 8): all of it, and the canonical-key map
// alone (the part the issue bounds; the engine-hash map comes on top).
func BenchmarkStateMemory(b *testing.B) {
	const n = 1 << 20
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	for b.Loop() {
		before := heap()
		s := fillStore(n)
		after := heap()
		keyMap := 0
		for _, r := range s.replicas {
			for _, rs := range r.ranks {
				keyMap += len(rs.held)
			}
		}
		if keyMap != n {
			b.Fatalf("%d blocks held; want %d", keyMap, n)
		}
		held := make(map[blockkey.Key]holders)
		for i := range n {
			held[blockkey.Key(uint64(i)*0x9e3779b97f4a7c15)] = holders{1}
		}
		last := heap()
		b.ReportMetric(float64(after-before)/n, "store-B/block")
		b.ReportMetric(float64(last-after)/n, "keymap-B/block")
		runtime.KeepAlive(s)
		runtime.KeepAlive(held)
	}
}
