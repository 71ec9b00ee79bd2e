package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/llmgw/llmgw/cmd/vllm-sim/simproc"
)

// gevt is a KV event with its group fields, read generically from the wire.
type gevt struct {
	typ    string
	group  int
	hashes []uint64
	parent *uint64
	tokens []uint32
}

func groupEvents(t *testing.T, b batch) []gevt {
	t.Helper()
	var raw []any
	if err := msgpack.Unmarshal(b.Raw, &raw); err != nil {
		t.Fatal(err)
	}
	var out []gevt
	for i, e := range raw[1].([]any) {
		f := map[string]any{}
		switch v := e.(type) {
		case map[string]any:
			f = v
		case []any:
			names := []string{"type", "block_hashes", "parent_block_hash", "token_ids", "block_size", "lora_id", "medium", "lora_name", "extra_keys", "group_idx"}
			if v[0] == "BlockRemoved" {
				names = []string{"type", "block_hashes", "medium", "group_idx"}
			}
			for j, x := range v {
				if j < len(names) {
					f[names[j]] = x
				}
			}
		}
		ev := gevt{typ: f["type"].(string), hashes: b.Events[i].Hashes, parent: b.Events[i].Parent, tokens: b.Events[i].Tokens}
		if g, ok := f["group_idx"]; ok && g != nil {
			ev.group = int(toU64(t, g))
		}
		out = append(out, ev)
	}
	return out
}

// hybridIndex is what a router can learn from the events: for each group,
// which blocks it holds, each block named by the token prefix it ends.
type hybridIndex struct {
	bs     int
	prefix map[uint64]string // engine hash -> the tokens from the start through its block
	hashOf map[string]uint64
	held   []map[uint64]int // per group: hash -> copies
}

func newHybridIndex(bs, groups int) *hybridIndex {
	x := &hybridIndex{bs: bs, prefix: map[uint64]string{}, hashOf: map[string]uint64{}}
	for range groups {
		x.held = append(x.held, map[uint64]int{})
	}
	return x
}

func tokenKey(toks []uint32) string { return strings.Trim(fmt.Sprint(toks), "[]") + " " }

// apply learns one event. A store's token_ids span every block of its
// range; its block_hashes name the blocks the group kept, the last ones of
// the range (a group skips null blocks at the front).
func (x *hybridIndex) apply(t *testing.T, e gevt) {
	switch e.typ {
	case "BlockStored":
		base := ""
		if e.parent != nil {
			p, ok := x.prefix[*e.parent]
			if !ok {
				t.Fatalf("group %d stored after parent %d, which no event named", e.group, *e.parent)
			}
			base = p
		}
		m := len(e.tokens) / x.bs
		for i, h := range e.hashes {
			end := (m - len(e.hashes) + i + 1) * x.bs
			key := base + tokenKey(e.tokens[:end])
			x.prefix[h], x.hashOf[key] = key, h
			x.held[e.group][h]++
		}
	case "BlockRemoved":
		for _, h := range e.hashes {
			if x.held[e.group][h]--; x.held[e.group][h] == 0 {
				delete(x.held[e.group], h)
			}
		}
	case "AllBlocksCleared":
		for g := range x.held {
			x.held[g] = map[uint64]int{}
		}
	}
}

// cached reports whether group g holds block i of prompt.
func (x *hybridIndex) cached(prompt []uint32, g, i int) bool {
	h, ok := x.hashOf[tokenKey(prompt[:(i+1)*x.bs])]
	return ok && x.held[g][h] > 0
}

