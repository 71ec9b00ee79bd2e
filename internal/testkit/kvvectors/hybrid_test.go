package kvvectors

import (
	"testing"

	"github.com/vmihailenco/msgpack/v5"
)

// TestHybridVectorsDecode reads every hybrid vector with a generic msgpack
// decoder: the hand-written bytes must be one well-formed batch whose
// group_idx is 1, with the window present exactly for the sliding-window
// group.
func TestHybridVectorsDecode(t *testing.T) {
	seen := map[string]bool{}
	for _, v := range Hybrid() {
		if seen[v.Name] {
			t.Errorf("duplicate vector name %q", v.Name)
		}
		seen[v.Name] = true
		var batch []any
		if err := msgpack.Unmarshal(v.Payload, &batch); err != nil {
			t.Fatalf("%s: %v", v.Name, err)
		}
		if len(batch) != 3 {
			t.Fatalf("%s: batch of %d elements", v.Name, len(batch))
		}
		ev := batch[1].([]any)[0]
		want := v.Want.Events[0]
		var group, window any
		var hasWindow bool
		switch e := ev.(type) {
		case map[string]any:
			group = e["group_idx"]
			window, hasWindow = e["kv_cache_spec_sliding_window"]
		case []any:
			if want.Type == "BlockRemoved" {
				group = e[3]
			} else {
				group = e[9]
				if len(e) == 12 {
					window, hasWindow = e[11], e[11] != nil
				}
			}
		}
		if g, ok := group.(int8); !ok || g != 1 {
			t.Errorf("%s: group_idx %v (%T); want 1", v.Name, group, group)
		}
		if wantWindow := want.SlidingWindow != nil && want.KVCacheSpecKind != nil; hasWindow != wantWindow {
			t.Errorf("%s: window %v present %v; want present %v", v.Name, window, hasWindow, wantWindow)
		}
	}
}
