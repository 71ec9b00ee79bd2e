package e2e

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/router/scheduler"
	"github.com/llmgw/llmgw/router/server"
)

// TestDisaggregatedStreamMigrates kills the decode replica of a
// disaggregated stream mid-way: a real Consul agent, the driver's intake,
// vllm-sim as one kv_producer and two kv_consumers (the consumers
// streaming at 20 ms a token), and the router with migration on. The
// prefill replica caches the whole prompt once it has prefilled it, yet
// the continuation goes to the other decode replica, in one step, with
// no kv_transfer_params: that replica pulls nothing and the prefill
// replica serves nothing more. The client reads one seamless stream,
// checked token by token as TestStreamMigratesWhenReplicaDies checks it,
// and the status page names the roles and the decision's prefill replica.
func TestDisaggregatedStreamMigrates(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Consul and vllm-sim processes")
	}
	f := startFleetWith(t)
	const pre, dec0, dec1 = "alloc-p/main", "alloc-d0/main", "alloc-d1/main"
	slow := []string{"--sim-latency=true", "--sim-inter-token-latency", "20ms"}
	f.startPDSim(t, pre, "kv_producer", "prefill")
	f.startPDSim(t, dec0, "kv_consumer", "decode", slow...)
	f.startPDSim(t, dec1, "kv_consumer", "decode", slow...)
	c := routerConfig(token)
	c.Consul.Address = f.agent.Addr
	c.Consul.Services = []string{"vllm"}
	c.Consul.Register = true
	c.Consul.ServiceID = "router-pd-migrate"
	c.Consul.CheckInterval = time.Second
	c.Scheduler = scheduler.Config{
		Filters: []scheduler.Spec{{Type: "model"}, {Type: "healthy"}},
		Scorers: []scheduler.Spec{{Type: "prefix", Weight: 2}, {Type: "load", Weight: 1}},
		Picker:  scheduler.Spec{Type: "max-score"},
	}
	c.Migration.Enabled = true
	r := startRouter(t, c)
	waitExact(t, r, pre, dec0, dec1)

	prompt := longPrompt(44)
	body, _ := json.Marshal(map[string]any{"model": model, "prompt": prompt, "max_tokens": migrateTokens, "seed": migrateSeed,
		"ignore_eos": true, "stream": true, "return_token_ids": true, "stream_options": map[string]bool{"include_usage": true}})
	chunks, raw, dones, h := killedStreamHeader(t, f, r, "/v1/completions", string(body))
	mode, prefill, killed := h.Get("X-Llmgw-Routing-Mode"), h.Get("X-Llmgw-Prefill-Replica"), h.Get("X-Llmgw-Replica")
	if mode != "disaggregated" || prefill != pre || killed == pre {
		t.Fatalf("route: mode %q, prefill %q, decode %q; want disaggregated, %s, a decode replica", mode, prefill, killed, pre)
	}
	checkSeamless(t, chunks, raw, dones)
	s := f.sims[dec0]
	if killed == dec0 {
		s = f.sims[dec1]
	}
	// The survivor served the continuation alone, without a pull; the
	// prefill replica, only the prefill step.
	if got := s.metric(t, "vllm:request_success_total"); got != 1 {
		t.Errorf("the other decode replica served %v requests; want the continuation", got)
	}
	if n, failed := s.metric(t, "vllm:nixl_bytes_transferred_count"), s.metric(t, "vllm:nixl_num_failed_transfers_total"); n != 0 || failed != 0 {
		t.Errorf("the continuation's replica made %v transfers, %v failed; want none: a continuation carries no kv_transfer_params", n, failed)
	}
	if got := f.sims[pre].metric(t, "vllm:request_success_total"); got != 1 {
		t.Errorf("the prefill replica served %v requests; want only the prefill step", got)
	}

	full, promptTokens := seeded(t, s, prompt)
	var got []uint32
	var text strings.Builder
	for _, c := range chunks {
		for _, ch := range c.Choices {
			got = append(got, ch.TokenIDs...)
			if ch.Text != nil {
				text.WriteString(*ch.Text)
			}
		}
	}
	checkContinued(t, r, s, got, text.String(), chunks[len(chunks)-1], full, promptTokens)
	if v := metricValue(t, r, `llmgw_pd_requests_total{path="remote_prefill"}`); v != 1 {
		t.Errorf("remote prefills %v; want 1", v)
	}

	// The status page shows the roles and the disaggregated decision's
	// prefill replica.
	resp, err := http.Get("http://" + r.AdminAddr() + server.StatusPath)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	page, _ := io.ReadAll(resp.Body)
	for _, want := range []string{
		`data-replica="` + pre + `" data-mode="exact" data-role="prefill"`,
		`data-replica="` + dec0 + `" data-mode="exact" data-role="decode"`,
		`data-replica="` + dec1 + `" data-mode="exact" data-role="decode"`,
		`<td>` + killed + `</td><td class="prefill">` + pre + `</td><td><span class="mode mode-disaggregated">disaggregated</span>`,
	} {
		if !strings.Contains(string(page), want) {
			t.Errorf("status page (%d) lacks %q", resp.StatusCode, want)
		}
	}
}
