package replicas

import (
	"testing"

	"github.com/llmgw/llmgw/internal/kvwire"
	"github.com/llmgw/llmgw/router/scheduler"
)

// TestUntrustedReplicaRoutesApprox: a replica whose driver says it cannot
// key its blocks (an engine whose KV events lack extra_keys) routes approx
// with the driver's reason, in Mode, ModeReason and its candidate's mode;
// its peers of the same driver stay exact.
func TestUntrustedReplicaRoutesApprox(t *testing.T) {
	const why = "engine's KV events carry no extra_keys"
	f := newFixture()
	f.set.Replace([]Replica{{ID: "a/1", Model: "m", BlockSize: 16}, {ID: "b/1", Model: "m", BlockSize: 16}})
	f.sink.ApplyUpdate(&kvwire.Update{Driver: "d", Epoch: 1, Snapshot: true, Replicas: []kvwire.Replica{
		{ID: "a/1", BlockSize: 16, Groups: []kvwire.Group{{Tier: kvwire.TierGPU, Add: []uint64{42}}}},
		{ID: "b/1", BlockSize: 16, Approx: why},
	}})
	modes := map[string]scheduler.Mode{}
	for _, c := range f.set.Candidates("m") {
		modes[c.ID] = c.Mode
	}
	for id, w := range map[string]struct {
		mode scheduler.Mode
		why  string
	}{"a/1": {scheduler.ModeExact, ""}, "b/1": {scheduler.ModeApprox, why}} {
		if got := f.set.Mode(id); got != w.mode || modes[id] != w.mode {
			t.Errorf("%s: Mode %s, candidate %s; want %s", id, got, modes[id], w.mode)
		}
		if got := f.set.ModeReason(id); got != w.why {
			t.Errorf("%s: ModeReason %q; want %q", id, got, w.why)
		}
	}
}
