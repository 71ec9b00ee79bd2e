package kvgroups

import (
	"sync"

	"github.com/llmgw/llmgw/internal/kvwire"
	"github.com/llmgw/llmgw/router/index"
)

// Index answers the scheduler's prefix lookups with the engine's hit rule
// over every group of each candidate (the scheduler's PrefixIndex).
type Index struct {
	models *index.Models
	reg    *Registry
	pool   sync.Pool // *scratch
}

// NewIndex returns an Index over models whose layouts come from reg.
func NewIndex(models *index.Models, reg *Registry) *Index {
	return &Index{models: models, reg: reg}
}

// GroupHit is one group's part of a replica's hit: the longest length,
// in blocks, the group accepted when the rule last asked it.
type GroupHit struct {
	Group  int    `json:"group"`
	Kind   string `json:"kind"`
	Window int    `json:"window,omitempty"`
	Blocks int    `json:"blocks"`
}

// LookupReplicas is index.Models.LookupReplicas with the hybrid rule for
// hybrid candidates; the hit of every candidate is at most len(keys).
func (x *Index) LookupReplicas(model string, keys []uint64, stride int, replicas []string, out []index.Match) []index.Match {
	return x.LookupReplicasMax(model, keys, stride, len(keys), replicas, out)
}

// LookupReplicasMax is LookupReplicas with hybrid candidates' hits capped
// at maxBlocks: vLLM looks for a hit of at most the prompt's length less
// one token, and a Mamba group's state at a prompt's very end cannot be
// used by the same prompt. Full-attention candidates are answered as
// index.Models answers them.
//
// A replica whose offloaded (CPU) tier keeps blocks larger than its GPU
// blocks is answered with the offloading connector's whole-block rule
// (wholeOffloaded), whatever its layout.
func (x *Index) LookupReplicasMax(model string, keys []uint64, stride, maxBlocks int, replicas []string, out []index.Match) []index.Match {
	out = x.models.LookupReplicas(model, keys, stride, replicas, out)
	if x.reg.Any() {
		var sc *scratch
		for i, id := range replicas {
			l := x.reg.Of(id)
			if !l.Hybrid() {
				continue
			}
			if sc == nil {
				sc = x.scratch(model, keys, stride, replicas)
				defer x.pool.Put(sc)
			}
			out[i] = sc.hit(i, l, out[i], min(maxBlocks, len(keys)), nil)
		}
	}
	return x.offloaded(out, replicas, min(maxBlocks, len(keys)))
}

// offloaded applies wholeOffloaded to the matches of replicas whose
// offloaded blocks are larger than their GPU blocks; limit is the most
// blocks the engine looks for.
func (x *Index) offloaded(out []index.Match, replicas []string, limit int) []index.Match {
	if !x.reg.AnyOffload() {
		return out
	}
	for i, id := range replicas {
		if f := x.reg.OffloadFactor(id); f > 1 {
			out[i] = wholeOffloaded(out[i], f, limit)
		}
	}
	return out
}

// Explain returns each group's part of replica's hit for the prompt keys,
// and the hit; nil groups for a full-attention replica.
func (x *Index) Explain(model string, keys []uint64, maxBlocks int, replica string) (index.Match, []GroupHit) {
	ids := []string{replica}
	m := x.models.LookupReplicas(model, keys, 1, ids, nil)[0]
	l := x.reg.Of(replica)
	if !l.Hybrid() {
		return x.offloaded([]index.Match{m}, ids, min(maxBlocks, len(keys)))[0], nil
	}
	sc := x.scratch(model, keys, 1, ids)
	defer x.pool.Put(sc)
	parts := make([]GroupHit, 0, len(l.Groups))
	m = sc.hit(0, l, m, min(maxBlocks, len(keys)), &parts)
	return x.offloaded([]index.Match{m}, ids, min(maxBlocks, len(keys)))[0], parts
}

// EndStateOnly reports whether replica has a Mamba group (scheduler's
// HybridIndex).
func (x *Index) EndStateOnly(replica string) bool { return x.reg.Of(replica).Mamba() }

// Layout is replica's layout in effect (nil: one full-attention group).
func (x *Index) Layout(replica string) *Layout { return x.reg.Of(replica) }

// scratch is one lookup's memory: the groups' answers per block, asked for
// every candidate at once and remembered, since the rule asks a group
// about the same blocks for each hybrid candidate.
type scratch struct {
	x        *Index
	model    string
	keys     []uint64
	stride   int
	replicas []string
	held     map[int][]int8 // group -> per (block, candidate): 0 not asked, 1 missing, 2 held
	full     map[int][]index.Match
	one      []index.Match
}

func (x *Index) scratch(model string, keys []uint64, stride int, replicas []string) *scratch {
	sc, _ := x.pool.Get().(*scratch)
	if sc == nil {
		sc = &scratch{held: map[int][]int8{}, full: map[int][]index.Match{}}
	}
	sc.x, sc.model, sc.keys, sc.stride, sc.replicas = x, model, keys, stride, replicas
	clear(sc.held)
	clear(sc.full)
	return sc
}

