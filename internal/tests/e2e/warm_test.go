package e2e

import (
	"net/http"
	"testing"

	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/router/config"
	"github.com/llmgw/llmgw/router/scheduler"
)

// TestHotPrefixCopiedToIdleReplica runs the default scheduler, its
// hot-prefix replicator told that one second makes a prefix hot, over
// three vllm-sim replicas. Three requests share a head: the first
// computes it on one replica, the second is the first sent with the head
// held (noted), and the third, the head now hot, is served where the head
// is while the router sends its prompt, one token long, to one idle
// replica. The engines' own counters say what happened: one copy on one
// other replica, one output token, nothing on the third.
func TestHotPrefixCopiedToIdleReplica(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Consul and vllm-sim processes")
	}
	f := startFleet(t)
	r := f.routerWith(t, "router-1", func(c *config.Config) {
		c.Scheduler = scheduler.DefaultConfig()
		c.Scheduler.Replicator = &scheduler.Spec{Type: "hot-prefix", Params: []byte(`{"min_seconds": 1, "min_blocks": 8}`)}
	})
	poll.Until(t, "three replicas from consul", func() bool { return len(r.Replicas().ForModel(model)) == 3 })

	head := longPrompt(21) + longPrompt(22)
	first := call(t, r.Addr(), "/v1/completions", completion(head+" first task", false))
	if first.code != http.StatusOK {
		t.Fatalf("first request: %d %s", first.code, first.body)
	}
	home := first.replica
	waitExact(t, r, home)
	for i, task := range []string{" second task", " third task"} {
		a := call(t, r.Addr(), "/v1/completions", completion(head+task, false))
		if a.code != http.StatusOK || a.replica != home {
			t.Fatalf("request %d over the head: %d on %q; want 200 on %s, which holds it", i+2, a.code, a.replica, home)
		}
	}

	waitMetrics(t, r, `llmgw_prefix_warms_total{result="ok"} 1`)
	var copies []string
	for _, id := range f.ids {
		if id == home {
			continue
		}
		s := f.sims[id]
		switch n := s.metric(t, "vllm:request_success_total"); n {
		case 0:
		case 1:
			copies = append(copies, id)
			if gen := s.metric(t, "vllm:generation_tokens_total"); gen != 1 {
				t.Errorf("the copy on %s generated %g tokens; want 1", id, gen)
			}
			if pt := s.metric(t, "vllm:prompt_tokens_total"); pt < 16*8 {
				t.Errorf("the copy on %s prefilled %g prompt tokens; want the whole prompt, over 128", id, pt)
			}
		default:
			t.Errorf("replica %s served %g requests; want at most the one copy", id, n)
		}
	}
	if len(copies) != 1 {
		t.Fatalf("copies went to %v; want exactly one idle replica besides %s", copies, home)
	}
	if n := f.sims[home].metric(t, "vllm:request_success_total"); n != 3 {
		t.Errorf("%s served %g requests; want the client's 3", home, n)
	}
}
