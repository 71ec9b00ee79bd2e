package kvcache

import (
	"fmt"
	"strconv"
	"strings"
)

// SpecKind is a KV-cache group's kind as vLLM's KVCacheSpecKind names it on
// the wire (BlockStored.kv_cache_spec_kind).
type SpecKind string

// The group kinds the simulator plays: vLLM's FullAttentionManager,
// SlidingWindowManager and MambaManager (in "align" cache mode, the mode in
// which vLLM caches Mamba and linear-attention state for prefix hits).
const (
	FullAttention SpecKind = "full_attention"
	SlidingWindow SpecKind = "sliding_window"
	Mamba         SpecKind = "mamba"
)

// MaxGroups bounds the number of KV-cache groups a flag or a config.json may
// declare; real hybrid models have a handful.
const MaxGroups = 64

// GroupSpec is one KV-cache group: its kind and, for a sliding window, the
// window in tokens. Every group shares the pool's block size, as vLLM's
// hybrid allocator makes page sizes uniform.
type GroupSpec struct {
	Kind   SpecKind
	Window int // sliding_window only: tokens the attention looks back, including the current one
}

// String is the group in --sim-kv-cache-groups syntax.
func (g GroupSpec) String() string {
	switch g.Kind {
	case FullAttention:
		return "full"
	case SlidingWindow:
		return "sliding_window:" + strconv.Itoa(g.Window)
	}
	return string(g.Kind)
}

// DefaultGroups is one full-attention group: a plain model, and the cache
// the simulator kept before it played hybrid engines.
func DefaultGroups() []GroupSpec { return []GroupSpec{{Kind: FullAttention}} }

// FormatGroups is the --sim-kv-cache-groups spelling of groups.
func FormatGroups(groups []GroupSpec) string {
	parts := make([]string, len(groups))
	for i, g := range groups {
		parts[i] = g.String()
	}
	return strings.Join(parts, ",")
}

// ParseGroups reads --sim-kv-cache-groups: groups in order, comma separated,
// each `full`, `sliding_window:W` (W tokens, at least 1) or `mamba`.
func ParseGroups(s string) ([]GroupSpec, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("no KV-cache group given (want e.g. full or full,sliding_window:128)")
	}
	parts := strings.Split(s, ",")
	if len(parts) > MaxGroups {
		return nil, fmt.Errorf("%d KV-cache groups given, at most %d are supported", len(parts), MaxGroups)
	}
	groups := make([]GroupSpec, 0, len(parts))
	for i, p := range parts {
		g, err := parseGroup(strings.TrimSpace(p))
		if err != nil {
			return nil, fmt.Errorf("group %d (%q): %w", i, p, err)
		}
		groups = append(groups, g)
	}
	return groups, nil
}

func parseGroup(p string) (GroupSpec, error) {
	name, arg, hasArg := strings.Cut(p, ":")
	switch name {
	case "full", string(FullAttention):
		if hasArg {
			return GroupSpec{}, fmt.Errorf("full takes no argument")
		}
		return GroupSpec{Kind: FullAttention}, nil
	case "mamba":
		if hasArg {
			return GroupSpec{}, fmt.Errorf("mamba takes no argument")
		}
		return GroupSpec{Kind: Mamba}, nil
	case string(SlidingWindow):
		if !hasArg {
			return GroupSpec{}, fmt.Errorf("sliding_window needs its window in tokens, as sliding_window:W")
		}
		w, err := strconv.Atoi(arg)
		if err != nil || w < 1 {
			return GroupSpec{}, fmt.Errorf("sliding window %q is not a positive number of tokens", arg)
		}
		return GroupSpec{Kind: SlidingWindow, Window: w}, nil
	}
	return GroupSpec{}, fmt.Errorf("unknown KV-cache group kind %q (want full, sliding_window:W or mamba)", name)
}

// ValidateGroups checks groups built in code (a config.json derivation or a
// test) the way ParseGroups checks the flag.
func ValidateGroups(groups []GroupSpec) error {
	if len(groups) == 0 || len(groups) > MaxGroups {
		return fmt.Errorf("want 1 to %d KV-cache groups, got %d", MaxGroups, len(groups))
	}
	for i, g := range groups {
		switch {
		case g.Kind == SlidingWindow && g.Window < 1:
			return fmt.Errorf("group %d: sliding window must be at least 1 token, got %d", i, g.Window)
		case g.Kind != SlidingWindow && g.Window != 0:
			return fmt.Errorf("group %d: only a sliding_window group has a window", i)
		case g.Kind != FullAttention && g.Kind != SlidingWindow && g.Kind != Mamba:
			return fmt.Errorf("group %d: unknown kind %q", i, g.Kind)
		}
	}
	return nil
}

// IsDefault reports a single full-attention group, the layout of a plain
// model.
func IsDefault(groups []GroupSpec) bool {
	return len(groups) == 1 && groups[0] == GroupSpec{Kind: FullAttention}
}
