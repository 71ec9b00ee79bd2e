package route

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/llmgw/llmgw/internal/kvwire"
	"github.com/llmgw/llmgw/router/index"
	"github.com/llmgw/llmgw/router/ingest"
	"github.com/llmgw/llmgw/router/load"
	"github.com/llmgw/llmgw/router/replicas"
	"github.com/llmgw/llmgw/router/scheduler"
)

// TestScheduleWidensNarrowedList: in a fleet large enough to narrow, the
// prompt's only holder and every replica but one are over the busy
// threshold; the one free replica is outside the narrowed list unless
// sampled (one of 299), and the request still goes to it, not to a 429.
func TestScheduleWidensNarrowedList(t *testing.T) {
	const n = 300
	models := index.NewModels(index.Options{})
	sink := ingest.New(models, ingest.Options{})
	tracker := load.NewTracker(load.WithPrefillRate(0))
	set := replicas.New(sink, tracker, replicas.Options{Holders: models, Sample: 1})
	list := make([]replicas.Replica, n)
	for i := range list {
		list[i] = replicas.Replica{ID: fmt.Sprintf("r-%03d/vllm", i), Model: "m", BlockSize: 16}
	}
	set.Replace(list)
	prompt := []uint64{11, 12, 13}
	sink.ApplyUpdate(&kvwire.Update{Version: kvwire.Version, Driver: "d", Epoch: 1, Seq: 1, Snapshot: true,
		Replicas: []kvwire.Replica{{ID: list[0].ID, BlockSize: 16, Groups: []kvwire.Group{{Tier: kvwire.TierGPU, Add: prompt}}}}})
	free := list[n-1].ID
	for _, r := range list {
		if r.ID != free {
			tracker.Begin(r.ID, 100)
		}
	}
	reg := scheduler.NewRegistry()
	if err := scheduler.RegisterBuiltins(reg); err != nil {
		t.Fatal(err)
	}
	cfg := scheduler.DefaultConfig()
	cfg.Filters = append(cfg.Filters, scheduler.Spec{Type: "busy", Params: json.RawMessage(`{"max_in_flight": 1}`)})
	s, err := reg.Build(cfg, scheduler.Deps{Index: models, Rand: rand.NewPCG(1, 2)})
	if err != nil {
		t.Fatal(err)
	}
	req := &scheduler.Request{Model: "m", Keys: prompt, BlockTokens: 16, PromptTokens: 48}
	if narrowed := set.AppendCandidatesFor(nil, "m", req); len(narrowed) != 2 {
		t.Fatalf("narrowed list of %d candidates; want the holder and one sampled", len(narrowed))
	}
	for range 20 {
		d, cands, err := schedule(context.Background(), set, s, "m", req, nil, nil)
		if err != nil {
			t.Fatalf("schedule: %v; want the free replica %s", err, free)
		}
		if d.Chosen.Candidate.ID != free {
			t.Fatalf("chose %s; want the free replica %s", d.Chosen.Candidate.ID, free)
		}
		if len(cands) != 2 && len(cands) != n {
			t.Errorf("decided over %d candidates; want the narrowed 2 or all %d", len(cands), n)
		}
	}
}
