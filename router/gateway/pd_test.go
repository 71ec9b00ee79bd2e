package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	oai "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/llmgw/llmgw/cmd/vllm-sim/simencoder"
	"github.com/llmgw/llmgw/internal/kvwire"
	"github.com/llmgw/llmgw/internal/testkit/poll"
	"github.com/llmgw/llmgw/router/auth"
	"github.com/llmgw/llmgw/router/disagg"
	"github.com/llmgw/llmgw/router/index"
	"github.com/llmgw/llmgw/router/ingest"
	"github.com/llmgw/llmgw/router/load"
	"github.com/llmgw/llmgw/router/openai"
	"github.com/llmgw/llmgw/router/prompt"
	"github.com/llmgw/llmgw/router/ratelimit"
	"github.com/llmgw/llmgw/router/replicas"
	"github.com/llmgw/llmgw/router/route"
	"github.com/llmgw/llmgw/router/scheduler"
)

// pdEngine is an engine that speaks the P/D protocol as vLLM's
// NixlConnector does: a prefill request (kv_transfer_params with
// do_remote_decode) gets a one-token answer with the parameters a decode
// replica needs; any other request is answered as a normal completion,
// streamed when asked. It records what it was sent.
type pdEngine struct {
	name   string
	status int // answer prefill requests with this status instead (0: 200)
	noKV   bool
	// failFirst, shared by engines, fails the first prefill request any
	// of them gets with a 503.
	failFirst *atomic.Bool

	mu   sync.Mutex
	got  []map[string]any
	ids  []string
	auth []string
	addr string
}

func (e *pdEngine) requests() ([]map[string]any, []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]map[string]any(nil), e.got...), append([]string(nil), e.ids...)
}

