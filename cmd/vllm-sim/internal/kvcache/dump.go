package kvcache

import "sort"

// BlockInfo describes one block the cache holds, for the ground-truth dump.
type BlockInfo struct {
	Hash    Hash
	Parent  *Hash
	Tokens  []uint32
	Medium  string
	BlockID int // GPU block id; -1 on CPU
	RefCnt  int
	// Group is the block's KV-cache group (0 on CPU) and Spec that group's
	// kind and window.
	Group int
	Spec  GroupSpec
}

// Blocks lists every block the prefix cache holds: GPU blocks with a hash
// (in use or free), one entry per physical copy, then the CPU tier.
func (p *Pool) Blocks() []BlockInfo {
	var out []BlockInfo
	for _, copies := range p.cached {
		for _, b := range copies {
			out = append(out, BlockInfo{Hash: b.hash, Parent: b.parent, Tokens: b.tokens, Medium: MediumGPU, BlockID: b.id, RefCnt: b.refCnt, Group: b.group, Spec: p.groups[b.group]})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].BlockID < out[j].BlockID })
	if p.cpu != nil {
		for e := p.cpu.lru.Front(); e != nil; e = e.Next() {
			ce := e.Value.(*cpuEntry)
			out = append(out, BlockInfo{Hash: ce.hash, Parent: ce.parent, Tokens: ce.tokens, Medium: MediumCPU, BlockID: -1, Spec: p.groups[0]})
		}
	}
	return out
}

// NumCached is the number of GPU blocks holding a hash.
func (p *Pool) NumCached() int {
	n := 0
	for _, copies := range p.cached {
		n += len(copies)
	}
	return n
}
