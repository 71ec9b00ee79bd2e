package fleet

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
)

// TestStreamMigratesOnTheFleet: on the whole chain (the real driver
// under the plugin host running two vllm-sim shards, Consul, a router
// with mid-stream migration on, as it ships) the engine of a streamed
// completion's shard is killed after the client read 10 tokens; the
// client's stream goes on, one stream, and its token ids are, token by
// token, the killed shard's first k and then the survivor's
// continuation. vllm-sim's output depends only on the request's seed and
// max_tokens, so the survivor's own answer to the same request gives
// both parts.
func TestStreamMigratesOnTheFleet(t *testing.T) {
	if testing.Short() {
		t.Skip("starts the driver, vllm-sim shards and a router")
	}
	const tokens, killAfter = 60, 10
	o := options(t)
	o.Shards, o.Routers = 2, 1
	o.SimArgs = []string{"--sim-latency=true", "--sim-inter-token-latency", "20ms"}
	f, err := Start(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	body := map[string]any{"model": "sim-model", "prompt": prompt(3), "max_tokens": tokens, "seed": 7, "ignore_eos": true,
		"return_token_ids": true, "stream": true}
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(http.MethodPost, f.RouterURLs()[0]+"/v1/completions", bytes.NewReader(b))
	req.Header.Set("Authorization", "Bearer "+testAPIKey)
	resp, err := testClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	first := resp.Header.Get("X-Llmgw-Replica")
	victim := slices.IndexFunc(f.Shards(), func(s Shard) bool { return s.ReplicaID == first })
	if resp.StatusCode != http.StatusOK || victim < 0 {
		t.Fatalf("status %d from replica %q", resp.StatusCode, first)
	}
	var got []uint32
	dones, errs := 0, 0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		switch {
		case !ok:
			continue
		case data == "[DONE]":
			dones++
			continue
		case strings.Contains(data, `"error"`):
			errs++
			continue
		}
		var c struct {
			Choices []struct {
				TokenIDs []uint32 `json:"token_ids"`
			} `json:"choices"`
		}
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("chunk %q: %v", data, err)
		}
		before := len(got)
		for _, ch := range c.Choices {
			got = append(got, ch.TokenIDs...)
		}
		if before < killAfter && len(got) >= killAfter {
			if _, err := f.KillEngine(victim); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read the stream: %v", err)
	}
	if dones != 1 || errs != 0 {
		t.Fatalf("stream had %d [DONE] and %d error events; want one and none", dones, errs)
	}

	// The survivor's whole answer to the same request, not streamed.
	delete(body, "stream")
	b, _ = json.Marshal(body)
	survivor := f.Shards()[1-victim].URL
	r2, err := testClient.Post(survivor+"/v1/completions", "application/json", bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	defer r2.Body.Close()
	var whole struct {
		Choices []struct {
			TokenIDs []uint32 `json:"token_ids"`
		} `json:"choices"`
	}
	if err := json.NewDecoder(r2.Body).Decode(&whole); err != nil || len(whole.Choices) != 1 || len(whole.Choices[0].TokenIDs) != tokens {
		t.Fatalf("survivor's answer: %v, %+v", err, whole)
	}
	full := whole.Choices[0].TokenIDs
	if len(got) != tokens {
		t.Fatalf("the stream has %d tokens; want %d", len(got), tokens)
	}
	k := 0
	for s := killAfter; s < tokens && k == 0; s++ {
		if slices.Equal(got[:s], full[:s]) && slices.Equal(got[s:], full[:tokens-s]) {
			k = s
		}
	}
	if k == 0 {
		t.Fatalf("tokens %v are not the seeded sequence %v cut after %d or more and continued", got, full, killAfter)
	}
	t.Logf("the stream moved after %d of %d tokens", k, tokens)
}
