package main

import (
	"bytes"
	"fmt"
	"io"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"time"

	"github.com/llmgw/llmgw/internal/testkit/kvvectors"
)

// equalState reports whether the events' net effect matches the dump.
func equalState(t *testing.T, p proc, batches []batch) bool {
	want := truth(dump(t, p))
	got := apply(batches).copies
	return maps.Equal(got["GPU"], want["GPU"]) && maps.Equal(got["CPU"], want["CPU"])
}

func TestEventsMatchGroundTruth(t *testing.T) {
	s := newSub(t)
	p := startSim(t, nil, "--kv-events-config", s.flag("kv@sim"), "--block-size", "4", "--num-gpu-blocks-override", "24", "--max-model-len", "64")
	// Two conversations sharing a system prompt, one growing over turns,
	// enough to evict: 24 blocks of 4 tokens.
	system := words(0, 12)
	for turn := range 4 {
		complete(t, p, system+words(100, 4*(turn+1)), 6)
		complete(t, p, system+words(500+turn*40, 10), 6)
	}
	batches := s.collect(t, func(b []batch) bool { return len(b) > 0 && equalState(t, p, b) })
	st := apply(batches)
	for _, blk := range dump(t, p) {
		if !slices.Equal(st.tokens[blk.Hash], blk.TokenIDs) {
			t.Errorf("block %x: events carried tokens %v; the cache holds %v", blk.Hash, st.tokens[blk.Hash], blk.TokenIDs)
		}
	}
	removed := 0
	for i, b := range batches {
		if b.Seq != uint64(i) || b.Topic != "kv@sim" || b.Len != 3 {
			t.Errorf("batch %d: seq %d topic %q len %d; want seq %d, topic kv@sim, 3 elements", i, b.Seq, b.Topic, b.Len, i)
		}
		for _, e := range b.Events {
			if e.Type == "BlockRemoved" {
				removed++
			}
		}
	}
	if removed == 0 {
		t.Error("the workload overflowed the cache but no BlockRemoved was sent")
	}
}

func TestEventSchemas(t *testing.T) {
	tests := []struct {
		args      []string
		storedLen int
		batchLen  int
		isMap     bool
	}{
		{[]string{"--sim-event-schema", "6"}, 6, 2, false},
		{[]string{"--sim-event-schema", "7"}, 7, 3, false},
		{[]string{"--sim-event-schema", "8"}, 8, 3, false},
		{[]string{"--sim-event-schema", "9"}, 9, 3, false},
		{[]string{"--sim-event-schema", "10"}, 10, 3, false},
		{nil, 12, 3, false},
		{[]string{"--sim-event-format", "map"}, 11, 3, true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.storedLen, tt.isMap), func(t *testing.T) {
			s := newSub(t)
			p := startSim(t, nil, append([]string{"--kv-events-config", s.flag(""), "--block-size", "4"}, tt.args...)...)
			complete(t, p, words(0, 10), 2)
			b := s.collect(t, func(b []batch) bool { return len(b) > 0 })[0]
			e := b.Events[0]
			if b.Len != tt.batchLen || e.Type != "BlockStored" || e.Len != tt.storedLen || (e.Keys != nil) != tt.isMap {
				t.Errorf("batch of %d, first event %s of length %d (map %v); want batch %d, BlockStored of %d (map %v)",
					b.Len, e.Type, e.Len, e.Keys != nil, tt.batchLen, tt.storedLen, tt.isMap)
			}
			if tt.isMap {
				want := []string{"block_hashes", "block_size", "extra_keys", "group_idx", "kv_cache_spec_kind", "lora_id", "lora_name", "medium", "parent_block_hash", "token_ids", "type"}
				if !slices.Equal(e.Keys, want) {
					t.Errorf("map keys %v; want %v", e.Keys, want)
				}
			}
		})
	}
}

func TestReplayShapes(t *testing.T) {
	for _, shape := range []string{"new", "old"} {
		t.Run(shape, func(t *testing.T) {
			s := newSub(t)
			p := startSim(t, nil, "--kv-events-config", s.flag("kv"), "--sim-replay-format", shape, "--block-size", "4")
			complete(t, p, words(0, 10), 2)
			s.collect(t, func(b []batch) bool { return len(b) > 0 })
			frames := replayFrames(t, s.replay, 0)
			if len(frames) == 0 {
				t.Fatal("replay from 0 returned nothing")
			}
			want := 3
			if shape == "old" {
				want = 2
			}
			for _, f := range frames {
				if len(f) != want {
					t.Fatalf("%s replay reply has %d frames; want %d", shape, len(f), want)
				}
			}
			if first := decodeBatch(t, nil, frames[0][want-2], frames[0][want-1]); first.Seq != 0 {
				t.Errorf("replay from 0 starts at seq %d; want 0", first.Seq)
			}
		})
	}
}

