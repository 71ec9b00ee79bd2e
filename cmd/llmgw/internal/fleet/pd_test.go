package fleet

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/llmgw/llmgw/internal/testkit/sdkstream"
)

// TestDisaggregatedFleet: the real driver under the plugin host runs one
// vllm-sim shard with the prefill role and one with the decode role (each
// with its NIXL side-channel port), registered with llmgw-role; a router
// serves streamed completions through the OpenAI SDK, unmodified, in two
// steps: prefilled on the one, decoded on the other, which pulls the
// prompt's blocks over the side channel, only those it lacks; a prompt the
// decode shard caches whole skips the prefill shard.
func TestDisaggregatedFleet(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Consul, the driver, a prefill and a decode vllm-sim shard and a router")
	}
	o := options(t)
	o.Shards, o.Routers, o.Roles = 2, 1, []string{"prefill", "decode"}
	f, err := Start(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	router := f.RouterURLs()[0]
	client := openai.NewClient(option.WithBaseURL(router+"/v1"), option.WithAPIKey(testAPIKey), option.WithMaxRetries(0))
	shards := f.Shards()
	prefill, decode := shards[0].ReplicaID, shards[1].ReplicaID
	// pulled is how many blocks the decode shard has pulled, in all.
	pulled := func() float64 { return engineMetric(t, shards[1].URL, "vllm:nixl_num_descriptors_sum") }

	// a is five full 16-token blocks; b shares its first three.
	a := tokens(1000, 80)
	b := append(append([]int64(nil), a[:48]...), tokens(5000, 32)...)
	text, usage, headers := pdStream(t, client, a)
	if text == "" || usage.CompletionTokens != 5 || usage.PromptTokens != 80 {
		t.Errorf("streamed %q, usage %+v; want 5 tokens of text after 80", text, usage)
	}
	if headers.Get("X-Llmgw-Routing-Mode") != "disaggregated" || headers.Get("X-Llmgw-Replica") != decode || headers.Get("X-Llmgw-Prefill-Replica") != prefill {
		t.Fatalf("route: mode %q replica %q prefill %q; want disaggregated, %s after %s", headers.Get("X-Llmgw-Routing-Mode"),
			headers.Get("X-Llmgw-Replica"), headers.Get("X-Llmgw-Prefill-Replica"), decode, prefill)
	}
	if got := engineMetric(t, shards[1].URL, "vllm:nixl_bytes_transferred_count"); got != 1 {
		t.Errorf("decode shard made %v pulls; want 1", got)
	}
	if got := pulled(); got != 5 {
		t.Errorf("decode shard pulled %v blocks for a; want its 5", got)
	}

	if _, _, headers = pdStream(t, client, b); headers.Get("X-Llmgw-Prefill-Replica") != prefill {
		t.Fatalf("b's route: prefill %q; want %s", headers.Get("X-Llmgw-Prefill-Replica"), prefill)
	}
	if got := pulled() - 5; got != 2 {
		t.Errorf("decode shard pulled %v blocks for b; want only the 2 it lacks", got)
	}

	// a again: the decode shard caches it whole (once the router has its
	// KV events from the driver), so it prefills the last token itself.
	waitFor(t, "the decode shard's blocks of a to reach the router", func() bool {
		return explainPD(t, f.AdminURL(router), a) == "decode_cached"
	})
	text, _, headers = pdStream(t, client, a)
	if text == "" || headers.Get("X-Llmgw-Replica") != decode || headers.Get("X-Llmgw-Routing-Mode") == "disaggregated" || headers.Get("X-Llmgw-Prefill-Replica") != "" {
		t.Errorf("repeat of a: %q, replica %q mode %q prefill %q; want %s alone", text, headers.Get("X-Llmgw-Replica"),
			headers.Get("X-Llmgw-Routing-Mode"), headers.Get("X-Llmgw-Prefill-Replica"), decode)
	}
	if got := pulled(); got != 7 {
		t.Errorf("after the repeat the decode shard pulled %v blocks in all; want still 7", got)
	}
}

// tokens is n consecutive token ids from from.
func tokens(from, n int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = int64(from + i)
	}
	return out
}

// explainPD asks the router's explain API how it would route prompt and
// returns the answer's disaggregated path.
func explainPD(t *testing.T, router string, prompt []int64) string {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"model": "sim-model", "prompt": prompt, "max_tokens": 5})
	req, _ := http.NewRequest(http.MethodPost, router+"/admin/explain/completions", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Disaggregated struct {
			Path string `json:"path"`
		} `json:"disaggregated"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		t.Fatalf("explain: %d: %v", resp.StatusCode, err)
	}
	return out.Disaggregated.Path
}

// engineMetric sums one series of an engine's /metrics over its labels.
func engineMetric(t *testing.T, url, name string) float64 {
	t.Helper()
	resp, err := testClient.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sum := 0.0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, name)
		if !ok || rest == "" || rest[0] != ' ' && rest[0] != '{' {
			continue
		}
		f := strings.Fields(line)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			sum += v
		}
	}
	return sum
}

// pdStream streams a completion of prompt through the OpenAI SDK.
func pdStream(t *testing.T, client openai.Client, prompt []int64) (string, openai.CompletionUsage, http.Header) {
	r := sdkstream.Completion(t, client, "sim-model", prompt, 5)
	return r.Text, r.Usage, r.Headers
}
