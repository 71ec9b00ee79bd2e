package scheduler

import (
	"encoding/json"
	"errors"
)

// RegisterBuiltins registers llmgw's own plugins. It is the one place that
// lists them; see README.md for what each does and its parameters.
func RegisterBuiltins(r *Registry) error {
	builtins := []struct {
		typ string
		f   Factory
	}{
		{"model", noParams(func(n TypedName) Plugin { return &ModelFilter{name: n} })},
		{"healthy", noParams(func(n TypedName) Plugin { return &HealthyFilter{name: n} })},
		{"busy", func(n TypedName, raw json.RawMessage, _ Deps) (Plugin, error) {
			var p BusyParams
			if err := decodeValid(raw, &p); err != nil {
				return nil, err
			}
			return &BusyFilter{name: n, p: p}, nil
		}},
		{"prefix", func(n TypedName, raw json.RawMessage, d Deps) (Plugin, error) {
			p := defaultPrefixParams()
			if err := decodeValid(raw, &p); err != nil {
				return nil, err
			}
			if d.Index == nil {
				return nil, errors.New("needs the prefix index")
			}
			return newPrefixScorer(n, p, d.Index, d.Now), nil
		}},
		{"approx-prefix", func(n TypedName, raw json.RawMessage, d Deps) (Plugin, error) {
			p := defaultApproxParams()
			if err := decodeValid(raw, &p); err != nil {
				return nil, err
			}
			return newApproxScorer(n, p, d.Now, d.Index), nil
		}},
		{"load", func(n TypedName, raw json.RawMessage, _ Deps) (Plugin, error) {
			p := defaultLoadParams()
			if err := decodeValid(raw, &p); err != nil {
				return nil, err
			}
			return &LoadScorer{name: n, p: p}, nil
		}},
		{"ttft", func(n TypedName, raw json.RawMessage, _ Deps) (Plugin, error) {
			p := defaultTTFTParams()
			if err := decodeValid(raw, &p); err != nil {
				return nil, err
			}
			return &TTFTScorer{name: n, p: p}, nil
		}},
		{"hot-prefix", func(n TypedName, raw json.RawMessage, d Deps) (Plugin, error) {
			p := defaultHotPrefixParams()
			if err := decodeValid(raw, &p); err != nil {
				return nil, err
			}
			return newHotPrefix(n, p, d.Now), nil
		}},
		{"session", func(n TypedName, raw json.RawMessage, d Deps) (Plugin, error) {
			p := defaultSessionParams()
			if err := decodeValid(raw, &p); err != nil {
				return nil, err
			}
			return newSessionScorer(n, p, d.Now), nil
		}},
		{"round-robin", noParams(func(n TypedName) Plugin { return &RoundRobinPicker{name: n} })},
		{"max-score", func(n TypedName, raw json.RawMessage, d Deps) (Plugin, error) {
			var p PickerParams
			if err := decodeValid(raw, &p); err != nil {
				return nil, err
			}
			return newMaxScorePicker(n, p, d.Rand), nil
		}},
	}
	for _, b := range builtins {
		if err := r.Register(b.typ, b.f); err != nil {
			return err
		}
	}
	return nil
}

// validator is implemented by parameter structs with rules JSON cannot say.
type validator interface{ validate() error }

func decodeValid(raw json.RawMessage, p validator) error {
	if err := DecodeParams(raw, p); err != nil {
		return err
	}
	return p.validate()
}

// noParams wraps a constructor for plugins that take no parameters; any
// given are an error.
func noParams(mk func(TypedName) Plugin) Factory {
	return func(n TypedName, raw json.RawMessage, _ Deps) (Plugin, error) {
		var none struct{}
		if err := DecodeParams(raw, &none); err != nil {
			return nil, err
		}
		return mk(n), nil
	}
}
