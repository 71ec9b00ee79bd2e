package scheduler

import "encoding/json"

// peerPlugins are the plugins that express other routers' published
// policies where llmgw's own scorers cannot, so that `llmgw bench` runs
// them side by side with llmgw's default (docs/PEER_POLICIES.md names the
// version of each rule followed and where llmgw's version differs).
// RegisterBuiltins registers them with the builtins: a router config may
// name them like any other plugin.
func peerPlugins() []struct {
	typ string
	f   Factory
} {
	return []struct {
		typ string
		f   Factory
	}{
		{"dynamo-cost", func(n TypedName, raw json.RawMessage, _ Deps) (Plugin, error) {
			p := defaultDynamoParams()
			if err := decodeValid(raw, &p); err != nil {
				return nil, err
			}
			return &DynamoCostScorer{name: n, p: p}, nil
		}},
		{"sglang-cache-aware", func(n TypedName, raw json.RawMessage, d Deps) (Plugin, error) {
			p := defaultSGLangParams()
			if err := decodeValid(raw, &p); err != nil {
				return nil, err
			}
			return newSGLangScorer(n, p, d.Now), nil
		}},
		{"llmd-queue", noParams(func(n TypedName) Plugin { return &QueueScorer{name: n} })},
		{"llmd-kv-utilization", noParams(func(n TypedName) Plugin { return &KVUtilizationScorer{name: n} })},
		{"llmd-precise-prefix", noParams(func(n TypedName) Plugin { return &PrefixMinMaxScorer{name: n} })},
		{"aibrix-prefix-cache", func(n TypedName, raw json.RawMessage, d Deps) (Plugin, error) {
			p := defaultAIBrixParams()
			if err := decodeValid(raw, &p); err != nil {
				return nil, err
			}
			return newAIBrixScorer(n, p, d.Now), nil
		}},
	}
}
