package fleet

// EngineURLs are the running shards' API URLs (vllm-sim's OpenAI server,
// with vLLM's /tokenize), for a bench to tokenize its prompts on the
// fleet's own engines.
func (f *Fleet) EngineURLs() []string {
	var out []string
	for _, s := range f.runningShards() {
		out = append(out, s.url)
	}
	return out
}
