package kvcache

// SeqBlock is one block a sequence holds, as a KV transfer reads it: its
// group, its position in the sequence, its GPU block id, its hash once
// cached, and the tokens whose KV it holds.
type SeqBlock struct {
	Group, Position, ID int
	Hashed              bool
	Hash                Hash
	Tokens              []uint32
}

// SeqBlocks lists, group by group, the blocks s holds (null blocks left
// out), with the tokens of its first NumComputed tokens: what a prefill
// instance offers a decode instance. The token slices are copies.
func (p *Pool) SeqBlocks(s *Seq) [][]SeqBlock {
	out := make([][]SeqBlock, len(s.groups))
	for g, gs := range s.groups {
		for i, b := range gs.blocks {
			if b == nil {
				continue
			}
			lo, hi := i*p.blockSize, min((i+1)*p.blockSize, s.NumComputed)
			var tok []uint32
			if lo < hi {
				tok = append([]uint32(nil), s.Tokens[lo:hi]...)
			}
			out[g] = append(out[g], SeqBlock{Group: g, Position: i, ID: b.id, Hashed: b.hashed, Hash: b.hash, Tokens: tok})
		}
	}
	return out
}
