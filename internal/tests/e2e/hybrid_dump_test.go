package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/cmd/vllm-sim/simproc"
	"github.com/llmgw/llmgw/internal/blockkey"
	"github.com/llmgw/llmgw/internal/kvwire"
)

// groupState writes, for each KV-cache group, which of the prompt's
// blocks (keys, by position) the engine's dump holds and which the
// driver's store holds: what a miss is read against. known is settle's
// map from engine hashes to keys.
func groupState(t *testing.T, f *fleet, id string, keys []uint64, known map[uint64]blockkey.Key) string {
	t.Helper()
	d, err := simproc.ReadDump(context.Background(), f.sims[id].URL)
	if err != nil {
		t.Fatal(err)
	}
	pos := map[uint64]int{}
	for i, k := range keys {
		pos[k] = i
	}
	engine := map[int][]int{}
	copies := map[int]map[int]int{}
	for _, b := range d.Blocks {
		k, ok := known[b.Hash]
		if !ok || b.Medium != "GPU" {
			continue
		}
		if i, ok := pos[uint64(k)]; ok {
			if copies[b.GroupIdx] == nil {
				copies[b.GroupIdx] = map[int]int{}
			}
			copies[b.GroupIdx][i]++
			if copies[b.GroupIdx][i] == 1 {
				engine[b.GroupIdx] = append(engine[b.GroupIdx], i)
			}
		}
	}
	driver := map[int][]int{}
	for _, b := range f.store.Blocks(id) {
		if i, ok := pos[uint64(b.Key)]; ok && b.Tier == kvwire.TierGPU {
			driver[b.Group] = append(driver[b.Group], i)
		}
	}
	var sb strings.Builder
	for g := range len(d.Groups) {
		e, dr := engine[g], driver[g]
		sort.Ints(e)
		sort.Ints(dr)
		var dup []string
		for i, n := range copies[g] {
			if n > 1 {
				dup = append(dup, fmt.Sprintf("%d:x%d", i, n))
			}
		}
		fmt.Fprintf(&sb, "  group %d (%s): engine %v, driver %v, engine copies %v\n", g, d.Groups[g].Kind, e, dr, dup)
	}
	return sb.String()
}
