package kvevents_test

import (
	"slices"
	"testing"

	"github.com/llmgw/llmgw/driver/kvevents"
	"github.com/llmgw/llmgw/driver/kvevents/kvtest"
	"github.com/llmgw/llmgw/internal/blockkey"
	"github.com/llmgw/llmgw/internal/kvwire"
)

// cpuStored is a BlockStored as vLLM's offloading connector sends it
// (offloading_connector.py, take_events): medium CPU, no tokens, no
// parent, block_size the offloaded block size, and each offloaded block
// named by the hash of the last GPU block it holds (_get_block_hashes).
func cpuStored(bs int, hashes ...uint64) kvevents.Event {
	return kvevents.Event{Type: kvevents.BlockStored, Hashes: hashes, BlockSize: bs, Medium: kvevents.MediumCPU}
}

func cpu(keys ...blockkey.Key) []kvevents.Block {
	var out []kvevents.Block
	for _, k := range keys {
		out = append(out, kvevents.Block{Tier: kvwire.TierCPU, Key: k})
	}
	return out
}

// TestOffloadedBlocksCoverGPUBlocks: eight GPU blocks of 4 tokens (engine
// hashes 1..8) offloaded in blocks of 16 (hashes 4 and 8) are held in the
// CPU tier as the eight GPU blocks' keys, stay there when the GPU evicts
// them, and leave it when the connector removes the offloaded block that
// holds them. A size that is not a multiple of the GPU block size names
// no GPU block: counted, not published.
func TestOffloadedBlocksCoverGPUBlocks(t *testing.T) {
	const bs = 4
	toks := kvtest.Toks(500, 8*bs)
	keys := blockkey.Keys(nil, blockkey.Root(""), toks, bs)
	gpuHashes := []uint64{1, 2, 3, 4, 5, 6, 7, 8}
	sorted := func(b []kvevents.Block) []kvevents.Block { return kvtest.SortBlocks(b) }
	steps := []struct {
		name string
		evs  []kvevents.Event
		want []kvevents.Block
	}{
		{"GPU store", []kvevents.Event{kvtest.Stored(gpuHashes, nil, toks, bs)}, sorted(kvtest.GPU(0, keys...))},
		{"offload in blocks of 16", []kvevents.Event{cpuStored(4*bs, 4, 8)}, sorted(append(kvtest.GPU(0, keys...), cpu(keys...)...))},
		{"GPU evicts all", []kvevents.Event{kvtest.Removed(kvevents.MediumGPU, gpuHashes...)}, sorted(cpu(keys...))},
		{"the connector evicts the first offloaded block", []kvevents.Event{kvtest.Removed(kvevents.MediumCPU, 4)}, sorted(cpu(keys[4:]...))},
		{"and the second", []kvevents.Event{kvtest.Removed(kvevents.MediumCPU, 8)}, nil},
	}
	s := kvevents.NewStore()
	sess := s.Open()
	defer sess.Close()
	sess.Drain() // the first drain is a snapshot
	for i, st := range steps {
		kvtest.Apply(s, "r", 0, st.evs...)
		if got := s.Blocks("r"); !slices.Equal(got, st.want) {
			t.Fatalf("%s: blocks %v; want %v", st.name, got, st.want)
		}
		// The routers are told the offloaded block size with every entry
		// once the engine has sent it: they predict whole-block loads.
		want := 0
		if i >= 1 {
			want = 4 * bs
		}
		if got := s.OffloadBlockSize("r"); got != want {
			t.Errorf("%s: offloaded block size %d; want %d", st.name, got, want)
		}
		if d := sess.Drain(); len(d.Replicas) != 1 || d.Replicas[0].OffloadBlockSize != want {
			t.Errorf("%s: delta %+v; want one replica with offloaded block size %d", st.name, d.Replicas, want)
		}
	}
	snap := s.Open()
	d := snap.Drain()
	snap.Close()
	if !d.Snapshot || len(d.Replicas) != 1 || d.Replicas[0].OffloadBlockSize != 4*bs {
		t.Errorf("snapshot %+v; want the replica with offloaded block size %d", d, 4*bs)
	}
	if got := s.Stats(); got.OffloadUnmapped != 0 || got.UnknownRemoves != 0 {
		t.Errorf("stats %+v; want every offloaded block mapped and removed", got)
	}

	odd := kvevents.NewStore()
	kvtest.Apply(odd, "r", 0, kvtest.Stored(gpuHashes, nil, toks, bs), cpuStored(6, 8))
	if got := odd.Blocks("r"); !slices.Equal(got, kvtest.SortBlocks(kvtest.GPU(0, keys...))) || odd.Stats().OffloadUnmapped != 1 {
		t.Errorf("offloaded size 6 over GPU 4: blocks %v, stats %+v; want GPU only, one unmapped", got, odd.Stats())
	}
}