func (e *pdEngine) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	b, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(b, &body); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	e.mu.Lock()
	e.got = append(e.got, body)
	e.ids = append(e.ids, r.Header.Get(disagg.HeaderRequestID))
	e.auth = append(e.auth, r.Header.Get("Authorization"))
	e.mu.Unlock()
	kv, _ := body["kv_transfer_params"].(map[string]any)
	if kv != nil && kv["do_remote_decode"] == true {
		status := e.status
		if e.failFirst != nil && e.failFirst.CompareAndSwap(true, false) {
			status = http.StatusServiceUnavailable
		}
		if status != 0 {
			w.WriteHeader(status)
			_, _ = io.WriteString(w, `{"error":{"message":"refused by `+e.name+`"}}`)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		params := `,"kv_transfer_params":{"do_remote_prefill":true,"do_remote_decode":false,"remote_engine_id":"` + e.name + `-engine","remote_block_ids":[1,2,3],"remote_host":"127.0.0.1","remote_port":5600,"tp_size":1}`
		if e.noKV {
			params = ""
		}
		_, _ = io.WriteString(w, `{"id":"cmpl-p","object":"text_completion","choices":[{"index":0,"text":"x","finish_reason":"length"}],"usage":{"prompt_tokens":40,"completion_tokens":1,"total_tokens":41}`+params+`}`)
		return
	}
	words := []string{"one", " two", " three"}
	if body["stream"] != true {
		w.Header().Set("Content-Type", "application/json")
		_, _ = fmt.Fprintf(w, `{"id":"cmpl-%s","object":"text_completion","created":1,"model":"m","choices":[{"index":0,"text":"%s","finish_reason":"length"}],"usage":{"prompt_tokens":40,"completion_tokens":3,"total_tokens":43}}`, e.name, strings.Join(words, ""))
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	for _, word := range words {
		_, _ = fmt.Fprintf(w, "data: {\"id\":\"cmpl-%s\",\"object\":\"text_completion\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"text\":%q,\"finish_reason\":null}]}\n\n", e.name, word)
		w.(http.Flusher).Flush()
	}
	_, _ = fmt.Fprintf(w, "data: {\"id\":\"cmpl-%s\",\"object\":\"text_completion\",\"created\":1,\"model\":\"m\",\"choices\":[],\"usage\":{\"prompt_tokens\":40,\"completion_tokens\":3,\"total_tokens\":43}}\n\ndata: [DONE]\n\n", e.name)
}

type pdHarness struct {
	*harness
	sink    *ingest.Sink
	engines map[string]*pdEngine
}

// newPDHarness runs a gateway for model "m" over one engine per role
// given, named p0, p1, ... for prefill, d0, ... for decode and a0, ... for
// aggregated replicas.
func newPDHarness(t *testing.T, edit func(*testDeps, *scheduler.Config), roles ...replicas.Role) *pdHarness {
	t.Helper()
	models := index.NewModels(index.Options{})
	sink := ingest.New(models, ingest.Options{})
	tracker := load.NewTracker(load.WithPrefillRate(0))
	set := replicas.New(sink, tracker, replicas.Options{})
	engines := map[string]*pdEngine{}
	var list []replicas.Replica
	counts := map[replicas.Role]int{}
	for _, role := range roles {
		name := fmt.Sprintf("%c%d", map[replicas.Role]byte{replicas.RolePrefill: 'p', replicas.RoleDecode: 'd', replicas.RoleAggregated: 'a'}[role], counts[role])
		counts[role]++
		e := &pdEngine{name: name}
		s := httptest.NewServer(e)
		t.Cleanup(s.Close)
		e.addr = s.Listener.Addr().String()
		engines[name] = e
		list = append(list, replicas.Replica{ID: name, Model: "m", Address: e.addr, BlockSize: 16, Source: "static", Role: role})
	}
	set.Replace(list)
	return &pdHarness{harness: buildHarness(t, set, tracker, models, edit), sink: sink, engines: engines}
}

func (h *pdHarness) pdPath(path string) float64 {
	return testutil.ToFloat64(h.planner.Metrics().PD.WithLabelValues(path))
}

var pdPrompt = strings.Repeat("a long shared document about routing ", 12)

// TestPDTwoSteps: a streamed completion to a model with prefill and
// decode replicas goes to the prefill replica first, as vLLM's proxy
// examples send it (one unstreamed token, kv_transfer_params asking for a
// remote decode, no stream_options or min_tokens), then to the decode
// replica with the client's request and the prefill answer's parameters,
// under one X-Request-Id; the OpenAI SDK reads the decode replica's
// stream, usage included, unmodified.
func TestPDTwoSteps(t *testing.T) {
	h := newPDHarness(t, nil, replicas.RolePrefill, replicas.RoleDecode)
	client := oai.NewClient(option.WithBaseURL(h.srv.URL+"/v1"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
	var headers http.Header
	stream := client.Completions.NewStreaming(context.Background(), oai.CompletionNewParams{
		Model:         oai.CompletionNewParamsModel("m"),
		Prompt:        oai.CompletionNewParamsPromptUnion{OfString: oai.String(pdPrompt)},
		MaxTokens:     oai.Int(50),
		StreamOptions: oai.ChatCompletionStreamOptionsParam{IncludeUsage: oai.Bool(true)},
	}, option.WithJSONSet("min_tokens", 3), option.WithMiddleware(func(r *http.Request, next option.MiddlewareNext) (*http.Response, error) {
		resp, err := next(r)
		if resp != nil {
			headers = resp.Header
		}
		return resp, err
	}))
	var text strings.Builder
	var usage oai.CompletionUsage
	for stream.Next() {
		ch := stream.Current()
		if len(ch.Choices) > 0 {
			text.WriteString(ch.Choices[0].Text)
		}
		if ch.Usage.TotalTokens > 0 {
			usage = ch.Usage
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	if text.String() != "one two three" || usage.CompletionTokens != 3 || usage.PromptTokens != 40 {
		t.Errorf("client got %q, usage %+v; want the decode replica's stream and usage", text.String(), usage)
	}
	if headers.Get(HeaderMode) != string(route.ModeDisaggregated) || headers.Get(HeaderReplica) != "d0" || headers.Get(HeaderPrefillReplica) != "p0" {
		t.Errorf("route headers mode %q replica %q prefill %q; want disaggregated, d0, p0", headers.Get(HeaderMode), headers.Get(HeaderReplica), headers.Get(HeaderPrefillReplica))
	}

	pre, preIDs := h.engines["p0"].requests()
	dec, decIDs := h.engines["d0"].requests()
	if len(pre) != 1 || len(dec) != 1 {
		t.Fatalf("prefill got %d requests, decode %d; want one each", len(pre), len(dec))
	}
	p := pre[0]
	if p["stream"] != false || p["max_tokens"] != 1.0 || p["stream_options"] != nil || p["min_tokens"] != nil || p["prompt"] != pdPrompt {
		t.Errorf("prefill request %v", p)
	}
	if kv, _ := p["kv_transfer_params"].(map[string]any); kv["do_remote_decode"] != true || kv["do_remote_prefill"] != false {
		t.Errorf("prefill kv_transfer_params %v", p["kv_transfer_params"])
	}
	d := dec[0]
	if d["stream"] != true || d["max_tokens"] != 50.0 || d["min_tokens"] != 3.0 || d["stream_options"] == nil {
		t.Errorf("decode request %v; want the client's, streamed, min_tokens kept", d)
	}
	kv, _ := d["kv_transfer_params"].(map[string]any)
	if kv["do_remote_prefill"] != true || kv["remote_engine_id"] != "p0-engine" || kv["remote_port"] != 5600.0 || kv["tp_size"] != 1.0 {
		t.Errorf("decode kv_transfer_params %v; want the prefill answer's, whole", kv)
	}
	if preIDs[0] == "" || preIDs[0] != decIDs[0] {
		t.Errorf("X-Request-Id: prefill %q, decode %q; want one id for both steps", preIDs[0], decIDs[0])
	}
	if got := h.pdPath(route.PDRemote); got != 1 {
		t.Errorf("remote prefills counted %g; want 1", got)
	}
	if got := testutil.ToFloat64(h.planner.Metrics().Decisions.WithLabelValues(string(route.ModeDisaggregated))); got != 1 {
		t.Errorf("disaggregated decisions %g; want 1", got)
	}
	if ds := h.planner.RecentDecisions(); len(ds) != 1 || ds[0].Replica != "d0" || ds[0].Prefill != "p0" || ds[0].Mode != route.ModeDisaggregated {
		t.Errorf("decision log %+v; want d0 with prefill p0", ds)
	}
}

// TestPDPrefillRetriesThenFallsBack: a prefill replica that fails is
// retried on the next; when every one fails (a 503, an answer without
// kv_transfer_params from a replica running without a KV connector), the
// decode replica serves the client's request as it came.
func TestPDPrefillRetriesThenFallsBack(t *testing.T) {
	t.Run("retry", func(t *testing.T) {
		h := newPDHarness(t, nil, replicas.RolePrefill, replicas.RolePrefill, replicas.RoleDecode)
		fail := &atomic.Bool{}
		fail.Store(true)
		h.engines["p0"].failFirst, h.engines["p1"].failFirst = fail, fail
		resp, b := post(t, h.srv.URL+"/v1/completions", `{"model":"m","prompt":"`+pdPrompt+`","max_tokens":5}`)
		served := resp.Header.Get(HeaderPrefillReplica)
		if resp.StatusCode != http.StatusOK || served != "p0" && served != "p1" {
			t.Fatalf("%d prefill %q: %s; want 200 prefilled on p0 or p1", resp.StatusCode, served, b)
		}
		for _, p := range []string{"p0", "p1"} {
			if got, _ := h.engines[p].requests(); len(got) != 1 {
				t.Errorf("%s got %d prefill requests; want 1 (the first failed, the other served)", p, len(got))
			}
		}
		dec, _ := h.engines["d0"].requests()
		if kv, _ := dec[0]["kv_transfer_params"].(map[string]any); kv["remote_engine_id"] != served+"-engine" {
			t.Errorf("decode request %v; want %s's parameters", dec[0], served)
		}
		if got := h.pdPath(route.PDRemote); got != 1 {
			t.Errorf("remote prefills counted %g; want 1", got)
		}
	})
	t.Run("fallback", func(t *testing.T) {
		h := newPDHarness(t, nil, replicas.RolePrefill, replicas.RolePrefill, replicas.RoleDecode)
		h.engines["p0"].status = http.StatusServiceUnavailable
		h.engines["p1"].noKV = true
		resp, b := post(t, h.srv.URL+"/v1/completions", `{"model":"m","prompt":"`+pdPrompt+`","max_tokens":5}`)
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "one two three") {
			t.Fatalf("%d %s; want the decode replica's answer", resp.StatusCode, b)
		}
		if m := resp.Header.Get(HeaderMode); m == string(route.ModeDisaggregated) || resp.Header.Get(HeaderPrefillReplica) != "" {
			t.Errorf("mode %q, prefill %q; want the decode replica serving whole", m, resp.Header.Get(HeaderPrefillReplica))
		}
		dec, _ := h.engines["d0"].requests()
		if len(dec) != 1 || dec[0]["kv_transfer_params"] != nil || dec[0]["max_tokens"] != 5.0 {
			t.Errorf("decode requests %v; want the client's own", dec)
		}
		for _, p := range []string{"p0", "p1"} {
			if got, _ := h.engines[p].requests(); len(got) != 1 {
				t.Errorf("%s got %d prefill requests; want 1", p, len(got))
			}
		}
		if got := h.pdPath(route.PDPrefillFailed); got != 1 {
			t.Errorf("prefill failures counted %g; want 1", got)
		}
		if got := testutil.ToFloat64(h.gw.d.Metrics.Attempts.WithLabelValues("bad_prefill_response")); got != 1 {
			t.Errorf("bad prefill responses %g; want 1", got)
		}
	})
}

// TestPDPrefillRefusal: a prefill replica's 400 reaches the client as it
// is, and the decode replica is never asked.
func TestPDPrefillRefusal(t *testing.T) {
	h := newPDHarness(t, nil, replicas.RolePrefill, replicas.RoleDecode)
	h.engines["p0"].status = http.StatusBadRequest
	resp, b := post(t, h.srv.URL+"/v1/completions", `{"model":"m","prompt":"`+pdPrompt+`","max_tokens":5}`)
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "refused by p0") {
		t.Fatalf("%d %s; want p0's 400", resp.StatusCode, b)
	}
	if dec, _ := h.engines["d0"].requests(); len(dec) != 0 {
		t.Errorf("decode replica asked %d times; want never", len(dec))
	}
}

// TestPDMixedFleet: without a usable decode replica every replica serves
// whole requests; a model with only aggregated replicas never sees a
// prefill request.
func TestPDMixedFleet(t *testing.T) {
	h := newPDHarness(t, nil, replicas.RolePrefill, replicas.RoleDecode, replicas.RoleAggregated)
	for range 3 {
		h.set.Failed("d0") // open its breaker
	}
	resp, b := post(t, h.srv.URL+"/v1/completions", `{"model":"m","prompt":"`+pdPrompt+`","max_tokens":5}`)
	if resp.StatusCode != http.StatusOK || resp.Header.Get(HeaderPrefillReplica) != "" || resp.Header.Get(HeaderReplica) == "d0" {
		t.Fatalf("%d replica %q prefill %q: %s; want a whole request on p0 or a0", resp.StatusCode, resp.Header.Get(HeaderReplica), resp.Header.Get(HeaderPrefillReplica), b)
	}
	if got := h.pdPath(route.PDNoRole); got != 1 {
		t.Errorf("role_unavailable counted %g; want 1", got)
	}
	for _, e := range h.engines {
		got, _ := e.requests()
		for _, r := range got {
			if r["kv_transfer_params"] != nil {
				t.Errorf("%s got kv_transfer_params %v", e.name, r["kv_transfer_params"])
			}
		}
	}
}

// promptKeys are the block keys the gateway computes for a completion of
// text.
func promptKeys(t *testing.T, text string) []uint64 {
	t.Helper()
	prompts, _ := prompt.New(map[string]prompt.Source{"m": {Encoder: simencoder.Encoder{}}})
	req, err := openai.Parse(openai.Completion, []byte(`{"model":"m","prompt":"`+text+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	res, err := prompts.ComputeFor(req, prompt.Target{Model: "m", BlockSize: 16})
	if err != nil || len(res.Keys) < 4 {
		t.Fatalf("keys: %v (%d)", err, len(res.Keys))
	}
	out := make([]uint64, len(res.Keys))
	for i, k := range res.Keys {
		out[i] = uint64(k)
	}
	return out
}

// TestPDDeciderCountsCPUHits pins llm-d's bug 1047 away: a decode replica
// holding the whole prompt in CPU memory caches all of it for the
// decider, though its prefix score weighs CPU blocks at 0.75, under the
// 0.9 threshold; it prefills the prompt itself. Holding half the prompt,
// it does not.
func TestPDDeciderCountsCPUHits(t *testing.T) {
	keys := promptKeys(t, pdPrompt)
	for _, c := range []struct {
		name   string
		blocks []uint64
		path   string
	}{
		{"whole prompt on CPU", keys, route.PDCached},
		{"half the prompt on CPU", keys[:len(keys)/2], route.PDRemote},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newPDHarness(t, func(d *testDeps, _ *scheduler.Config) { d.Route.Options.PD = disagg.Threshold{Fraction: 0.9} }, replicas.RolePrefill, replicas.RoleDecode)
			h.sink.ApplyUpdate(&kvwire.Update{Version: kvwire.Version, Driver: "drv", Epoch: 1, Seq: 1, Snapshot: true,
				Replicas: []kvwire.Replica{
					{ID: "d0", BlockSize: 16, Groups: []kvwire.Group{{Tier: kvwire.TierCPU, Add: c.blocks}}},
					{ID: "p0", BlockSize: 16},
				}})
			resp, b := post(t, h.admin.URL+"/admin/explain/completions", `{"model":"m","prompt":"`+pdPrompt+`"}`)
			var ex struct {
				Chosen        route.Explained
				Disaggregated route.ExplainedPD
			}
			if err := json.Unmarshal(b, &ex); err != nil || resp.StatusCode != http.StatusOK {
				t.Fatalf("explain: %d %s", resp.StatusCode, b)
			}
			if ex.Disaggregated.Path != c.path || ex.Disaggregated.DecodeCached != len(c.blocks)*16 || ex.Chosen.Replica != "d0" {
				t.Fatalf("route.Explained %+v (chosen %s); want path %s with %d cached tokens on d0", ex.Disaggregated, ex.Chosen.Replica, c.path, len(c.blocks)*16)
			}
			if c.path == route.PDRemote && (ex.Disaggregated.Prefill == nil || ex.Disaggregated.Prefill.Replica != "p0") {
				t.Errorf("route.Explained prefill %+v; want p0", ex.Disaggregated.Prefill)
			}
			resp, b = post(t, h.srv.URL+"/v1/completions", `{"model":"m","prompt":"`+pdPrompt+`","max_tokens":5}`)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%d %s", resp.StatusCode, b)
			}
			pre, _ := h.engines["p0"].requests()
			if remote := c.path == route.PDRemote; remote != (len(pre) == 1) {
				t.Errorf("prefill replica got %d requests; want remote prefill %v", len(pre), remote)
			}
			if got := h.pdPath(c.path); got != 1 {
				t.Errorf("path %s counted %g; want 1", c.path, got)
			}
		})
	}
}

// TestPDTenants: a tenant's request is one request to its limits, whose
// token charge is corrected from the decode answer's usage (43 tokens),
// not the prefill's; an isolated tenant's cache_salt reaches both steps,
// and the client's key neither.
func TestPDTenants(t *testing.T) {
	store, err := auth.Open(auth.Options{Keys: []string{listKey}, File: keysFile(t)})
	if err != nil {
		t.Fatal(err)
	}
	h := newPDHarness(t, func(d *testDeps, _ *scheduler.Config) { d.Auth, d.Route.Limits = store, ratelimit.New() }, replicas.RolePrefill, replicas.RoleDecode)
	url := h.srv.URL + "/v1/completions"
	body := `{"model":"m","prompt":"` + pdPrompt + `","max_tokens":400}`
	if resp, b := call(t, url, "Bearer "+tokensKey, body); resp.StatusCode != http.StatusOK || resp.Header.Get(HeaderPrefillReplica) != "p0" {
		t.Fatalf("%d %s; want 200 through p0", resp.StatusCode, b)
	}
	poll.Until(t, "the request's usage to be charged", func() bool {
		u := h.limits.Own()["tokens"]
		return u.Tokens == 43 && u.Requests == 1 && u.InFlight == 0
	})
	if resp, b := call(t, url, "Bearer "+isolatedKey, body); resp.StatusCode != http.StatusOK {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	salt := auth.CacheSalt(saltSecret, "isolated")
	for _, name := range []string{"p0", "d0"} {
		got, _ := h.engines[name].requests()
		if len(got) != 2 || got[0]["cache_salt"] != nil || got[1]["cache_salt"] != salt {
			t.Errorf("%s got %v; want the isolated tenant's salt on its request only", name, got)
		}
		e := h.engines[name]
		e.mu.Lock()
		for _, a := range e.auth {
			if a != "" {
				t.Errorf("%s got Authorization %q; want none (no engine key)", name, a)
			}
		}
		e.mu.Unlock()
	}
}

// TestPDAggregatedWins: an aggregated replica that caches the prompt wins
// the decode step and serves the request whole; no prefill is sent.
func TestPDAggregatedWins(t *testing.T) {
	h := newPDHarness(t, nil, replicas.RolePrefill, replicas.RoleDecode, replicas.RoleAggregated)
	h.sink.ApplyUpdate(&kvwire.Update{Version: kvwire.Version, Driver: "drv", Epoch: 1, Seq: 1, Snapshot: true,
		Replicas: []kvwire.Replica{
			{ID: "a0", BlockSize: 16, Groups: []kvwire.Group{{Tier: kvwire.TierGPU, Add: promptKeys(t, pdPrompt)}}},
			{ID: "d0", BlockSize: 16}, {ID: "p0", BlockSize: 16},
		}})
	resp, b := post(t, h.srv.URL+"/v1/completions", `{"model":"m","prompt":"`+pdPrompt+`","max_tokens":5}`)
	if resp.StatusCode != http.StatusOK || resp.Header.Get(HeaderReplica) != "a0" || resp.Header.Get(HeaderPrefillReplica) != "" {
		t.Fatalf("%d replica %q prefill %q: %s; want a0 serving whole", resp.StatusCode, resp.Header.Get(HeaderReplica), resp.Header.Get(HeaderPrefillReplica), b)
	}
	if got := h.pdPath(route.PDAggregated); got != 1 {
		t.Errorf("aggregated_replica counted %g; want 1", got)
	}
	if pre, _ := h.engines["p0"].requests(); len(pre) != 0 {
		t.Errorf("prefill replica got %d requests; want none", len(pre))
	}
}
