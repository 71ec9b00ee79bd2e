package kvcache

// specGroup is vLLM's SpecGroup: the KV-cache groups sharing one spec,
// looked up together (a hit needs the block in every one of them).
type specGroup struct {
	spec GroupSpec
	ids  []int
}

// specGroupsOf groups equal specs in order of first appearance, then puts
// full attention first (a stable sort), as vLLM's
// HybridKVCacheCoordinator.verify_and_split_kv_cache_groups does.
func specGroupsOf(groups []GroupSpec) []specGroup {
	var out []specGroup
	for i, g := range groups {
		found := false
		for j := range out {
			if out[j].spec == g {
				out[j].ids = append(out[j].ids, i)
				found = true
				break
			}
		}
		if !found {
			out = append(out, specGroup{spec: g, ids: []int{i}})
		}
	}
	var sorted []specGroup
	for _, sg := range out {
		if sg.spec.Kind == FullAttention {
			sorted = append(sorted, sg)
		}
	}
	for _, sg := range out {
		if sg.spec.Kind != FullAttention {
			sorted = append(sorted, sg)
		}
	}
	return sorted
}

// cachedIn is vLLM's BlockPool.get_cached_block over several groups: it
// fills buf with the first cached copy of h in each group of ids and
// reports whether every group has one.
func (p *Pool) cachedIn(h Hash, ids []int, buf []*block) bool {
	for i, g := range ids {
		b := p.firstCopy(h, g)
		if b == nil {
			return false
		}
		buf[i] = b
	}
	return true
}

// find is one spec group's find_longest_cache_hit over the first maxBlocks
// block hashes. It returns, per group of sg, the hit's blocks (nil for
// vLLM's null block: a position the group does not need) and the hit length
// in blocks.
func (p *Pool) find(sg specGroup, hashes []Hash, maxBlocks int) ([][]*block, int) {
	out := make([][]*block, len(sg.ids))
	c := make([]*block, len(sg.ids))
	switch sg.spec.Kind {
	case SlidingWindow:
		// SlidingWindowManager: scan right to left for the blocks covering
		// the window before a candidate end (sliding_window-1 tokens: the
		// token at the end is in its own window); with none, the leading
		// run of cached blocks is still a hit.
		need := (sg.spec.Window - 1 + p.blockSize - 1) / p.blockSize
		for j := range out {
			out[j] = make([]*block, maxBlocks)
		}
		run, n := 0, -1
		for i := maxBlocks - 1; i >= 0; i-- {
			if !p.cachedIn(hashes[i], sg.ids, c) {
				run = 0
				continue
			}
			for j := range out {
				out[j][i] = c[j]
			}
			run++
			if run >= need {
				n = i + run
				break
			}
		}
		if n < 0 {
			n = run
		}
		for j := range out {
			out[j] = out[j][:n]
		}
		return out, n
	case Mamba:
		// MambaManager: the state saved at the latest cached block; the
		// positions before it are null blocks.
		for i := maxBlocks - 1; i >= 0; i-- {
			if p.cachedIn(hashes[i], sg.ids, c) {
				for j := range out {
					out[j] = make([]*block, i+1)
					out[j][i] = c[j]
				}
				return out, i + 1
			}
		}
		return out, 0
	}
	// FullAttentionManager: every block from the first, stopping at a miss.
	n := 0
	for n < maxBlocks && p.cachedIn(hashes[n], sg.ids, c) {
		for j := range out {
			out[j] = append(out[j], c[j])
		}
		n++
	}
	return out, n
}

// findLongest is the coordinator's find_longest_cache_hit: one group's rule
// for a unitary model; for a hybrid one, vLLM's fixed point, where each
// spec group accepts the candidate length or shortens it until all agree
// (one pass when the model is one full-attention spec plus one other). It
// returns each group's hit blocks and the agreed length in blocks.
func (p *Pool) findLongest(hashes []Hash) ([][]*block, int) {
	res := make([][]*block, len(p.groups))
	if len(p.specs) == 1 && len(p.groups) == 1 {
		blocks, n := p.find(p.specs[0], hashes, len(hashes))
		res[0] = blocks[0]
		return res, n
	}
	simple := len(p.specs) == 2 && p.specs[0].spec.Kind == FullAttention
	lens := make([]int, len(p.groups))
	have := make([]bool, len(p.groups))
	hit := len(hashes)
	for {
		curr := hit
		for _, sg := range p.specs {
			first := sg.ids[0]
			if sg.spec.Kind == FullAttention && have[first] {
				// Full attention is downward-closed: trim, never look again.
				curr = min(curr, lens[first])
				continue
			}
			blocks, n := p.find(sg, hashes, curr)
			curr = n
			for j, g := range sg.ids {
				res[g], lens[g], have[g] = blocks[j], n, true
			}
		}
		if curr >= hit {
			break
		}
		hit = curr
		if simple {
			break
		}
	}
	for _, sg := range p.specs {
		if sg.spec.Kind != FullAttention {
			continue
		}
		for _, g := range sg.ids {
			res[g] = res[g][:min(len(res[g]), hit)]
		}
	}
	return res, hit
}

// firstCopy is the first cached copy of h in group g, or nil.
func (p *Pool) firstCopy(h Hash, g int) *block {
	for _, b := range p.cached[h] {
		if b.group == g {
			return b
		}
	}
	return nil
}
