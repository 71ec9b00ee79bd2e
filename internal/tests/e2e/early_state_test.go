package e2e

import (
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/router/scheduler"
	"github.com/llmgw/llmgw/router/server"
)

// metricValue reads one series (name with its labels, as exposed) from the
// router's /metrics; -1 when it is absent.
func metricValue(t *testing.T, r *server.Server, series string) float64 {
	t.Helper()
	for _, line := range strings.Split(metricsText(t, r), "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatalf("metric %s: %v", line, err)
			}
			return f
		}
	}
	return -1
}

// TestStateBeforeRegistration: a replica whose driver reports its KV state
// before Consul lists it (the engine serves before its health check
// passes) is routed exact as soon as the router lists it, from the state
// the router kept: no snapshot is asked of the driver, so nothing waits
// for the driver's keep-alive. Real Consul agent, vllm-sim engines, the
// driver's intake and forwarder.
func TestStateBeforeRegistration(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Consul and vllm-sim processes")
	}
	f := startFleetWith(t, nil, nil)
	late := f.ids[1]
	if err := f.agent.Client.Agent().ServiceDeregister(serviceID(late)); err != nil {
		t.Fatal(err)
	}
	r := f.router(t, "router-1")
	poll.Until(t, "the router to list only the first replica", func() bool {
		all := r.Replicas().All()
		return len(all) == 1 && all[0].ID == f.ids[0]
	})

	// The late replica serves a prompt (straight to the engine) before
	// Consul lists it; its blocks reach the router through the driver.
	prompt := longPrompt(11)
	resp, err := http.Post("http://"+f.sims[late].addr+"/v1/completions", "application/json", strings.NewReader(completion(prompt, false)))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the late replica answered %s", resp.Status)
	}
	poll.Until(t, "the router to keep the unlisted replica's blocks", func() bool {
		return metricValue(t, r, "llmgw_kv_ingest_pending_keys") > 0
	})
	snapshots := metricValue(t, r, `llmgw_kv_ingest_total{kind="snapshots"}`)
	if r.Replicas().Mode(late) == scheduler.ModeExact {
		t.Fatal("an unlisted replica is exact")
	}

	f.register(t, late)
	poll.Until(t, "the late replica in exact mode", func() bool { return r.Replicas().Mode(late) == scheduler.ModeExact })
	if got := metricValue(t, r, `llmgw_kv_ingest_total{kind="snapshots"}`); got != snapshots {
		t.Errorf("snapshots %v after the replica joined; want %v: exact mode must come from the kept state, not a resnapshot", got, snapshots)
	}
	if got := metricValue(t, r, `llmgw_kv_ingest_total{kind="adopted"}`); got != 1 {
		t.Errorf("adopted %v; want 1", got)
	}
	if got := metricValue(t, r, "llmgw_kv_ingest_pending_replicas"); got != 0 {
		t.Errorf("pending replicas %v after the join; want 0", got)
	}
	a := call(t, r.Addr(), "/v1/completions", completion(prompt, false))
	if a.code != 200 || a.replica != late || a.mode != "exact" || a.cached == 0 {
		t.Fatalf("repeat: %d on %q mode %q predicted %d; want 200 on %q, exact, > 0", a.code, a.replica, a.mode, a.cached, late)
	}
	if cachedTokens(t, a.body) == 0 {
		t.Errorf("replica %s reports no cached tokens", late)
	}
}
