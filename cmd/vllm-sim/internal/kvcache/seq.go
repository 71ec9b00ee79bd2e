package kvcache

// Seq is one request's view of the cache: its tokens, the blocks it holds and
// how far it has been computed. The engine owns it.
type Seq struct {
	Tokens []uint32 // prompt, then generated tokens
	LoRA   string   // mixed into block hashes
	LoRAID int      // vLLM's lora_int_id, reported in events
	// CacheSalt is the request's cache_salt: mixed into block 0 only, so
	// salted and unsalted prompts share no block and equal salts share all.
	CacheSalt string

	hashes      []Hash     // hashes of the full blocks of Tokens, computed lazily
	groups      []seqGroup // one per KV-cache group of the pool
	NumComputed int        // tokens whose KV exists
}

// seqGroup is what one KV-cache group's manager keeps for a request:
// vLLM's req_to_blocks (nil for the null block: a position the group
// skips) and num_cached_block.
type seqGroup struct {
	blocks    []*block
	numCached int // leading positions entered into the prefix cache
}

// extraKeys is vLLM's generate_block_hash_extra_keys for block i of a text
// prompt: the LoRA name, then the cache_salt on block 0 (an empty salt adds
// nothing, as vLLM tests its truthiness); nil when there are none.
func (s *Seq) extraKeys(i int) []string {
	var keys []string
	if s.LoRA != "" {
		keys = append(keys, s.LoRA)
	}
	if i == 0 && s.CacheSalt != "" {
		keys = append(keys, s.CacheSalt)
	}
	return keys
}

// NumBlocks is the number of blocks the sequence holds, over all groups.
func (s *Seq) NumBlocks() int {
	n := 0
	for _, g := range s.groups {
		for _, b := range g.blocks {
			if b != nil {
				n++
			}
		}
	}
	return n
}

func (p *Pool) ensureGroups(s *Seq) {
	if len(s.groups) != len(p.groups) {
		s.groups = make([]seqGroup, len(p.groups))
	}
}

func (p *Pool) blockHashes(s *Seq, upto int) []Hash {
	for i := len(s.hashes); i < upto; i++ {
		var parent *Hash
		if i > 0 {
			parent = &s.hashes[i-1]
		}
		tok := s.Tokens[i*p.blockSize : (i+1)*p.blockSize]
		s.hashes = append(s.hashes, p.hasher.Block(parent, tok, s.extraKeys(i)))
	}
	return s.hashes[:upto]
}

// Match is the result of a prefix lookup.
type Match struct {
	gpu    [][]*block // per group: the hit's blocks, nil at skipped positions
	hitGPU int        // blocks of the hit found on GPU
	cpu    int        // blocks after the GPU hits found in the CPU tier
	// Tokens is the number of prompt tokens whose KV can be reused: vLLM's
	// num_cached_tokens, reported as usage.prompt_tokens_details.cached_tokens.
	Tokens int
	// CPUTokens is the part of Tokens that must be loaded from the CPU tier.
	CPUTokens int
}

// Lookup finds the longest cached prefix of s, at most len(Tokens)-1 tokens:
// like vLLM, the last token is always recomputed to obtain logits. With
// several groups the hit is the length all groups agree on (findLongest).
func (p *Pool) Lookup(s *Seq) Match {
	maxBlocks := (len(s.Tokens) - 1) / p.blockSize
	if maxBlocks < 0 || p.noCache {
		maxBlocks = 0
	}
	hashes := p.blockHashes(s, maxBlocks)
	var m Match
	m.gpu, m.hitGPU = p.findLongest(hashes)
	if p.cpu != nil {
		m.cpu = p.cpu.hits(hashes, m.hitGPU)
	}
	m.Tokens = (m.hitGPU + m.cpu) * p.blockSize
	m.CPUTokens = m.cpu * p.blockSize
	return m
}

// newBlocks lists the positions group g must allocate for a sequence
// holding have positions that needs total, with prompt tokens in the
// prompt. Attention groups allocate every position. A Mamba group (vLLM's
// align mode) allocates only where it saves state: the last full block of
// the prompt (vLLM splits the prefill there) and the running block; the
// positions before are null blocks.
func (p *Pool) newBlocks(g, have, total, prompt int) []int {
	var pos []int
	if p.groups[g].Kind != Mamba {
		for i := have; i < total; i++ {
			pos = append(pos, i)
		}
		return pos
	}
	if last := prompt/p.blockSize - 1; last >= have && last < total-1 {
		pos = append(pos, last)
	}
	if total-1 >= have {
		pos = append(pos, total-1)
	}
	return pos
}

// place allocates blocks at the given positions of group g, padding the
// skipped ones with null blocks.
func (p *Pool) place(s *Seq, g int, pos []int) {
	gs := &s.groups[g]
	for _, i := range pos {
		for len(gs.blocks) < i {
			gs.blocks = append(gs.blocks, nil)
		}
		b := p.allocate()
		b.group = g
		gs.blocks = append(gs.blocks, b)
	}
}

