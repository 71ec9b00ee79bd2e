package kvgroups

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/llmgw/llmgw/internal/kvwire"
)

// Layout is a replica's KV-cache groups, in group-index order, and what
// the hit rule derives from them once.
type Layout struct {
	Groups  []kvwire.KVGroupSpec
	primary int  // kvwire.Primary: the group kept in the model's own index
	hybrid  bool // more than one group, or a group that is not full attention
	mamba   bool // a Mamba group: its state exists only where a prompt ended
}

// NewLayout derives a Layout from groups (any order); blockSize fills the
// block size of groups that do not declare one.
func NewLayout(groups []kvwire.KVGroupSpec, blockSize int) *Layout {
	l := &Layout{Groups: make([]kvwire.KVGroupSpec, len(groups))}
	copy(l.Groups, groups)
	for i := range l.Groups {
		if l.Groups[i].BlockSize == 0 {
			l.Groups[i].BlockSize = blockSize
		}
	}
	sortByIndex(l.Groups)
	l.primary = kvwire.Primary(l.Groups)
	l.hybrid = len(l.Groups) > 1
	for _, g := range l.Groups {
		l.hybrid = l.hybrid || !isFull(g.Kind)
		l.mamba = l.mamba || g.Kind == kvwire.KindMamba
	}
	return l
}

func sortByIndex(gs []kvwire.KVGroupSpec) {
	for i := 1; i < len(gs); i++ {
		for j := i; j > 0 && gs[j].Index < gs[j-1].Index; j-- {
			gs[j], gs[j-1] = gs[j-1], gs[j]
		}
	}
}

// isFull reports whether a group of kind k needs every prefix block.
// Kinds this version does not know are held to that, the strictest rule.
func isFull(k kvwire.Kind) bool { return k != kvwire.KindSlidingWindow && k != kvwire.KindMamba }

// Indexed reports whether group g's keys can match a prompt's: a group
// whose blocks have another size than the primary group's chains other
// token runs, so it is neither indexed nor asked (the hit follows the
// other groups).
func (l *Layout) Indexed(g int) bool {
	if l == nil {
		return true
	}
	var bs, pbs int
	for _, s := range l.Groups {
		if s.Index == g {
			bs = s.BlockSize
		}
		if s.Index == l.primary {
			pbs = s.BlockSize
		}
	}
	return bs == 0 || pbs == 0 || bs == pbs
}

// Hybrid reports whether the layout needs more than the full-attention
// rule.
func (l *Layout) Hybrid() bool { return l != nil && l.hybrid }

// Mamba reports whether the layout has a Mamba group.
func (l *Layout) Mamba() bool { return l != nil && l.mamba }

// Primary is the group held in the model's own index.
func (l *Layout) Primary() int {
	if l == nil {
		return 0
	}
	return l.primary
}

// String writes l as ParseLayout reads it.
func (l *Layout) String() string {
	if l == nil {
		return "full"
	}
	parts := make([]string, len(l.Groups))
	for i, g := range l.Groups {
		parts[i] = g.Kind.String()
		if g.Kind == kvwire.KindSlidingWindow {
			parts[i] += ":" + strconv.Itoa(g.Window)
		}
	}
	return strings.Join(parts, ",")
}

// maxDeclaredWindow bounds a declared window, in tokens.
const maxDeclaredWindow = 1 << 30

// ParseLayout reads a layout as the llmgw-kv-cache-groups Consul meta (and
// vllm-sim's --sim-kv-cache-groups) write it: the groups in group-index
// order, comma-separated, each "full", "sliding_window:W" (W in tokens) or
// "mamba". Every group has blockSize tokens per block.
func ParseLayout(s string, blockSize int) (*Layout, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("empty kv cache group list")
	}
	parts := strings.Split(s, ",")
	if len(parts) > kvwire.MaxKVGroups {
		return nil, fmt.Errorf("%d kv cache groups; at most %d", len(parts), kvwire.MaxKVGroups)
	}
	groups := make([]kvwire.KVGroupSpec, 0, len(parts))
	for i, p := range parts {
		p = strings.TrimSpace(p)
		g := kvwire.KVGroupSpec{Index: i, BlockSize: blockSize}
		kind, arg, hasArg := strings.Cut(p, ":")
		switch {
		case kind == "full" && !hasArg:
			g.Kind = kvwire.KindFull
		case kind == "mamba" && !hasArg:
			g.Kind = kvwire.KindMamba
		case kind == "sliding_window" && hasArg:
			w, err := strconv.Atoi(arg)
			if err != nil || w < 1 || w > maxDeclaredWindow {
				return nil, fmt.Errorf("kv cache group %d %q: want a window of 1..%d tokens", i, p, maxDeclaredWindow)
			}
			g.Kind, g.Window = kvwire.KindSlidingWindow, w
		default:
			return nil, fmt.Errorf("kv cache group %d %q: want full, sliding_window:W or mamba", i, p)
		}
		groups = append(groups, g)
	}
	return NewLayout(groups, blockSize), nil
}

// IndexName is the name, in router/index.Models, of the index that holds
// group g of a replica of model whose primary group is primary: the
// model's own index for the primary group, one per other group. A NUL
// cannot occur in a model name from a request, so no model collides.
func IndexName(model string, g, primary int) string {
	if g == primary {
		return model
	}
	return model + "\x00kv-group " + strconv.Itoa(g)
}
