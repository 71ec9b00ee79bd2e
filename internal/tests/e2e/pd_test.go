package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/consul/api"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/llmgw/llmgw/cmd/vllm-sim/simproc"
	"github.com/llmgw/llmgw/consul"
	"github.com/llmgw/llmgw/driver/kvevents/intake"
	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/internal/testkit/sdkstream"
	"github.com/llmgw/llmgw/router/server"
)

// pdBytesPerToken sizes the simulators' KV blocks (16 tokens) at 16,000
// bytes, so a pull's bytes count its blocks.
const (
	pdBytesPerToken = 1000
	pdBlockBytes    = 16 * pdBytesPerToken
)

// startPDSim runs one vllm-sim with the NixlConnector role given (vLLM's
// kv_producer or kv_consumer), its side channel on a free loopback port,
// its KV events through the driver's intake into f's store, registered in
// Consul as replica id with the llmgw-role meta. extra flags follow (and
// override) the test's own.
func (f *fleet) startPDSim(t *testing.T, id, kvRole, role string, extra ...string) {
	t.Helper()
	in, err := intake.Open(intake.Config{Replica: id}, f.store)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = in.Close() })
	in.EngineRestarted()
	cfg := fmt.Sprintf(`{"kv_connector":"NixlConnector","kv_role":%q,"engine_id":%q}`, kvRole, id)
	p, err := simproc.Start(context.Background(), simproc.Options{
		Binary: simBinary(t),
		Args: append([]string{model, "--host", "127.0.0.1", "--port", "0", "--block-size", "16", "--seed", "1", "--sim-latency=false",
			"--enable-prompt-tokens-details", "--kv-events-config", in.EngineFlag(), "--kv-transfer-config", cfg, "--sim-kv-bytes-per-token", strconv.Itoa(pdBytesPerToken)}, extra...),
		Env: []string{"VLLM_NIXL_SIDE_CHANNEL_HOST=127.0.0.1", "VLLM_NIXL_SIDE_CHANNEL_PORT=0"},
	}, 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	s := &sim{Proc: p, addr: strings.TrimPrefix(p.URL, "http://")}
	f.sims[id], f.ids = s, append(f.ids, id)
	host, port, _ := net.SplitHostPort(s.addr)
	n, _ := strconv.Atoi(port)
	err = f.agent.Client.Agent().ServiceRegister(&api.AgentServiceRegistration{
		ID: serviceID(id), Name: "vllm", Tags: []string{consul.ReplicaTag}, Address: host, Port: n,
		Meta: map[string]string{consul.MetaModel: model, consul.MetaReplica: id, consul.MetaBlockSize: "16", consul.MetaKVEvents: "true", consul.MetaRole: role},
	})
	if err != nil {
		t.Fatal(err)
	}
}

// pdExplained is the explain API's account of a disaggregated request.
type pdExplained struct {
	Chosen struct {
		Replica string `json:"replica"`
	} `json:"chosen"`
	Disaggregated struct {
		Path         string `json:"path"`
		DecodeCached int    `json:"decode_cached_tokens"`
		Prefill      *struct {
			Replica string `json:"replica"`
		} `json:"prefill"`
	} `json:"disaggregated"`
}

func explainPD(t *testing.T, r *server.Server, tokens []int64) pdExplained {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"model": model, "prompt": tokens})
	resp, err := http.Post("http://"+r.AdminAddr()+"/admin/explain/completions", "application/json", strings.NewReader(string(body)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var e pdExplained
	if err := json.NewDecoder(resp.Body).Decode(&e); err != nil {
		t.Fatal(err)
	}
	return e
}

func tokenRange(from, n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(from + i)
	}
	return out
}

