package kvevents

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/llmgw/llmgw/internal/blockkey"
	"github.com/vmihailenco/msgpack/v5"
)

// churnPayloads builds m batches of steady churn as a busy vLLM engine
// sends them: batch i stores a fresh 8-block chain (block size 16, 12-field
// schema) and evicts, one BlockRemoved each, the 8 blocks batch i-k stored.
// Cycling through the batches keeps the state at about 8k blocks.
func churnPayloads(b *testing.B, m, k int) [][]byte {
	b.Helper()
	const perBatch, bs = 8, 16
	hashOf := func(slot, j int) uint64 { return uint64(slot*perBatch+j)*0x9e3779b97f4a7c15 | 1 }
	out := make([][]byte, m)
	for i := range m {
		hashes := make([]uint64, perBatch)
		tokens := make([]uint32, perBatch*bs)
		for j := range hashes {
			hashes[j] = hashOf(i, j)
		}
		for j := range tokens {
			tokens[j] = uint32(i*7919 + j)
		}
		extra := make([]any, perBatch)
		events := []any{[]any{"BlockStored", hashes, nil, tokens, bs, nil, "GPU", nil, extra, 0, "full_attention", nil}}
		old := (i - k + m) % m
		for j := range perBatch {
			events = append(events, []any{"BlockRemoved", []uint64{hashOf(old, j)}, "GPU", 0})
		}
		p, err := msgpack.Marshal([]any{1.7e9, events, 0})
		if err != nil {
			b.Fatal(err)
		}
		out[i] = p
	}
	return out
}

// BenchmarkDecodeApply measures the intake path a listener runs per batch:
// decode, canonical keys, block state, change log (with one session, as a
// driver with one router has). Reported as block events per second; run it
// with -cpu 1 for the one-core figure.
func BenchmarkDecodeApply(b *testing.B) {
	payloads := churnPayloads(b, 4096, 1024)
	s := NewStore()
	ss := s.Open()
	defer ss.Close()
	var d Decoder
	b.ReportAllocs()
	b.ResetTimer()
	blocks := 0
	for i := 0; b.Loop(); i++ {
		batch, err := d.Decode(payloads[i%len(payloads)])
		if err != nil {
			b.Fatal(err)
		}
		for _, ev := range batch.Events {
			blocks += len(ev.Hashes)
		}
		s.Apply("r", 0, batch)
		if i%256 == 255 { // keep the session's log short, off the clock
			b.StopTimer()
			ss.Drain()
			b.StartTimer()
		}
	}
	b.ReportMetric(float64(blocks)/b.Elapsed().Seconds(), "blockevents/s")
}

// BenchmarkDrain measures a session's delta: the net effect of 64 churn
// batches (1,024 block events).
func BenchmarkDrain(b *testing.B) {
	payloads := churnPayloads(b, 4096, 1024)
	s := NewStore()
	ss := s.Open()
	defer ss.Close()
	var d Decoder
	ss.Drain()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		b.StopTimer()
		for j := range 64 {
			batch, err := d.Decode(payloads[(i*64+j)%len(payloads)])
			if err != nil {
				b.Fatal(err)
			}
			s.Apply("r", 0, batch)
		}
		b.StartTimer()
		ss.Drain()
	}
}

// BenchmarkDecode is the decoder alone.
func BenchmarkDecode(b *testing.B) {
	payloads := churnPayloads(b, 256, 64)
	var d Decoder
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := d.Decode(payloads[i%len(payloads)]); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(16*float64(b.N)/b.Elapsed().Seconds(), "blockevents/s")
}

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
