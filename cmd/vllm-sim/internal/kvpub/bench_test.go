package kvpub

import (
	"encoding/binary"
	"testing"
	"time"

	"github.com/llmgw/llmgw/cmd/vllm-sim/internal/kvcache"
)

// BenchmarkPublishBlocks measures block events per second from Publish to a
// real SUB socket on loopback: encoding, the queue, ZMQ. Each batch is what a
// busy engine step produces: 32 requests each storing one 16-token block,
// and 32 evictions.
func BenchmarkPublishBlocks(b *testing.B) {
	sub, endpoint := subscriber(b)
	cfg := Config{Endpoint: endpoint, Schema: Schema{StoredLen: 12, IntHashes: true}, HWM: 1 << 20, MaxQueueSize: 1024, BufferSteps: 10000}
	p, err := New(cfg, quiet())
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	var events []kvcache.Event
	for i := range 32 {
		h := hashOf(uint64(i) << 40)
		parent := hashOf(uint64(i))
		tokens := make([]uint32, 16)
		for j := range tokens {
			tokens[j] = uint32(100000 + i*16 + j)
		}
		events = append(events,
			kvcache.Event{Kind: kvcache.BlockStored, Hashes: []kvcache.Hash{h}, Parent: &parent, Tokens: tokens, BlockSize: 16, Medium: kvcache.MediumGPU},
			kvcache.Event{Kind: kvcache.BlockRemoved, Hashes: []kvcache.Hash{parent}, Medium: kvcache.MediumGPU})
	}
	const blocksPerBatch = 64
	// Warm the connection so no batch is lost to the slow joiner.
	sub.SetRcvtimeo(20 * time.Millisecond)
	for {
		_ = p.Publish(b.Context(), 0, events)
		if _, err := sub.RecvMessageBytes(0); err == nil {
			break
		}
	}
	sub.SetRcvtimeo(-1)
	b.ResetTimer()
	done := make(chan uint64)
	go func() {
		var last uint64
		for range b.N {
			f, err := sub.RecvMessageBytes(0)
			if err != nil {
				break
			}
			last = binary.BigEndian.Uint64(f[1])
		}
		done <- last
	}()
	for range b.N {
		if err := p.Publish(b.Context(), 0, events); err != nil {
			b.Fatal(err)
		}
	}
	<-done
	b.StopTimer()
	b.ReportMetric(float64(b.N*blocksPerBatch)/b.Elapsed().Seconds(), "blocks/s")
}
