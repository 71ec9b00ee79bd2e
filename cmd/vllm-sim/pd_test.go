package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/llmgw/llmgw/internal/testkit/poll"
)

// The tests here play vLLM's toy P/D proxy against two simulators: a
// prefill step with do_remote_decode to one, then the decode step with the
// prefill's kv_transfer_params to the other.

// pdBytesPerToken makes a block 16 * 1000 bytes in the tests.
const pdBytesPerToken = 1000

const pdBlockBytes = 16 * pdBytesPerToken

// pdEnv points the side channel at loopback on a free port.
var pdEnv = []string{"VLLM_NIXL_SIDE_CHANNEL_HOST=127.0.0.1", "VLLM_NIXL_SIDE_CHANNEL_PORT=0"}

func pdFlags(engineID, role string, extra ...string) []string {
	cfg := fmt.Sprintf(`{"kv_connector":"NixlConnector","kv_role":%q,"engine_id":%q}`, role, engineID)
	return append([]string{"--block-size", "16", "--kv-transfer-config", cfg, "--sim-kv-bytes-per-token", strconv.Itoa(pdBytesPerToken),
		"--enable-prompt-tokens-details"}, extra...)
}

// transferParams is kv_transfer_params as the prefill step answers them.
type transferParams struct {
	DoRemotePrefill bool    `json:"do_remote_prefill"`
	DoRemoteDecode  bool    `json:"do_remote_decode"`
	RemoteBlockIDs  [][]int `json:"remote_block_ids"`
	RemoteEngineID  string  `json:"remote_engine_id"`
	RemoteRequestID string  `json:"remote_request_id"`
	RemoteHost      string  `json:"remote_host"`
	RemotePort      int     `json:"remote_port"`
	TPSize          int     `json:"tp_size"`
}

// prefillStep sends the proxy's first request: the client's body with
// do_remote_decode, max_tokens 1 and no streaming.
func prefillStep(t *testing.T, p proc, prompt []uint32) (transferParams, completion) {
	t.Helper()
	body := map[string]any{
		"model": "sim-model", "prompt": prompt, "max_tokens": 1, "stream": false,
		"kv_transfer_params": map[string]any{
			"do_remote_decode": true, "do_remote_prefill": false, "remote_engine_id": nil,
			"remote_block_ids": nil, "remote_host": nil, "remote_port": nil,
		},
	}
	var out struct {
		completion
		KV *transferParams `json:"kv_transfer_params"`
	}
	if st := post(t, p.URL+"/v1/completions", body, &out); st != http.StatusOK {
		t.Fatalf("prefill step: status %d: %+v", st, out.Error)
	}
	if out.KV == nil {
		t.Fatal("prefill step answered no kv_transfer_params")
	}
	return *out.KV, out.completion
}

// decodeStep sends the original body, streamed, with the prefill's params,
// and returns the streamed text and the usage chunk.
func decodeStep(t *testing.T, p proc, prompt []uint32, kv any, maxTokens int) (string, usageJSON) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{
		"model": "sim-model", "prompt": prompt, "max_tokens": maxTokens, "ignore_eos": true,
		"stream": true, "stream_options": map[string]any{"include_usage": true}, "kv_transfer_params": kv,
	})
	resp, err := http.Post(p.URL+"/v1/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		var c completion
		_ = json.NewDecoder(resp.Body).Decode(&c)
		t.Fatalf("decode step: status %d: %+v", resp.StatusCode, c.Error)
	}
	var text strings.Builder
	var u usageJSON
	done := false
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if line == "[DONE]" {
			done = true
			break
		}
		var chunk struct {
			Choices []struct {
				Text string `json:"text"`
			} `json:"choices"`
			Usage *usageJSON `json:"usage"`
		}
		if err := json.Unmarshal([]byte(line), &chunk); err != nil {
			t.Fatalf("chunk %q: %v", line, err)
		}
		for _, c := range chunk.Choices {
			text.WriteString(c.Text)
		}
		if chunk.Usage != nil {
			u = *chunk.Usage
		}
	}
	if !done {
		t.Fatal("decode stream ended without [DONE]")
	}
	return text.String(), u
}

// metric sums a series over its labels from /metrics.
func metric(t *testing.T, p proc, name string) float64 {
	t.Helper()
	resp, err := http.Get(p.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sum, found := 0.0, false
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, name+"{") && !strings.HasPrefix(line, name+" ") {
			continue
		}
		f := strings.Fields(line)
		v, err := strconv.ParseFloat(f[len(f)-1], 64)
		if err != nil {
			t.Fatalf("metric line %q: %v", line, err)
		}
		sum, found = sum+v, true
	}
	if !found {
		t.Fatalf("/metrics has no %s", name)
	}
	return sum
}