func TestDroppedBatchesAreReplayable(t *testing.T) {
	s := newSub(t)
	p := startSim(t, nil, "--kv-events-config", s.flag("kv"), "--block-size", "4")
	complete(t, p, words(0, 10), 2)
	before := s.collect(t, func(b []batch) bool { return len(b) > 0 })
	if st := post(t, p.URL+"/debug/kv/drop", map[string]int{"batches": 2}, nil); st != 200 {
		t.Fatalf("drop: status %d", st)
	}
	for i := range 3 {
		complete(t, p, words(100*(i+1), 10), 2)
	}
	// The first live batch after the drop skips two sequence numbers.
	next := before[len(before)-1].Seq + 1
	var live batch
	for {
		b, ok := s.recv(t, 10*time.Second)
		if !ok {
			t.Fatal("no live batch after the drop")
		}
		if b.Seq >= next {
			live = b
			break
		}
	}
	if live.Seq != next+2 {
		t.Fatalf("first live seq %d; want %d (two withheld)", live.Seq, next+2)
	}
	if got := replay(t, s.replay, next, live.Seq); len(got) != 2 || got[0].Events[0].Type != "BlockStored" {
		t.Errorf("replay of the withheld batches gave %d batches", len(got))
	}
}

func TestEvictionRemovesOnlyOnReuse(t *testing.T) {
	s := newSub(t)
	p := startSim(t, nil, "--kv-events-config", s.flag(""), "--block-size", "4", "--num-gpu-blocks-override", "8", "--max-model-len", "32")
	complete(t, p, words(0, 8), 1) // cached, then free
	first := s.collect(t, func(b []batch) bool { return len(b) > 0 && equalState(t, p, b) })
	stored := apply(first).copies["GPU"]
	for _, b := range first {
		for _, e := range b.Events {
			if e.Type == "BlockRemoved" {
				t.Fatalf("BlockRemoved before any block was reused: %+v", e)
			}
		}
	}
	complete(t, p, words(1000, 12), 1) // needs 7 of the 8 blocks
	all := s.collect(t, func(b []batch) bool { return len(b) > len(first) && equalState(t, p, b) })
	var removed []uint64
	for _, b := range all[len(first):] {
		for _, e := range b.Events {
			if e.Type == "BlockRemoved" {
				removed = append(removed, e.Hashes...)
			}
		}
	}
	if len(removed) == 0 {
		t.Fatal("reusing the cache removed nothing")
	}
	for _, h := range removed {
		if stored[h] == 0 {
			t.Errorf("removed %x, which was never stored", h)
		}
	}
}

func TestResetPrefixCacheClearsAll(t *testing.T) {
	s := newSub(t)
	p := startSim(t, nil, "--kv-events-config", s.flag(""), "--block-size", "4")
	complete(t, p, words(0, 12), 2)
	s.collect(t, func(b []batch) bool { return len(b) > 0 && equalState(t, p, b) })
	if st := post(t, p.URL+"/reset_prefix_cache", "", nil); st != 200 {
		t.Fatalf("reset: status %d", st)
	}
	b, ok := s.recv(t, 10*time.Second)
	for ok && b.Events[len(b.Events)-1].Type != "AllBlocksCleared" {
		b, ok = s.recv(t, 10*time.Second)
	}
	if !ok || !reflect.DeepEqual(b.Events, []evt{{Type: "AllBlocksCleared", Len: 1}}) {
		t.Fatalf("after reset got %+v; want a batch with just AllBlocksCleared", b.Events)
	}
	// Byte for byte the reference's vector, but for the 8 timestamp bytes.
	want := kvvectors.ClearedArray().Payload
	if len(b.Raw) != len(want) || !bytes.Equal(b.Raw[:2], want[:2]) || !bytes.Equal(b.Raw[10:], want[10:]) {
		t.Errorf("AllBlocksCleared payload % x; want % x with any timestamp", b.Raw, want)
	}
	if n := len(dump(t, p)); n != 0 {
		t.Errorf("%d blocks cached after reset; want 0", n)
	}
	if c := complete(t, p, words(0, 12), 2); c.Usage.PromptTokensDetails.CachedTokens != 0 {
		t.Errorf("after reset the prompt hit %d cached tokens; want 0", c.Usage.PromptTokensDetails.CachedTokens)
	}
}

