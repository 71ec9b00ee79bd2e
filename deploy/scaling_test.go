package deploy

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/llmgw/llmgw/consul/consultest"
	"github.com/llmgw/llmgw/router/config"
	"github.com/llmgw/llmgw/router/scheduler"
)

// TestRecommendationFollowsLoad drives the autoscaling signal with load on
// two vllm-sim replicas that a router finds in a real Consul agent: idle it
// recommends no replica; four streams at an in-flight target of 2 a
// replica recommend 2, and two more requests queued behind them (each
// replica is busy at 2) 3; as the queued requests leave it falls back to
// 2, and with the streams ended to 0. It asserts values, each awaited, not
// how soon they come.
func TestRecommendationFollowsLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Consul, two vllm-sim replicas and a router")
	}
	agent := consultest.Start(t)
	startReplica(t, agent.Client, "alloc-0/main")
	startReplica(t, agent.Client, "alloc-1/main")
	r := startRouter(t, agent.Addr, "router-a", func(c *config.Config) {
		c.Scaling.InFlightPerReplica = 2
		c.Scheduler.Filters = append(c.Scheduler.Filters, scheduler.Spec{Type: "busy", Params: []byte(`{"max_in_flight":2}`)})
		c.QueueTimeout = 2 * time.Minute
	})
	gauge := func(name string, v int) string { return fmt.Sprintf("%s{model=%q} %d\n", name, model, v) }
	waitMetric(t, r, gauge("llmgw_model_replicas", 2), gauge("llmgw_model_replicas_recommended", 0))

	body := `{"model":"` + model + `","prompt":"hold a replica","max_tokens":3500,"ignore_eos":true,"stream":true}`
	start := func(ctx context.Context, n int) <-chan int {
		codes := make(chan int, n)
		for range n {
			go func() { codes <- hold(ctx, r.Addr(), "", body) }()
		}
		return codes
	}
	streams, endStreams := context.WithCancel(context.Background())
	defer endStreams()
	streaming := start(streams, 4)
	waitMetric(t, r, gauge("llmgw_model_in_flight", 4), gauge("llmgw_model_replicas_recommended", 2),
		`llmgw_model_replicas_needed{by="in_flight",model="`+model+`"} 2`)
	// The streams' first tokens count against the TTFT target.
	waitMetric(t, r, `llmgw_model_ttft_slo_requests_total{model="`+model+`",result=`)

	queued, leave := context.WithCancel(context.Background())
	defer leave()
	waiting := start(queued, 2)
	waitMetric(t, r, gauge("llmgw_model_queue_waiting", 2), gauge("llmgw_model_replicas_recommended", 3))

	leave()
	for range 2 {
		<-waiting
	}
	waitMetric(t, r, gauge("llmgw_model_queue_waiting", 0), gauge("llmgw_model_replicas_recommended", 2))

	endStreams()
	for range 4 {
		if code := <-streaming; code != http.StatusOK && code != 0 {
			t.Errorf("a held stream answered %d", code)
		}
	}
	waitMetric(t, r, gauge("llmgw_model_in_flight", 0), gauge("llmgw_model_replicas_recommended", 0))
}
