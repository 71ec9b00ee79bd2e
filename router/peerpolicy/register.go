package peerpolicy

import (
	"encoding/json"

	"github.com/llmgw/llmgw/router/scheduler"
)

// Register adds the peers' plugin types to r, for a router config (or
// `llmgw bench`'s policies) to name like any built-in. Its signature is
// the one server.WithPlugins takes; registering into a registry that
// already holds one of the types is an error.
func Register(r *scheduler.Registry) error {
	for _, p := range plugins() {
		if err := r.Register(p.typ, p.f); err != nil {
			return err
		}
	}
	return nil
}

// plugins lists every type Register adds: the one place they are named.
func plugins() []struct {
	typ string
	f   scheduler.Factory
} {
	return []struct {
		typ string
		f   scheduler.Factory
	}{
		{"dynamo-cost", func(n scheduler.TypedName, raw json.RawMessage, _ scheduler.Deps) (scheduler.Plugin, error) {
			p := defaultDynamoParams()
			if err := decodeValid(raw, &p); err != nil {
				return nil, err
			}
			return &DynamoCostScorer{name: n, p: p}, nil
		}},
		{"sglang-cache-aware", func(n scheduler.TypedName, raw json.RawMessage, d scheduler.Deps) (scheduler.Plugin, error) {
			p := defaultSGLangParams()
			if err := decodeValid(raw, &p); err != nil {
				return nil, err
			}
			return newSGLangScorer(n, p, d.Now), nil
		}},
		{"llmd-queue", noParams(func(n scheduler.TypedName) scheduler.Plugin { return &QueueScorer{name: n} })},
		{"llmd-kv-utilization", noParams(func(n scheduler.TypedName) scheduler.Plugin { return &KVUtilizationScorer{name: n} })},
		{"llmd-precise-prefix", noParams(func(n scheduler.TypedName) scheduler.Plugin { return &PrefixMinMaxScorer{name: n} })},
		{"llmd-sticky", func(n scheduler.TypedName, raw json.RawMessage, d scheduler.Deps) (scheduler.Plugin, error) {
			p := defaultLLMDStickyParams()
			if err := decodeValid(raw, &p); err != nil {
				return nil, err
			}
			return newLLMDStickyScorer(n, p, d.Now), nil
		}},
		{"smg-cache-aware", func(n scheduler.TypedName, raw json.RawMessage, _ scheduler.Deps) (scheduler.Plugin, error) {
			p := defaultSMGParams()
			if err := decodeValid(raw, &p); err != nil {
				return nil, err
			}
			return &SMGCacheAwareScorer{name: n, p: p}, nil
		}},
		{"aibrix-prefix-cache", func(n scheduler.TypedName, raw json.RawMessage, d scheduler.Deps) (scheduler.Plugin, error) {
			p := defaultAIBrixParams()
			if err := decodeValid(raw, &p); err != nil {
				return nil, err
			}
			return newAIBrixScorer(n, p, d.Now), nil
		}},
	}
}

// validator is implemented by parameter structs with rules JSON cannot say.
type validator interface{ validate() error }

// decodeValid decodes raw strictly over the defaults in p, then checks them.
func decodeValid(raw json.RawMessage, p validator) error {
	if err := scheduler.DecodeParams(raw, p); err != nil {
		return err
	}
	return p.validate()
}

// noParams wraps a constructor for plugins that take no parameters; any
// given are an error.
func noParams(mk func(scheduler.TypedName) scheduler.Plugin) scheduler.Factory {
	return func(n scheduler.TypedName, raw json.RawMessage, _ scheduler.Deps) (scheduler.Plugin, error) {
		var none struct{}
		if err := scheduler.DecodeParams(raw, &none); err != nil {
			return nil, err
		}
		return mk(n), nil
	}
}
