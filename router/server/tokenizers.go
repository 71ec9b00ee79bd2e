package server

import (
	"github.com/llmgw/llmgw/router/enginetok"
	"github.com/llmgw/llmgw/router/prompt"
)

// WithEncoder has the router tokenize model with enc instead of what the
// config names. Tests that build a router in process use it to key a sim
// model with vllm-sim's tokenizer (cmd/vllm-sim/simencoder) without
// asking its engines; cmd/llmgw-router passes none, so no simulator code
// is linked into the router.
func WithEncoder(model string, enc prompt.Encoder) Option {
	return func(o *options) {
		if o.encoders == nil {
			o.encoders = map[string]prompt.Encoder{}
		}
		o.encoders[model] = enc
	}
}

// promptSources says where each configured model's tokens come from: an
// encoder given by WithEncoder, its tokenizer_dir, or its engines
// (engine_tokenize, sim) through the returned client, which also counts
// those calls.
func (s *Server) promptSources(opts []Option) (map[string]prompt.Source, *enginetok.Client, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	etok, err := enginetok.New(enginetok.Options{Replicas: s.set, EngineKey: s.cfg.EngineKey, Logger: s.log.Named("enginetok")})
	if err != nil {
		return nil, nil, err
	}
	sources := map[string]prompt.Source{}
	for name, m := range s.cfg.Models {
		src := prompt.Source{Dir: m.TokenizerDir, HarmonyStartDate: m.HarmonyStartDate}
		if m.TokenizesOnEngines() {
			src.Remote = etok
			if m.Sim && !m.EngineTokenize {
				s.log.Info("model has sim = true: its prompts are tokenized on its engines (engine_tokenize), one round trip per request", "model", name)
			}
		}
		sources[name] = src
	}
	for name, enc := range o.encoders {
		src := sources[name]
		src.Encoder = enc
		sources[name] = src
	}
	return sources, etok, nil
}