// predict is the hit vLLM's hybrid coordinator finds, written from its
// description rather than from the simulator's code: every group shortens
// the candidate to what it can serve (full attention: a leading run; a
// sliding window: the latest end whose window blocks are all held, else the
// leading run; Mamba: the latest end whose block holds the state), full
// attention first, until the length is stable. asFull treats every group as
// full attention (the rule of an index that ignores kinds).
func (x *hybridIndex) predict(prompt []uint32, groups []simproc.Group, asFull bool) int {
	maxBlocks := (len(prompt) - 1) / x.bs
	lead := func(g, n int) int {
		k := 0
		for k < n && x.cached(prompt, g, k) {
			k++
		}
		return k
	}
	shorten := func(g, n int) int {
		kind := groups[g].Kind
		if asFull || kind == "full_attention" {
			return lead(g, n)
		}
		if kind == "mamba" {
			for e := n; e > 0; e-- {
				if x.cached(prompt, g, e-1) {
					return e
				}
			}
			return 0
		}
		need := (*groups[g].SlidingWindow - 1 + x.bs - 1) / x.bs
		for e := n; e >= need && e > 0; e-- {
			ok := true
			for i := e - need; i < e; i++ {
				ok = ok && x.cached(prompt, g, i)
			}
			if ok {
				return e
			}
		}
		return lead(g, n)
	}
	var order []int
	for pass := range 2 {
		for g := range groups {
			if (groups[g].Kind == "full_attention") == (pass == 0) {
				order = append(order, g)
			}
		}
	}
	h := maxBlocks
	for {
		n := h
		for _, g := range order {
			n = shorten(g, n)
		}
		if n == h {
			return h * x.bs
		}
		h = n
	}
}

// TestHybridCachedTokensFollowTheEvents runs multi-turn sessions through a
// small pool (evictions on every turn) and, before each request, predicts
// its cached tokens from the events alone with the hybrid rule: the
// engine's usage.prompt_tokens_details.cached_tokens must equal it on every
// request, and the events must account for the dump's blocks group by group.
func TestHybridCachedTokensFollowTheEvents(t *testing.T) {
	for _, groups := range []string{"full", "full,sliding_window:8", "full,mamba", "sliding_window:12,full,mamba"} {
		for _, format := range []string{"array", "map"} {
			t.Run(groups+"/"+format, func(t *testing.T) {
				s := newSub(t)
				// 24 blocks a group: two or three sessions' worth, so every
				// turn evicts.
				blocks := fmt.Sprint(24 * (strings.Count(groups, ",") + 1))
				p := startSim(t, nil, "--kv-events-config", s.flag(""), "--block-size", "4", "--num-gpu-blocks-override", blocks,
					"--max-model-len", "96", "--sim-kv-cache-groups", groups, "--sim-event-format", format, "--enable-prompt-tokens-details")
				d, err := simproc.ReadDump(t.Context(), p.URL)
				if err != nil {
					t.Fatal(err)
				}
				var layout []string
				for i, g := range d.Groups {
					name := map[string]string{"full_attention": "full", "mamba": "mamba"}[g.Kind]
					if g.Kind == "sliding_window" && g.SlidingWindow != nil {
						name = fmt.Sprintf("sliding_window:%d", *g.SlidingWindow)
					}
					if g.GroupIdx != i {
						t.Errorf("dump group %d has group_idx %d", i, g.GroupIdx)
					}
					layout = append(layout, name)
				}
				if got := strings.Join(layout, ","); got != groups {
					t.Fatalf("dump lists groups %s; want %s", got, groups)
				}
				exact, asFullExact, requests := 0, 0, 0
				x := newHybridIndex(4, len(d.Groups))
				seen := 0
				for turn := range 5 {
					for sess := range 4 {
						prompt := sessionPrompt(sess, turn)
						batches := s.collect(t, func(b []batch) bool { return len(b) >= seen && groupsMatch(t, p, b) })
						for _, b := range batches[seen:] {
							for _, e := range groupEvents(t, b) {
								x.apply(t, e)
							}
						}
						seen = len(batches)
						want, full := x.predict(prompt, d.Groups, false), x.predict(prompt, d.Groups, true)
						var c completion
						if st := post(t, p.URL+"/v1/completions", map[string]any{"model": "sim-model", "prompt": prompt, "max_tokens": 5}, &c); st != 200 {
							t.Fatalf("completion: status %d: %+v", st, c.Error)
						}
						got := c.Usage.PromptTokensDetails.CachedTokens
						requests++
						if got == want {
							exact++
						} else {
							t.Errorf("session %d turn %d: cached_tokens %d; the events predict %d", sess, turn, got, want)
						}
						if got == full {
							asFullExact++
						}
					}
				}
				t.Logf("%s %s: %d/%d predictions exact with the hybrid rule, %d/%d treating every group as full attention", groups, format, exact, requests, asFullExact, requests)
				if groups != "full" && asFullExact == requests {
					t.Error("treating every group as full attention predicted every request: the workload does not exercise the hybrid rule")
				}
			})
		}
	}
}

