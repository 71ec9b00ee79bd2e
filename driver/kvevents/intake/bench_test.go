package intake

import (
	"testing"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/llmgw/llmgw/driver/kvevents"
)

// churnPayloads builds m batches of steady churn as a busy vLLM engine
// sends them: batch i stores a fresh 8-block chain (block size 16, 12-field
// schema) and evicts, one BlockRemoved each, the 8 blocks batch i-k stored.
// Cycling through the batches keeps the state at about 8k blocks.
func churnPayloads(b testing.TB, m, k int) [][]byte {
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
	s := kvevents.NewStore()
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
	s := kvevents.NewStore()
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
