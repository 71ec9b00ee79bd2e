package kvgroups

import "github.com/llmgw/llmgw/router/index"

// vLLM's offloading connector keeps the CPU tier in blocks of its
// offloaded_block_size, f GPU blocks each, and names each by the hash of
// its last GPU block (the driver holds all f GPU keys in the CPU tier for
// it). A lookup (OffloadingConnectorScheduler.get_num_new_matched_tokens)
// starts at the offloaded block the GPU hit ends in, counts the offloaded
// blocks present from there among the prompt's whole ones, and loads them
// only when that adds at least one whole offloaded block past the GPU
// hit. The index counts a prefix block by block across tiers, so a GPU
// hit that ends inside an offloaded block with less than one more to
// gain, or CPU blocks that fill no whole offloaded block, would be
// predicted cached where the engine recomputes them.

// wholeOffloaded is match m of a replica whose offloaded blocks cover f
// GPU blocks, under the connector's rule, for a prompt of which the
// engine looks at most limit blocks (its hit never includes the last
// token). The engine's GPU hit is m.GPURun (the leading blocks on the
// GPU); the blocks after it up to m.Blocks are held in the CPU tier, and
// so (the connector stores every computed block) are the GPU ones, so
// offloaded block j is present when its last GPU block is below m.Blocks.
func wholeOffloaded(m index.Match, f, limit int) index.Match {
	if m.Blocks == 0 || f <= 1 {
		return m
	}
	gpu := min(m.GPURun, limit)
	end := min(m.Blocks, limit) / f * f // the end of the last whole offloaded block present
	if end-gpu >= f {
		m.Blocks = end
	} else {
		m.Blocks = gpu
	}
	m.GPUBlocks, m.GPURun = min(m.GPUBlocks, m.Blocks), gpu
	return m
}