// refCounts maps each GPU block's tokens (as a string) to its reference
// count: what the ground-truth dump says is held.
func refCounts(t *testing.T, p proc) map[string]int {
	t.Helper()
	resp, err := http.Get(p.URL + "/debug/kv/blocks")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var d struct {
		Blocks []struct {
			TokenIDs []uint32 `json:"token_ids"`
			Medium   string   `json:"medium"`
			RefCnt   int      `json:"ref_cnt"`
		} `json:"blocks"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&d); err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, b := range d.Blocks {
		if b.Medium == "GPU" {
			out[fmt.Sprint(b.TokenIDs)] += b.RefCnt
		}
	}
	return out
}

// ids makes n token ids starting at from.
func ids(from, n int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = uint32(from + i)
	}
	return out
}

func TestDisaggregatedPullsOnlyMissingBlocks(t *testing.T) {
	pSub, dSub := newSub(t), newSub(t)
	p := startSim(t, pdEnv, append(pdFlags("prefill-0", "kv_producer"), "--kv-events-config", pSub.flag("kv"))...)
	d := startSim(t, pdEnv, append(pdFlags("decode-0", "kv_consumer"), "--kv-events-config", dSub.flag("kv"))...)

	// Prompt a is five full blocks; b shares its first three.
	a := ids(1000, 80)
	b := append(append([]uint32(nil), a[:48]...), ids(5000, 32)...)

	kv, pre := prefillStep(t, p, a)
	want := transferParams{DoRemotePrefill: true, RemoteEngineID: "prefill-0", RemoteHost: "127.0.0.1", TPSize: 1,
		RemoteBlockIDs: kv.RemoteBlockIDs, RemoteRequestID: kv.RemoteRequestID, RemotePort: kv.RemotePort}
	if diff := cmp.Diff(want, kv); diff != "" {
		t.Errorf("prefill kv_transfer_params (-want +got):\n%s", diff)
	}
	if len(kv.RemoteBlockIDs) != 1 || len(kv.RemoteBlockIDs[0]) != 5 || kv.RemoteRequestID == "" || kv.RemotePort == 0 {
		t.Fatalf("prefill params %+v: want five block ids of one group, a request id and a port", kv)
	}
	if got := pre.Choices[0].FinishReason; got != "length" {
		t.Errorf("prefill finish_reason %q, want length", got)
	}
	// Held for the transfer: every prompt block is referenced.
	block0 := fmt.Sprint(a[:16])
	if rc := refCounts(t, p)[block0]; rc != 1 {
		t.Fatalf("prefill side holds block 0 with %d references before the pull; want 1", rc)
	}

	text, u := decodeStep(t, d, a, kv, 8)
	if text == "" || u.CompletionTokens != 8 {
		t.Errorf("decode streamed %q with %d completion tokens; want 8 tokens of text", text, u.CompletionTokens)
	}
	// vLLM's decode side counts the pulled tokens as computed: the prompt
	// less its last token, which it recomputes.
	if u.PromptTokensDetails.CachedTokens != len(a)-1 {
		t.Errorf("decode cached_tokens %d, want %d", u.PromptTokensDetails.CachedTokens, len(a)-1)
	}
	if got := metric(t, d, "vllm:nixl_bytes_transferred_sum"); got != 5*pdBlockBytes {
		t.Errorf("first pull moved %v bytes, want five blocks (%d)", got, 5*pdBlockBytes)
	}
	// Read, so released: the blocks stay cached but unreferenced.
	if rc, ok := refCounts(t, p)[block0]; !ok || rc != 0 {
		t.Errorf("prefill side block 0 after the pull: cached %v with %d references; want cached, 0", ok, rc)
	}

	kvB, preB := prefillStep(t, p, b)
	if preB.Usage.PromptTokensDetails.CachedTokens != 48 {
		t.Errorf("prefill of b cached_tokens %d, want the 48 shared tokens", preB.Usage.PromptTokensDetails.CachedTokens)
	}
	_, uB := decodeStep(t, d, b, kvB, 4)
	if got := metric(t, d, "vllm:nixl_bytes_transferred_sum") - 5*pdBlockBytes; got != 2*pdBlockBytes {
		t.Errorf("second pull moved %v bytes, want only the two blocks the decode side lacks (%d)", got, 2*pdBlockBytes)
	}
	if got := metric(t, d, "vllm:nixl_num_descriptors_sum"); got != 5+2 {
		t.Errorf("descriptors %v, want 7 blocks over both pulls", got)
	}
	if uB.PromptTokensDetails.CachedTokens != len(b)-1 {
		t.Errorf("decode of b cached_tokens %d, want %d", uB.PromptTokensDetails.CachedTokens, len(b)-1)
	}

	// KV events: the decode side stores the pulled blocks (vLLM caches
	// them on arrival), the prefill side removes nothing when it frees
	// them; each side's events replay to its cache's ground truth.
	for _, side := range []struct {
		name string
		p    proc
		s    *sub
	}{{"prefill", p, pSub}, {"decode", d, dSub}} {
		truthNow := truth(dump(t, side.p))
		batches := side.s.collect(t, func(got []batch) bool { return cmp.Equal(apply(got).copies, truthNow) })
		removed, stored := 0, map[string]bool{}
		for _, bt := range batches {
			for _, e := range bt.Events {
				switch e.Type {
				case "BlockRemoved":
					removed++
				case "BlockStored":
					for i := range e.Hashes {
						stored[fmt.Sprint(e.Tokens[i*16:(i+1)*16])] = true
					}
				}
			}
		}
		if removed != 0 {
			t.Errorf("%s side sent %d BlockRemoved; freeing after a transfer evicts nothing", side.name, removed)
		}
		for i := range 4 {
			if blk := fmt.Sprint(a[i*16 : (i+1)*16]); !stored[blk] {
				t.Errorf("%s side never sent BlockStored for block %d of the prompt", side.name, i)
			}
		}
	}
}

func TestBadTransferParamsAreRefused(t *testing.T) {
	d := startSim(t, pdEnv, pdFlags("decode-0", "kv_consumer")...)
	prompt := ids(100, 40) // three blocks
	okPull := `"do_remote_prefill":true,"remote_engine_id":"p","remote_request_id":"r","remote_host":"127.0.0.1","remote_port":1`
	for _, tc := range []struct{ name, kv, want string }{
		{"not an object", `"yes"`, "must be a JSON object"},
		{"both directions", `{"do_remote_decode":true,` + okPull + `,"remote_block_ids":[[1,2,3]]}`, "both true"},
		{"no engine id", `{"do_remote_prefill":true,"remote_request_id":"r","remote_host":"h","remote_port":1,"remote_block_ids":[[1,2,3]]}`, "needs remote_engine_id"},
		{"port zero", `{"do_remote_prefill":true,"remote_engine_id":"p","remote_request_id":"r","remote_host":"h","remote_port":0,"remote_block_ids":[[1,2,3]]}`, "remote_port 0"},
		{"block ids of the wrong type", `{` + okPull + `,"remote_block_ids":{"0":[1]}}`, "remote_block_ids must be"},
		{"negative block id", `{` + okPull + `,"remote_block_ids":[[1,-2,3]]}`, "negative block id"},
		{"blocks of another prompt", `{` + okPull + `,"remote_block_ids":[[1,2]]}`, "lists 2 blocks; a prompt of 40 tokens"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := fmt.Sprintf(`{"model":"sim-model","prompt":%s,"max_tokens":4,"kv_transfer_params":%s}`, mustJSON(t, prompt), tc.kv)
			var c completion
			if st := post(t, d.URL+"/v1/completions", body, &c); st != http.StatusBadRequest || c.Error == nil || !strings.Contains(c.Error.Message, tc.want) {
				t.Fatalf("status %d, error %+v; want 400 naming %q", st, c.Error, tc.want)
			}
		})
	}
	if got := metric(t, d, "vllm:nixl_bytes_transferred_count"); got != 0 {
		t.Errorf("%v transfers after refused requests, want 0", got)
	}

	// Without a connector, as in vLLM, kv_transfer_params mean nothing.
	agg := startSim(t, nil, "--block-size", "16")
	body := fmt.Sprintf(`{"model":"sim-model","prompt":%s,"max_tokens":2,"kv_transfer_params":"ignored"}`, mustJSON(t, prompt))
	var c completion
	if st := post(t, agg.URL+"/v1/completions", body, &c); st != http.StatusOK {
		t.Errorf("aggregated sim: status %d %+v; want kv_transfer_params ignored", st, c.Error)
	}
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestUnreadBlocksExpireAndAPullOfThemFails(t *testing.T) {
	p := startSim(t, append([]string{"VLLM_NIXL_ABORT_REQUEST_TIMEOUT=1"}, pdEnv...), pdFlags("prefill-0", "kv_producer")...)
	d := startSim(t, pdEnv, pdFlags("decode-0", "kv_consumer")...)
	rec := startSim(t, pdEnv, "--block-size", "16", "--sim-kv-bytes-per-token", "1000", "--kv-transfer-config",
		`{"kv_connector":"NixlConnector","kv_role":"kv_consumer","engine_id":"decode-1","kv_load_failure_policy":"recompute"}`)

	prompt := ids(200, 48)
	kv, _ := prefillStep(t, p, prompt)
	block0 := fmt.Sprint(prompt[:16])
	if rc := refCounts(t, p)[block0]; rc != 1 {
		t.Fatalf("block 0 held with %d references, want 1", rc)
	}
	poll.Until(t, "the unread hold to expire", func() bool { return refCounts(t, p)[block0] == 0 })
	if got := metric(t, p, "vllm:nixl_num_kv_expired_reqs_total"); got != 1 {
		t.Errorf("expired holds %v, want 1", got)
	}

	// kv_load_failure_policy "fail" (vLLM's default) ends the request.
	body := map[string]any{"model": "sim-model", "prompt": prompt, "max_tokens": 2, "kv_transfer_params": kv}
	var c completion
	if st := post(t, d.URL+"/v1/completions", body, &c); st != http.StatusInternalServerError || c.Error == nil || !strings.Contains(c.Error.Message, "KV transfer from engine prefill-0 failed") {
		t.Fatalf("pull of expired blocks: status %d %+v; want 500 naming the transfer", st, c.Error)
	}
	if got := metric(t, d, "vllm:nixl_num_failed_transfers_total"); got != 1 {
		t.Errorf("failed transfers %v, want 1", got)
	}
	// "recompute" computes the prompt locally instead.
	c = completion{}
	if st := post(t, rec.URL+"/v1/completions", body, &c); st != http.StatusOK {
		t.Fatalf("recompute policy: status %d %+v", st, c.Error)
	}
	if c.Usage.PromptTokensDetails.CachedTokens != 0 {
		t.Errorf("recomputed prompt reports %d cached tokens, want 0", c.Usage.PromptTokensDetails.CachedTokens)
	}
}

// TestDisaggregatedChat runs the two steps on /v1/chat/completions, with
// max_completion_tokens as the proxy caps it, and a streamed decode.
func TestDisaggregatedChat(t *testing.T) {
	p := startSim(t, pdEnv, pdFlags("prefill-0", "kv_both")...)
	d := startSim(t, pdEnv, pdFlags("decode-0", "kv_both")...)
	msgs := []map[string]any{{"role": "user", "content": words(0, 60)}}

	var pre struct {
		KV    *transferParams `json:"kv_transfer_params"`
		Usage usageJSON       `json:"usage"`
	}
	if st := post(t, p.URL+"/v1/chat/completions", map[string]any{
		"model": "sim-model", "messages": msgs, "max_tokens": 1, "max_completion_tokens": 1, "stream": false,
		"kv_transfer_params": map[string]any{"do_remote_decode": true, "do_remote_prefill": false},
	}, &pre); st != http.StatusOK || pre.KV == nil {
		t.Fatalf("chat prefill step: status %d, kv_transfer_params %v", st, pre.KV)
	}
	if pre.Usage.CompletionTokens != 1 || len(pre.KV.RemoteBlockIDs[0]) != (pre.Usage.PromptTokens+15)/16 {
		t.Errorf("chat prefill: %d completion tokens, %d block ids for %d prompt tokens", pre.Usage.CompletionTokens, len(pre.KV.RemoteBlockIDs[0]), pre.Usage.PromptTokens)
	}

	body, _ := json.Marshal(map[string]any{"model": "sim-model", "messages": msgs, "max_completion_tokens": 6, "ignore_eos": true,
		"stream": true, "stream_options": map[string]any{"include_usage": true}, "kv_transfer_params": pre.KV})
	resp, err := http.Post(d.URL+"/v1/chat/completions", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var content strings.Builder
	var u *usageJSON
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || line == "[DONE]" {
			continue
		}
		var chunk struct {
			Choices []struct {
				Delta struct {
					Content string `json:"content"`
				} `json:"delta"`
			} `json:"choices"`
			Usage *usageJSON `json:"usage"`
		}
		if err := json.Unmarshal([]byte(line), &chunk); err != nil {
			t.Fatal(err)
		}
		for _, c := range chunk.Choices {
			content.WriteString(c.Delta.Content)
		}
		if chunk.Usage != nil {
			u = chunk.Usage
		}
	}
	if content.Len() == 0 || u == nil || u.CompletionTokens != 6 || u.PromptTokensDetails.CachedTokens != u.PromptTokens-1 {
		t.Fatalf("chat decode streamed %q, usage %+v; want 6 tokens with the prompt less one cached", content.String(), u)
	}
	if got := metric(t, d, "vllm:nixl_num_descriptors_sum"); got != float64(len(pre.KV.RemoteBlockIDs[0])) {
		t.Errorf("chat decode pulled %v blocks, want all %d (nothing cached locally)", got, len(pre.KV.RemoteBlockIDs[0]))
	}
}