// has reports whether candidate c holds block j in group g.
func (sc *scratch) has(g, primary, c, j int) bool {
	n := len(sc.replicas)
	h := sc.held[g]
	if h == nil {
		h = make([]int8, len(sc.keys)*n)
		sc.held[g] = h
	}
	if v := h[j*n+c]; v != 0 {
		return v == 2
	}
	sc.one = sc.x.models.LookupReplicas(IndexName(sc.model, g, primary), sc.keys[j:j+1], 1, sc.replicas, sc.one)
	for i, m := range sc.one {
		h[j*n+i] = 1
		if m.Blocks > 0 {
			h[j*n+i] = 2
		}
	}
	return h[j*n+c] == 2
}

// fullHit is candidate c's hit in full-attention group g.
func (sc *scratch) fullHit(g, primary, c int, base index.Match) int {
	if g == primary {
		return base.Blocks
	}
	m, ok := sc.full[g]
	if !ok {
		m = sc.x.models.LookupReplicas(IndexName(sc.model, g, primary), sc.keys, sc.stride, sc.replicas, nil)
		sc.full[g] = m
	}
	return m[c].Blocks
}

// hit applies the rule to candidate c of layout l, whose primary group's
// match is base; parts, when not nil, receives each group's part.
func (sc *scratch) hit(c int, l *Layout, base index.Match, maxBlocks int, parts *[]GroupHit) index.Match {
	hit := maxBlocks
	per := make([]int, len(l.Groups)) // each group's last answer
	for i, g := range l.Groups {
		if isFull(g.Kind) && l.Indexed(g.Index) {
			per[i] = min(sc.fullHit(g.Index, l.primary, c, base), maxBlocks)
			hit = min(hit, per[i])
		}
	}
	blockSize := l.Groups[0].BlockSize
	for hit > 0 {
		prev := hit
		for i, g := range l.Groups {
			if !l.Indexed(g.Index) {
				continue
			}
			switch g.Kind {
			case kvwire.KindSlidingWindow:
				hit = sc.windowHit(g, l.primary, c, hit, blockSize)
			case kvwire.KindMamba:
				hit = sc.mambaHit(g, l.primary, c, hit)
			default:
				continue
			}
			per[i] = hit
		}
		if hit == prev {
			break
		}
	}
	if parts != nil {
		for i, g := range l.Groups {
			*parts = append(*parts, GroupHit{Group: g.Index, Kind: g.Kind.String(), Window: g.Window, Blocks: per[i]})
		}
	}
	m := base
	m.Blocks = hit
	m.GPUBlocks, m.GPURun = min(base.GPUBlocks, hit), min(base.GPURun, hit)
	if hit > base.Blocks && !isFull(l.kindOf(l.primary)) {
		m.GPUBlocks, m.GPURun = hit, hit // no full-attention group: the tier is not tracked past the primary group's
	}
	return m
}

func (l *Layout) kindOf(g int) kvwire.Kind {
	for _, s := range l.Groups {
		if s.Index == g {
			return s.Kind
		}
	}
	return kvwire.KindFull
}

// windowHit is vLLM's SlidingWindowManager.find_longest_cache_hit: from
// the right, the first run of ceil((window-1)/block size) held blocks ends
// the hit; without one, the run of held blocks from block 0 is the hit.
// vLLM reads block by block; this asks the group's index for a whole
// window at a time (its walk counts the leading held blocks), and after a
// miss moves the window's end to the missing block, since no window
// holding it can be a hit: the same answer in a lookup per miss.
func (sc *scratch) windowHit(g kvwire.KVGroupSpec, primary, c, maxBlocks, blockSize int) int {
	bs := g.BlockSize
	if bs <= 0 {
		bs = blockSize
	}
	need := max((g.Window-1+bs-1)/bs, 1) // a window of one token: the block itself
	for end := maxBlocks; end >= need; {
		run := sc.run(g.Index, primary, c, end-need, end)
		if run == need {
			return end
		}
		end = end - need + run // the missing block: a hit ends at or before it
	}
	return sc.run(g.Index, primary, c, 0, min(need, maxBlocks))
}

// run is how many of blocks [from, to) candidate c holds in group g in a
// row from block from.
func (sc *scratch) run(g, primary, c, from, to int) int {
	if from >= to {
		return 0
	}
	sc.one = sc.x.models.LookupReplicas(IndexName(sc.model, g, primary), sc.keys[from:to], 1, sc.replicas, sc.one)
	return sc.one[c].Blocks
}

// mambaHit is vLLM's MambaManager.find_longest_cache_hit: the last block,
// at or before the candidate length, whose state the group holds.
func (sc *scratch) mambaHit(g kvwire.KVGroupSpec, primary, c, maxBlocks int) int {
	for j := maxBlocks - 1; j >= 0; j-- {
		if sc.has(g.Index, primary, c, j) {
			return j + 1
		}
	}
	return 0
}

// ExplainGroups is Explain's group parts as a JSON value for the explain
// API: nil (omitted) for a replica with one full-attention group.
func (x *Index) ExplainGroups(model string, keys []uint64, maxBlocks int, replica string) any {
	if _, parts := x.Explain(model, keys, maxBlocks, replica); parts != nil {
		return parts
	}
	return nil
}