func TestDataParallelRankOffsetsPorts(t *testing.T) {
	rank1 := newSub(t)
	// Point rank 1's offset port at the second subscriber by choosing the
	// base so that base+1 is rank1's port.
	cfg := fmt.Sprintf(`{"enable_kv_cache_events":true,"endpoint":"tcp://127.0.0.1:%d","replay_endpoint":"tcp://*:%d"}`, rank1.port-1, mustPort(rank1.replay)-1)
	p := startSim(t, nil, "--kv-events-config", cfg, "--data-parallel-size", "2", "--data-parallel-rank", "1", "--block-size", "4")
	complete(t, p, words(0, 10), 2)
	got := rank1.collect(t, func(b []batch) bool { return len(b) > 0 })
	if got[0].Len != 3 {
		t.Fatalf("batch has %d elements; want 3", got[0].Len)
	}
	for _, blk := range dump(t, p) {
		if blk.DPRank != 1 {
			t.Errorf("block on dp rank %d; want 1", blk.DPRank)
		}
	}
}

func TestCPUOffloadEvents(t *testing.T) {
	s := newSub(t)
	p := startSim(t, nil, "--kv-events-config", s.flag(""), "--block-size", "4", "--sim-cpu-offload-blocks", "16")
	complete(t, p, words(0, 12), 2)
	batches := s.collect(t, func(b []batch) bool { return len(b) > 0 && equalState(t, p, b) })
	var gpu, cpu []uint64
	for _, b := range batches {
		for _, e := range b.Events {
			if e.Type != "BlockStored" {
				continue
			}
			if e.Medium == "CPU" {
				if len(e.Tokens) != 0 {
					t.Errorf("CPU store carries %d tokens; the offloading connector sends none", len(e.Tokens))
				}
				cpu = append(cpu, e.Hashes...)
			} else {
				gpu = append(gpu, e.Hashes...)
			}
		}
	}
	if len(cpu) == 0 || !slices.Equal(cpu, gpu) {
		t.Errorf("CPU stores %v; want the GPU stores %v offloaded", cpu, gpu)
	}
	// As vLLM's V1 engine, the sim advertises no CPU blocks in
	// cache_config_info: the connector's buffer is not CacheConfig's.
	resp, err := http.Get(p.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	var info string
	for _, l := range strings.Split(string(body), "\n") {
		if strings.HasPrefix(l, "vllm:cache_config_info{") {
			info = l
		}
	}
	if !strings.Contains(info, `num_cpu_blocks="None"`) || !strings.Contains(info, `num_gpu_blocks="`) {
		t.Errorf("cache_config_info %q; want num_gpu_blocks and num_cpu_blocks \"None\" with the CPU tier on", info)
	}
}

func TestLoRAKeysAndEvents(t *testing.T) {
	s := newSub(t)
	p := startSim(t, nil, "--kv-events-config", s.flag(""), "--block-size", "4", "--enable-lora", "--lora-modules", "sql=/adapters/sql")
	prompt := words(0, 12)
	complete(t, p, prompt, 2)
	var c completion
	if st := post(t, p.URL+"/v1/completions", map[string]any{"model": "sql", "prompt": prompt, "max_tokens": 2}, &c); st != 200 {
		t.Fatalf("LoRA completion: status %d", st)
	}
	// The adapter changes every block hash: the base model's blocks are no hit.
	if c.Usage.PromptTokensDetails.CachedTokens != 0 {
		t.Errorf("the LoRA request hit %d of the base model's tokens; want 0", c.Usage.PromptTokensDetails.CachedTokens)
	}
	batches := s.collect(t, func(b []batch) bool { return len(b) > 0 && equalState(t, p, b) })
	var base, lora []uint64
	for _, b := range batches {
		for _, e := range b.Events {
			if e.Type != "BlockStored" {
				continue
			}
			if bytes.Contains(b.Raw, []byte("\xa3sql")) {
				lora = append(lora, e.Hashes...)
			} else {
				base = append(base, e.Hashes...)
			}
		}
	}
	if len(base) == 0 || len(lora) != len(base) || slices.Equal(base, lora) {
		t.Errorf("base stores %v, LoRA stores %v; want as many blocks under different hashes", base, lora)
	}
}