// Admit takes the matched blocks and allocates new ones for the rest of the
// prompt, or fails with ErrNoSpace and changes nothing. Blocks loaded from the
// CPU tier become new GPU blocks and are cached at once (their KV arrives
// complete), so they are stored on GPU in this step's batch.
func (p *Pool) Admit(s *Seq, m Match) error {
	p.ensureGroups(s)
	if len(m.gpu) != len(p.groups) { // a Match not from this pool's Lookup: no hit
		m = Match{gpu: make([][]*block, len(p.groups))}
	}
	total := p.blocksFor(len(s.Tokens))
	need := 0
	// Matched blocks that sit on the free list stop being free when touched.
	freeHits := 0
	plans := make([][]int, len(p.groups))
	for g := range p.groups {
		hits := m.gpu[g]
		for _, b := range hits {
			if b != nil && b.free {
				freeHits++
			}
		}
		plans[g] = p.newBlocks(g, len(hits), total, len(s.Tokens))
		need += len(plans[g])
	}
	if need > p.numFree-freeHits {
		return ErrNoSpace
	}
	for g := range p.groups {
		gs := &s.groups[g]
		for _, b := range m.gpu[g] {
			if b != nil {
				p.touch(b)
			}
			gs.blocks = append(gs.blocks, b)
		}
		gs.numCached = len(m.gpu[g])
	}
	for g := range p.groups {
		p.place(s, g, plans[g])
	}
	if m.cpu > 0 {
		for _, h := range s.hashes[m.hitGPU : m.hitGPU+m.cpu] {
			p.cpu.touch(h)
		}
	}
	s.NumComputed = m.Tokens
	p.commit(s, m.Tokens)
	return nil
}

func (p *Pool) blocksFor(tokens int) int { return (tokens + p.blockSize - 1) / p.blockSize }

// Grow makes room for the sequence's tokens (after the engine appended a
// generated one), allocating a block when the last one is full. It first
// frees what the groups no longer need (vLLM's remove_skipped_blocks, at
// the start of each step's allocation).
func (p *Pool) Grow(s *Seq) error {
	p.ensureGroups(s)
	p.removeSkipped(s)
	total := p.blocksFor(len(s.Tokens))
	need := 0
	plans := make([][]int, len(p.groups))
	for g := range p.groups {
		have := len(s.groups[g].blocks)
		if have < total {
			plans[g] = p.newBlocks(g, have, total, total*p.blockSize)
			need += len(plans[g])
		}
	}
	if need > p.numFree {
		return ErrNoSpace
	}
	for g := range p.groups {
		p.place(s, g, plans[g])
	}
	return nil
}

// removeSkipped frees the blocks a group will never read again, replacing
// them with null blocks, newest first so that the older are evicted last:
// for a sliding window the blocks wholly before the window of the next
// token, for Mamba every block before the one holding the latest state.
// Freed blocks stay cached until evicted, as in vLLM.
func (p *Pool) removeSkipped(s *Seq) {
	n := s.NumComputed
	for g, spec := range p.groups {
		var skipped int
		switch spec.Kind {
		case SlidingWindow:
			skipped = max(0, n-spec.Window+1) / p.blockSize
		case Mamba:
			skipped = max(0, n-1) / p.blockSize
		default:
			continue
		}
		gs := &s.groups[g]
		for i := min(skipped, len(gs.blocks)) - 1; i >= 0; i-- {
			b := gs.blocks[i]
			if b == nil {
				if spec.Kind == SlidingWindow {
					break // the ones before were nulled by an earlier call
				}
				continue
			}
			gs.blocks[i] = nil
			p.release(b)
		}
	}
}

func (p *Pool) release(b *block) {
	b.refCnt--
	if b.refCnt == 0 {
		p.pushFree(b)
	}
}

// Compute records that the KV of the first n tokens exists, or will by the
// end of the step that scheduled them (the engine calls it as it schedules
// a step's tokens, as vLLM's allocate_slots calls cache_blocks), and enters
// the blocks that became full into the prefix cache, emitting one
// BlockStored per group for them.
func (p *Pool) Compute(s *Seq, n int) {
	p.ensureGroups(s)
	s.NumComputed = n
	p.commit(s, n)
}

// commit caches, group by group, the full blocks among the first n tokens
// that are not yet cached, like vLLM's cache_full_blocks: null blocks are
// skipped, so a group's BlockStored names only the blocks it keeps while its
// token_ids span the whole range.
func (p *Pool) commit(s *Seq, n int) {
	if p.noCache {
		return
	}
	for g := range p.groups {
		gs := &s.groups[g]
		full := min(n/p.blockSize, len(gs.blocks))
		if full <= gs.numCached {
			continue
		}
		hashes := p.blockHashes(s, full)
		first := gs.numCached
		ev := Event{
			Kind:      BlockStored,
			Tokens:    append([]uint32(nil), s.Tokens[first*p.blockSize:full*p.blockSize]...),
			BlockSize: p.blockSize,
			LoRAName:  s.LoRA,
			LoRAID:    s.LoRAID,
			Medium:    MediumGPU,
		}
		if first > 0 {
			parent := hashes[first-1]
			ev.Parent = &parent
		}
		for i := first; i < full; i++ {
			b := gs.blocks[i]
			if b == nil {
				continue
			}
			ev.Hashes = append(ev.Hashes, hashes[i])
			ev.Extra = append(ev.Extra, s.extraKeys(i))
			b.hashed, b.hash, b.group = true, hashes[i], g
			if i > 0 {
				parent := hashes[i-1]
				b.parent = &parent
			}
			off := (i - first) * p.blockSize
			b.tokens = ev.Tokens[off : off+p.blockSize : off+p.blockSize]
			p.cached[b.hash] = append(p.cached[b.hash], b)
		}
		gs.numCached = full
		p.events = append(p.events, p.groupEvent(ev, g))
		if p.cpu != nil {
			p.offload(s, first, full)
		}
	}
}

// Free releases the sequence's blocks, group by group in reverse order, so
// that when space is needed the tail of a conversation is evicted before its
// shared prefix.
func (p *Pool) Free(s *Seq) {
	for g := range s.groups {
		blocks := s.groups[g].blocks
		for i := len(blocks) - 1; i >= 0; i-- {
			if blocks[i] != nil {
				p.release(blocks[i])
			}
		}
	}
	s.groups, s.NumComputed = nil, 0
}
