package config

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Runner, Convert and PoolerConfig are vLLM's --runner, --convert and
// --pooler-config (vllm/config/model.py: RunnerOption, ConvertOption;
// vllm/config/pooler.py); NumLabels is the classifier head's size that
// vLLM reads from config.json (hf_config.num_labels).
type taskFlags struct {
	Runner    string // auto, generate, pooling or draft
	Convert   string // auto, none, embed or classify
	Pooling   string // the pooler's seq_pooling_type, upper case; "" for the default (LAST)
	NumLabels int
	// prefixCachingSet: --enable-prefix-caching or its --no- form was
	// given, so the pooling default does not apply.
	prefixCachingSet bool
}

// Tasks the simulator serves, as vLLM names them (vllm/tasks.py).
const (
	TaskGenerate = "generate"
	TaskEmbed    = "embed"
	TaskClassify = "classify"
)

// Task is the one task the simulated model serves. vLLM picks it from the
// runner and the convert type, else from the architecture's name; the
// simulator's model has no architecture, so --runner auto is a generative
// model and --runner pooling without --convert an embedding model (the
// default of a plain `*Model` architecture).
func (c Config) Task() string {
	switch {
	case c.Convert == "embed":
		return TaskEmbed
	case c.Convert == "classify":
		return TaskClassify
	case c.Runner == "pooling":
		return TaskEmbed
	}
	return TaskGenerate
}

// validateTask checks --runner and --convert as vLLM's ModelConfig does:
// a convert type needs the pooling runner (or auto, which it then picks).
func (c Config) validateTask() error {
	switch c.Runner {
	case "auto", "generate", "pooling", "draft":
	default:
		return fmt.Errorf("--runner %q is not auto, generate, pooling or draft", c.Runner)
	}
	switch c.Convert {
	case "auto", "none":
	case "embed", "classify":
		if c.Runner != "auto" && c.Runner != "pooling" {
			return fmt.Errorf("--convert %s needs --runner pooling, got --runner %s", c.Convert, c.Runner)
		}
	default:
		return fmt.Errorf("--convert %q is not auto, none, embed or classify", c.Convert)
	}
	if c.NumLabels < 1 {
		return fmt.Errorf("--sim-num-labels must be positive, got %d", c.NumLabels)
	}
	return nil
}

// resolvePrefixCaching applies vLLM's default where the flag was not
// given: ModelConfig.is_prefix_caching_supported. The simulated model has
// causal attention, so a pooling model caches prefixes unless its pooler
// reads every position (MEAN or CLS pooling); a generative one always.
func (c *Config) resolvePrefixCaching() {
	if c.prefixCachingSet || c.Task() == TaskGenerate {
		return
	}
	c.EnablePrefixCaching = c.Pooling != "MEAN" && c.Pooling != "CLS"
}

// parsePoolerConfig reads --pooler-config's pooling type: seq_pooling_type,
// or the older pooling_type.
func parsePoolerConfig(c *Config, v string) error {
	var pc struct {
		Seq  string `json:"seq_pooling_type"`
		Type string `json:"pooling_type"`
	}
	if err := json.Unmarshal([]byte(v), &pc); err != nil {
		return fmt.Errorf("not a JSON object: %v", err)
	}
	c.Pooling = strings.ToUpper(pc.Seq)
	if c.Pooling == "" {
		c.Pooling = strings.ToUpper(pc.Type)
	}
	return nil
}