// sessionPrompt is session sess's prompt at turn turn: a shared system
// prompt, then the session's turns so far (ten tokens each), so each turn
// extends the last one's prompt.
func sessionPrompt(sess, turn int) []uint32 {
	var p []uint32
	for i := range 10 {
		p = append(p, uint32(10+i))
	}
	for i := range 10 * (turn + 1) {
		p = append(p, uint32(1000*(sess+1)+i))
	}
	return p
}

// groupsMatch reports whether the events account for every block of the
// dump, group by group.
func groupsMatch(t *testing.T, p proc, batches []batch) bool {
	held := map[[2]uint64]int{}
	for _, b := range batches {
		for _, e := range groupEvents(t, b) {
			for _, h := range e.hashes {
				k := [2]uint64{uint64(e.group), h}
				switch e.typ {
				case "BlockStored":
					held[k]++
				case "BlockRemoved":
					if held[k]--; held[k] == 0 {
						delete(held, k)
					}
				}
			}
		}
	}
	truth := map[[2]uint64]int{}
	for _, b := range dump(t, p) {
		truth[[2]uint64{uint64(b.GroupIdx), b.Hash}]++
	}
	if len(truth) != len(held) {
		return false
	}
	for k, n := range truth {
		if held[k] != n {
			return false
		}
	}
	return true
}

// TestHybridStartupErrors: a bad layout stops the process with a message
// naming the flag and the problem.
func TestHybridStartupErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"m", "--sim-kv-cache-groups", "full,sliding_window"}, `sliding_window needs its window`},
		{[]string{"m", "--sim-kv-cache-groups", "full,linear"}, `unknown KV-cache group kind "linear"`},
		{[]string{dir, "--sim-kv-cache-groups", "config"}, "config.json"},
	}
	for _, tt := range tests {
		p := startProc(t, nil, tt.args...)
		select {
		case <-p.Done():
		case <-time.After(30 * time.Second):
			t.Fatalf("%q kept running", tt.args)
		}
		out := p.Output()
		if p.ExitCode() == 0 || !strings.Contains(out, tt.want) || !strings.Contains(out, "--sim-kv-cache-groups") {
			t.Errorf("%q: exit %d, output %q; want a failure naming --sim-kv-cache-groups and %q", tt.args, p.ExitCode(), out, tt.want)
		}
	}
}

// TestKVCacheGroupsFromModelDir starts the simulator on a model directory
// whose config.json declares gpt-oss's layout.
func TestKVCacheGroupsFromModelDir(t *testing.T) {
	dir := t.TempDir()
	types := make([]string, 24)
	for i := range types {
		types[i] = []string{"sliding_attention", "full_attention"}[i%2]
	}
	cfg, _ := json.Marshal(map[string]any{"layer_types": types, "sliding_window": 128})
	if err := os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	p := startSim(t, nil, "--sim-kv-cache-groups", "config", "--model", dir)
	d, err := simproc.ReadDump(t.Context(), p.URL)
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Groups) != 2 || d.Groups[0].Kind != "sliding_window" || d.Groups[0].SlidingWindow == nil || *d.Groups[0].SlidingWindow != 128 || d.Groups[1].Kind != "full_attention" {
		t.Fatalf("groups %+v; want sliding_window:128 then full_attention", d.Groups)
	}
}