// TestDisaggregatedServing: with real Consul, the driver's KV-event path
// and vllm-sim as a kv_producer and a kv_consumer registered with the
// prefill and decode roles, a streamed completion through the OpenAI SDK
// is prefilled on one and decoded on the other; the decode replica pulls
// only the blocks it lacks; and a prompt the decode replica caches skips
// the remote prefill.
func TestDisaggregatedServing(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Consul, two vllm-sim processes and a router")
	}
	f := startFleetWith(t) // Consul, the driver's store and forwarder; no replicas yet
	const pre, dec = "alloc-p/main", "alloc-d/main"
	f.startPDSim(t, pre, "kv_producer", "prefill")
	f.startPDSim(t, dec, "kv_consumer", "decode")
	r := f.router(t, "router-pd")
	waitExact(t, r, pre, dec)
	client := openai.NewClient(option.WithBaseURL("http://"+r.Addr()+"/v1"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
	pulled := func() float64 { return f.sims[dec].metric(t, "vllm:nixl_bytes_transferred_sum") }

	// a is five full blocks; b shares its first three.
	a := tokenRange(1000, 80)
	b := append(append([]int64(nil), a[:48]...), tokenRange(5000, 32)...)

	text, usage, h := pdStream(t, client, a)
	if text == "" || usage.CompletionTokens != 6 || usage.PromptTokens != 80 {
		t.Errorf("streamed %q, usage %+v; want 6 tokens of text for an 80-token prompt", text, usage)
	}
	if h.Get("X-Llmgw-Routing-Mode") != "disaggregated" || h.Get("X-Llmgw-Replica") != dec || h.Get("X-Llmgw-Prefill-Replica") != pre {
		t.Fatalf("route: mode %q replica %q prefill %q; want disaggregated, %s after %s", h.Get("X-Llmgw-Routing-Mode"), h.Get("X-Llmgw-Replica"), h.Get("X-Llmgw-Prefill-Replica"), dec, pre)
	}
	// vLLM's decode side counts the pulled tokens as computed (the prompt
	// less its last token).
	if got := usage.PromptTokensDetails.CachedTokens; got != 79 {
		t.Errorf("decode cached_tokens %d; want 79", got)
	}
	if got := pulled(); got != 5*pdBlockBytes {
		t.Fatalf("first pull moved %v bytes; want the five blocks (%d)", got, 5*pdBlockBytes)
	}

	// The decode replica's KV events now say it holds a: b's first three
	// blocks are its own, 48 of 80 tokens, under the 0.9 threshold.
	poll.Until(t, "the decode replica's blocks of a in the router's index", func() bool {
		e := explainPD(t, r, b)
		return e.Disaggregated.DecodeCached == 48
	})
	if e := explainPD(t, r, b); e.Disaggregated.Path != "remote_prefill" || e.Chosen.Replica != dec || e.Disaggregated.Prefill == nil || e.Disaggregated.Prefill.Replica != pre {
		t.Fatalf("explained b: %+v; want a remote prefill on %s for %s", e, pre, dec)
	}
	if _, _, h := pdStream(t, client, b); h.Get("X-Llmgw-Prefill-Replica") != pre {
		t.Fatalf("b's route: prefill %q; want %s", h.Get("X-Llmgw-Prefill-Replica"), pre)
	}
	if got := pulled() - 5*pdBlockBytes; got != 2*pdBlockBytes {
		t.Errorf("second pull moved %v bytes; want only the two blocks the decode replica lacks (%d)", got, 2*pdBlockBytes)
	}

	// a again: the decode replica caches all of it, so it prefills the
	// last token itself; the prefill replica is not asked.
	poll.Until(t, "the decode replica to cache all of a", func() bool {
		return explainPD(t, r, a).Disaggregated.Path == "decode_cached"
	})
	prefills := f.sims[pre].metric(t, "vllm:request_success_total")
	if prefills != 2 {
		t.Fatalf("prefill replica served %v requests; want 2 (a and b)", prefills)
	}
	text, usage, h = pdStream(t, client, a)
	if text == "" || h.Get("X-Llmgw-Replica") != dec || h.Get("X-Llmgw-Routing-Mode") == "disaggregated" || h.Get("X-Llmgw-Prefill-Replica") != "" {
		t.Errorf("repeat of a: %q, replica %q mode %q prefill %q; want %s alone", text, h.Get("X-Llmgw-Replica"), h.Get("X-Llmgw-Routing-Mode"), h.Get("X-Llmgw-Prefill-Replica"), dec)
	}
	if got := pulled(); got != 7*pdBlockBytes {
		t.Errorf("the repeat pulled: %v bytes in all; want still 7 blocks", got)
	}
	if got := f.sims[pre].metric(t, "vllm:request_success_total"); got != prefills {
		t.Errorf("prefill replica served %v requests after the repeat; want %v, as before", got, prefills)
	}
	// A local hit is whole blocks short of the prompt's last token: four.
	if got := usage.PromptTokensDetails.CachedTokens; got != 64 {
		t.Errorf("repeat's cached_tokens %d; want 64 (a local hit of four blocks)", got)
	}
	if got := metricValue(t, r, `llmgw_pd_requests_total{path="decode_cached"}`); got != 1 {
		t.Errorf("decode_cached requests %v; want 1", got)
	}
	if got := metricValue(t, r, `llmgw_routing_decisions_total{mode="disaggregated"}`); got != 2 {
		t.Errorf("disaggregated decisions %v; want 2", got)
	}
}

// pdStream streams a completion of prompt through the OpenAI SDK.
func pdStream(t *testing.T, client openai.Client, prompt []int64) (string, openai.CompletionUsage, http.Header) {
	r := sdkstream.Completion(t, client, model, prompt, 6)
	return r.Text, r.Usage, r.Headers
}
