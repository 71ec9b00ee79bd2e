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

	hashes      []Hash   // hashes of the full blocks of Tokens, computed lazily
	blocks      []*block // blocks held, in order
	numCached   int      // leading blocks entered into the prefix cache
	NumComputed int      // tokens whose KV exists
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

// NumBlocks is the number of blocks the sequence holds.
func (s *Seq) NumBlocks() int { return len(s.blocks) }

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
	gpu []*block
	cpu int // blocks after the GPU hits found in the CPU tier
	// Tokens is the number of prompt tokens whose KV can be reused.
	Tokens int
	// CPUTokens is the part of Tokens that must be loaded from the CPU tier.
	CPUTokens int
}

// Lookup finds the longest cached prefix of s, at most len(Tokens)-1 tokens:
// like vLLM, the last token is always recomputed to obtain logits.
func (p *Pool) Lookup(s *Seq) Match {
	maxBlocks := (len(s.Tokens) - 1) / p.blockSize
	if maxBlocks < 0 || p.noCache {
		maxBlocks = 0
	}
	hashes := p.blockHashes(s, maxBlocks)
	var m Match
	for _, h := range hashes {
		copies := p.cached[h]
		if len(copies) == 0 {
			break
		}
		m.gpu = append(m.gpu, copies[0])
	}
	if p.cpu != nil {
		for _, h := range hashes[len(m.gpu):] {
			if !p.cpu.has(h) {
				break
			}
			m.cpu++
		}
	}
	m.Tokens = (len(m.gpu) + m.cpu) * p.blockSize
	m.CPUTokens = m.cpu * p.blockSize
	return m
}

// Admit takes the matched blocks and allocates new ones for the rest of the
// prompt, or fails with ErrNoSpace and changes nothing. Blocks loaded from the
// CPU tier become new GPU blocks and are cached at once (their KV arrives
// complete), so they are stored on GPU in this step's batch.
func (p *Pool) Admit(s *Seq, m Match) error {
	need := p.blocksFor(len(s.Tokens)) - len(m.gpu)
	// Matched blocks that sit on the free list stop being free when touched.
	freeHits := 0
	for _, b := range m.gpu {
		if b.free {
			freeHits++
		}
	}
	if need > p.numFree-freeHits {
		return ErrNoSpace
	}
	for _, b := range m.gpu {
		p.touch(b)
		s.blocks = append(s.blocks, b)
	}
	s.numCached = len(m.gpu)
	for range need {
		s.blocks = append(s.blocks, p.allocate())
	}
	if m.cpu > 0 {
		for _, h := range s.hashes[len(m.gpu) : len(m.gpu)+m.cpu] {
			p.cpu.touch(h)
		}
	}
	s.NumComputed = m.Tokens
	p.commit(s, m.Tokens)
	return nil
}

func (p *Pool) blocksFor(tokens int) int { return (tokens + p.blockSize - 1) / p.blockSize }

// Grow makes room for the sequence's tokens (after the engine appended a
// generated one), allocating a block when the last one is full.
func (p *Pool) Grow(s *Seq) error {
	need := p.blocksFor(len(s.Tokens)) - len(s.blocks)
	if need > p.numFree {
		return ErrNoSpace
	}
	for range need {
		s.blocks = append(s.blocks, p.allocate())
	}
	return nil
}

// Compute records that the KV of the first n tokens now exists (the engine
// calls it for the tokens a step processes) and enters the blocks that became
// full into the prefix cache, emitting one BlockStored for them.
func (p *Pool) Compute(s *Seq, n int) {
	s.NumComputed = n
	p.commit(s, n)
}

// commit caches the full blocks among the first n tokens that are not yet
// cached, like vLLM's cache_full_blocks.
func (p *Pool) commit(s *Seq, n int) {
	full := min(n/p.blockSize, len(s.blocks))
	if full <= s.numCached || p.noCache {
		return
	}
	hashes := p.blockHashes(s, full)
	first := s.numCached
	ev := Event{
		Kind:      BlockStored,
		Hashes:    append([]Hash(nil), hashes[first:full]...),
		Tokens:    append([]uint32(nil), s.Tokens[first*p.blockSize:full*p.blockSize]...),
		BlockSize: p.blockSize,
		LoRAName:  s.LoRA,
		LoRAID:    s.LoRAID,
		Medium:    MediumGPU,
		Extra:     make([][]string, full-first),
	}
	if first > 0 {
		parent := hashes[first-1]
		ev.Parent = &parent
	}
	for i := first; i < full; i++ {
		ev.Extra[i-first] = s.extraKeys(i)
		b := s.blocks[i]
		b.hashed, b.hash = true, hashes[i]
		if i > 0 {
			parent := hashes[i-1]
			b.parent = &parent
		}
		off := (i - first) * p.blockSize
		b.tokens = ev.Tokens[off : off+p.blockSize : off+p.blockSize]
		p.cached[b.hash] = append(p.cached[b.hash], b)
	}
	s.numCached = full
	p.events = append(p.events, ev)
	if p.cpu != nil {
		p.offload(s, first, full)
	}
}

// Free releases the sequence's blocks in reverse order, so that when space is
// needed the tail of a conversation is evicted before its shared prefix.
func (p *Pool) Free(s *Seq) {
	for i := len(s.blocks) - 1; i >= 0; i-- {
		b := s.blocks[i]
		b.refCnt--
		if b.refCnt == 0 {
			p.pushFree(b)
		}
	}
	s.blocks, s.numCached, s.NumComputed = nil, 0, 0
}
