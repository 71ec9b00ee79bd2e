package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/llmgw/llmgw/cmd/vllm-sim/internal/kvcache"
)

// GroupsFromConfig is the --sim-kv-cache-groups value that derives the
// groups from the model directory's config.json.
const GroupsFromConfig = "config"

// maxConfigJSON bounds the config.json read: real ones are a few KiB.
const maxConfigJSON = 4 << 20

// maxLayers bounds the layers a config.json may declare.
const maxLayers = 4096

// resolveKVCacheGroups turns --sim-kv-cache-groups into groups: a list, or
// "config" for the model directory's config.json (MODEL, else --tokenizer).
func (c *Config) resolveKVCacheGroups() error {
	if c.KVCacheGroupsFlag != GroupsFromConfig {
		g, err := kvcache.ParseGroups(c.KVCacheGroupsFlag)
		if err != nil {
			return fmt.Errorf("--sim-kv-cache-groups: %w", err)
		}
		c.KVCacheGroups = g
		return nil
	}
	dir := c.Model
	if st, err := os.Stat(dir); (err != nil || !st.IsDir()) && c.Tokenizer != "" {
		dir = c.Tokenizer
	}
	g, err := GroupsFromModelDir(dir)
	if err != nil {
		return fmt.Errorf("--sim-kv-cache-groups=config: %w", err)
	}
	c.KVCacheGroups = g
	return nil
}

// GroupsFromModelDir reads dir/config.json and derives vLLM's KV-cache
// groups from it (GroupsFromModelConfig).
func GroupsFromModelDir(dir string) ([]kvcache.GroupSpec, error) {
	f, err := os.Open(filepath.Join(dir, "config.json"))
	if err != nil {
		return nil, fmt.Errorf("model directory: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxConfigJSON+1))
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", f.Name(), err)
	}
	if len(data) > maxConfigJSON {
		return nil, fmt.Errorf("%s is over %d bytes", f.Name(), maxConfigJSON)
	}
	g, err := GroupsFromModelConfig(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.Name(), err)
	}
	return g, nil
}

// hfConfig is the part of a Hugging Face config.json that fixes the KV
// cache layout. Multimodal models nest it under text_config.
type hfConfig struct {
	LayerTypes            []string  `json:"layer_types"`
	SlidingWindow         *int      `json:"sliding_window"`
	HybridOverridePattern string    `json:"hybrid_override_pattern"`
	TextConfig            *hfConfig `json:"text_config"`
}

// GroupsFromModelConfig derives the KV-cache groups vLLM builds for a model
// from its config.json: one spec per cache-holding layer from layer_types
// ("full_attention"/"attention": full; "sliding_attention": a window of
// sliding_window tokens; "linear_attention"/"mamba"/"mamba2": Mamba state)
// or from Nemotron-H's hybrid_override_pattern ('*' attention, 'M' Mamba;
// MLP and MoE layers hold no cache). The layers are then grouped as vLLM's
// _get_kv_cache_groups_uniform_page_size groups them: by spec in order of
// first appearance, each spec split into groups of the smallest spec's
// layer count (or of the largest, when that is under 1.5 times the
// smallest, to avoid padding).
func GroupsFromModelConfig(data []byte) ([]kvcache.GroupSpec, error) {
	var cfg hfConfig
	if err := json.Unmarshal(data, &cfg); err != nil {
		return nil, fmt.Errorf("not a JSON config: %w", err)
	}
	if cfg.LayerTypes == nil && cfg.HybridOverridePattern == "" && cfg.TextConfig != nil {
		inner := *cfg.TextConfig
		if inner.SlidingWindow == nil {
			inner.SlidingWindow = cfg.SlidingWindow
		}
		cfg = inner
	}
	layers, err := layerSpecs(cfg)
	if err != nil {
		return nil, err
	}
	return groupLayers(layers)
}

func layerSpecs(cfg hfConfig) ([]kvcache.GroupSpec, error) {
	var layers []kvcache.GroupSpec
	switch {
	case cfg.LayerTypes != nil:
		if len(cfg.LayerTypes) > maxLayers {
			return nil, fmt.Errorf("layer_types lists %d layers, at most %d are supported", len(cfg.LayerTypes), maxLayers)
		}
		for i, t := range cfg.LayerTypes {
			switch t {
			case "full_attention", "attention":
				layers = append(layers, kvcache.GroupSpec{Kind: kvcache.FullAttention})
			case "sliding_attention":
				if cfg.SlidingWindow == nil || *cfg.SlidingWindow < 1 {
					return nil, fmt.Errorf("layer %d is sliding_attention but sliding_window is missing or not positive", i)
				}
				layers = append(layers, kvcache.GroupSpec{Kind: kvcache.SlidingWindow, Window: *cfg.SlidingWindow})
			case "linear_attention", "mamba", "mamba2":
				layers = append(layers, kvcache.GroupSpec{Kind: kvcache.Mamba})
			default:
				return nil, fmt.Errorf("layer %d has layer type %q the simulator does not model (want full_attention, attention, sliding_attention, linear_attention, mamba or mamba2)", i, t)
			}
		}
	case cfg.HybridOverridePattern != "":
		if len(cfg.HybridOverridePattern) > maxLayers {
			return nil, fmt.Errorf("hybrid_override_pattern has %d layers, at most %d are supported", len(cfg.HybridOverridePattern), maxLayers)
		}
		for i, r := range cfg.HybridOverridePattern {
			switch r {
			case '*':
				layers = append(layers, kvcache.GroupSpec{Kind: kvcache.FullAttention})
			case 'M':
				layers = append(layers, kvcache.GroupSpec{Kind: kvcache.Mamba})
			case '-', 'E':
			default:
				return nil, fmt.Errorf("hybrid_override_pattern layer %d is %q (want '*', 'M', '-' or 'E')", i, r)
			}
		}
	default:
		return nil, errors.New("no layer_types or hybrid_override_pattern: the layout is not declared; give --sim-kv-cache-groups explicitly (e.g. full)")
	}
	if len(layers) == 0 {
		return nil, errors.New("no layer holds a KV cache")
	}
	return layers, nil
}

// groupLayers is vLLM's _get_kv_cache_groups_uniform_page_size over the
// layers' specs: groups of equal size, spec by spec in order of first
// appearance.
func groupLayers(layers []kvcache.GroupSpec) ([]kvcache.GroupSpec, error) {
	var order []kvcache.GroupSpec
	count := map[kvcache.GroupSpec]int{}
	for _, l := range layers {
		if count[l] == 0 {
			order = append(order, l)
		}
		count[l]++
	}
	minN, maxN := len(layers), 0
	for _, n := range count {
		minN, maxN = min(minN, n), max(maxN, n)
	}
	size := minN
	if float64(maxN) < float64(minN)*1.5 {
		size = maxN
	}
	var groups []kvcache.GroupSpec
	for _, spec := range order {
		for range (count[spec] + size - 1) / size {
			groups = append(groups, spec)
		}
	}
	if len(groups) > kvcache.MaxGroups {
		return nil, fmt.Errorf("the layers make %d KV-cache groups (%s), at most %d are supported", len(groups), summarise(order, count), kvcache.MaxGroups)
	}
	return groups, nil
}

func summarise(order []kvcache.GroupSpec, count map[kvcache.GroupSpec]int) string {
	parts := make([]string, len(order))
	for i, s := range order {
		parts[i] = fmt.Sprintf("%d %s", count[s], s)
	}
	return strings.Join(parts, ", ")
}
