package replicas

import (
	"fmt"
	"sync"
	"sync/atomic"

	"github.com/llmgw/llmgw/consul"
)

// Where a replica's engine block size was learned (BlockSizes.Source).
const (
	// SizeFromEvents: the block_size of the BlockStored events its driver
	// forwards (router/ingest.Sink.BlockSize), the size its keys are cut at.
	SizeFromEvents = "kv_events"
	// SizeFromMetrics: the block_size label of vllm:cache_config_info,
	// read before any event arrives (or on a replica without events).
	SizeFromMetrics = "metrics"
)

// BlockSizes is what the set knows of one replica's KV block size. The
// engine's own size decides: vLLM raises the size a job asks for (FlashMLA
// forces a multiple of 64, a hybrid attention/Mamba model raises its
// attention block size to the Mamba page), so the advertised Consul meta
// can be wrong, and keys cut at a wrong size match nothing.
type BlockSizes struct {
	// Meta is the size the replica advertises (consul.MetaBlockSize, or a
	// static replica's block_size); consul.DefaultBlockSize when neither.
	Meta int
	// Engine is the engine's own size, 0 while unknown; Source says where
	// it came from (SizeFromEvents before SizeFromMetrics).
	Engine int
	Source string
}

// Effective is the size the replica's keys are cut at: the engine's when
// known, else the advertised one.
func (b BlockSizes) Effective() int {
	if b.Engine > 0 {
		return b.Engine
	}
	return b.Meta
}

// Mismatch says how the engine's size disagrees with the advertised one
// ("" when it does not, or is unknown): the jobspec's meta, or the
// driver's block_size, is not what the engine runs with.
func (b BlockSizes) Mismatch() string {
	if b.Engine == 0 || b.Engine == b.Meta {
		return ""
	}
	return fmt.Sprintf("engine block size %d (%s) differs from the advertised %s %d; keys use the engine's", b.Engine, b.Source, consul.MetaBlockSize, b.Meta)
}

// engineSizes is the part of the KV ingest that knows the block size each
// engine reports in its events (router/ingest.Sink); a KVState without it
// leaves the events' sizes unknown.
type engineSizes interface {
	BlockSize(replica string) int
}

// sizes is the set's block-size state: the sizes scraped from engines'
// metrics, and each model's key size, cached until the synced set, the
// replica list or a scraped size changes (epoch).
type sizes struct {
	events engineSizes
	mu     sync.Mutex
	metric map[string]int // replica -> vllm:cache_config_info block_size
	epoch  atomic.Uint64
	keys   atomic.Pointer[keySizes]
}

// keySizes is each model's key size as of one synced generation and epoch.
type keySizes struct {
	gen, epoch uint64
	byModel    map[string]int
}

// NoteScrapedBlockSize records the block_size label of replica's
// vllm:cache_config_info (0: not exported). It is the engine's size until
// its events say otherwise.
func (s *Set) NoteScrapedBlockSize(replica string, size int) {
	if size <= 0 {
		return
	}
	s.sizes.mu.Lock()
	changed := s.sizes.metric[replica] != size
	s.sizes.metric[replica] = size
	s.sizes.mu.Unlock()
	if changed {
		s.sizes.epoch.Add(1)
	}
}

// forgetScraped drops what was scraped of replicas that left.
func (s *Set) forgetScraped(gone []string) {
	s.sizes.mu.Lock()
	for _, id := range gone {
		delete(s.sizes.metric, id)
	}
	s.sizes.mu.Unlock()
}

// BlockSizes is what the set knows of replica's block size.
func (s *Set) BlockSizes(replica string) BlockSizes {
	r, _ := s.Get(replica)
	return s.blockSizesOf(r)
}

func (s *Set) blockSizesOf(r Replica) BlockSizes {
	b := BlockSizes{Meta: r.BlockSize}
	if b.Meta <= 0 {
		b.Meta = consul.DefaultBlockSize
	}
	if s.sizes.events != nil {
		if n := s.sizes.events.BlockSize(r.ID); n > 0 {
			b.Engine, b.Source = n, SizeFromEvents
			return b
		}
	}
	s.sizes.mu.Lock()
	n := s.sizes.metric[r.ID]
	s.sizes.mu.Unlock()
	if n > 0 {
		b.Engine, b.Source = n, SizeFromMetrics
	}
	return b
}

// KeyBlockSize is the block size prompts for model (a base model) are
// keyed at: the effective size most of its synced replicas share, ties to
// the first of them by id; with none synced, its first replica's. Keys
// are per block size, so a synced replica at another size routes approx
// with the reason (ModeReason), never exact with keys that cannot match.
// A mixed model is a fleet mid-rollout; keying each request once keeps
// the request path's cost flat.
func (s *Set) KeyBlockSize(model string) int {
	gen, epoch := s.kv.SyncedGeneration(), s.sizes.epoch.Load()
	if k := s.sizes.keys.Load(); k != nil && k.gen == gen && k.epoch == epoch {
		if n, ok := k.byModel[model]; ok {
			return n
		}
	}
	s.mu.RLock()
	byModel := make(map[string]int, len(s.byModel))
	for m, rs := range s.byModel {
		byModel[m] = s.keySizeOf(rs)
	}
	s.mu.RUnlock()
	s.sizes.keys.Store(&keySizes{gen: gen, epoch: epoch, byModel: byModel})
	if n, ok := byModel[model]; ok {
		return n
	}
	return consul.DefaultBlockSize
}

// keySizeOf is KeyBlockSize of one model's replicas, sorted by id.
func (s *Set) keySizeOf(rs []Replica) int {
	type tally struct{ size, n int }
	var counts []tally
	best := -1
	for _, r := range rs {
		if !s.kv.Synced(r.ID) {
			continue
		}
		size := s.blockSizesOf(r).Effective()
		i := 0
		for i < len(counts) && counts[i].size != size {
			i++
		}
		if i == len(counts) {
			counts = append(counts, tally{size: size})
		}
		counts[i].n++
		if best < 0 || counts[i].n > counts[best].n {
			best = i
		}
	}
	switch {
	case best >= 0:
		return counts[best].size
	case len(rs) > 0:
		return s.blockSizesOf(rs[0]).Effective()
	}
	return consul.DefaultBlockSize
}

// sizeReason says why a synced replica routes approx for its block size
// ("" when its size is its model's key size).
func (s *Set) sizeReason(r Replica) string {
	eff, key := s.blockSizesOf(r).Effective(), s.KeyBlockSize(r.Model)
	if eff == key {
		return ""
	}
	return fmt.Sprintf("block size %d differs from the %d that %s's prompts are keyed at (most of its exact replicas'); keys are per block size", eff, key, r.Model)
}
