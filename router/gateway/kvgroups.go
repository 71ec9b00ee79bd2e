package gateway

// maxHitBlocks is the longest cache hit the engine looks for on a prompt
// of tokens tokens: all of it but one token, in whole blocks of
// blockTokens, and at most keys blocks.
func maxHitBlocks(tokens, blockTokens, keys int) int {
	if tokens <= 0 || blockTokens <= 0 {
		return keys
	}
	return max(min(keys, (tokens-1)/blockTokens), 0)
}
