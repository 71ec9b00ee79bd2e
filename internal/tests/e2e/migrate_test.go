package e2e

import (
	"bufio"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmgw/llmgw/router/scheduler"
	"github.com/llmgw/llmgw/router/server"
)

// The tests in this file kill a replica mid-stream under mid-stream
// migration: a real Consul agent, the driver's intake and forwarder, two
// vllm-sim replicas streaming at 20 ms a token, and the router.
//
// vllm-sim's output depends only on the request's seed and max_tokens (it
// draws words from a generator seeded by the request's seed), so a
// continuation asked for max_tokens-k tokens with the same seed produces
// the first max_tokens-k tokens of the same sequence. The test asks the
// surviving replica for that sequence directly, and so knows what each
// replica produced.

const (
	migrateSeed   = 7
	migrateTokens = 60
	// migrateKillAfter is how many tokens the client reads before the
	// replica is killed.
	migrateKillAfter = 10
)

// migrateFleet is two replicas streaming slowly, in exact mode on a
// router with migration set as on says.
func migrateFleet(t *testing.T, on bool) (*fleet, *server.Server) {
	t.Helper()
	slow := []string{"--sim-latency=true", "--sim-inter-token-latency", "20ms"}
	f := startFleetWith(t, slow, slow)
	c := routerConfig(token)
	c.Consul.Address = f.agent.Addr
	c.Consul.Services = []string{"vllm"}
	c.Consul.Register = true
	c.Consul.ServiceID = "router-migrate"
	c.Consul.CheckInterval = time.Second
	c.Scheduler = scheduler.Config{
		Filters: []scheduler.Spec{{Type: "model"}, {Type: "healthy"}},
		Scorers: []scheduler.Spec{{Type: "prefix", Weight: 2}, {Type: "load", Weight: 1}},
		Picker:  scheduler.Spec{Type: "max-score"},
	}
	c.Migration.Enabled = on
	r := startRouter(t, c)
	waitExact(t, r, f.ids...)
	return f, r
}

// sseChunk is what the tests read of a streamed chunk.
type sseChunk struct {
	ID      string `json:"id"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	Choices []struct {
		Text  *string `json:"text"`
		Delta *struct {
			Role    string  `json:"role"`
			Content *string `json:"content"`
		} `json:"delta"`
		TokenIDs       []uint32 `json:"token_ids"`
		PromptTokenIDs []uint32 `json:"prompt_token_ids"`
		FinishReason   *string  `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	} `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// killedStream posts body, kills the replica that answers once
// migrateKillAfter tokens arrived, and returns the whole stream: its
// chunks, how many [DONE] lines it held, and the replica that was killed.
func killedStream(t *testing.T, f *fleet, r *server.Server, path, body string) (chunks []sseChunk, raw string, dones int, killed string) {
	t.Helper()
	chunks, raw, dones, h := killedStreamHeader(t, f, r, path, body)
	return chunks, raw, dones, h.Get("X-Llmgw-Replica")
}

// killedStreamHeader is killedStream returning the answer's header, the
// route headers with it.
func killedStreamHeader(t *testing.T, f *fleet, r *server.Server, path, body string) (chunks []sseChunk, raw string, dones int, header http.Header) {
	t.Helper()
	resp, err := http.Post("http://"+r.Addr()+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	header = resp.Header
	killed := resp.Header.Get("X-Llmgw-Replica")
	victim := f.sims[killed]
	if resp.StatusCode != http.StatusOK || victim == nil {
		t.Fatalf("status %d from replica %q", resp.StatusCode, killed)
	}
	var sb strings.Builder
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	tokens := 0
	for sc.Scan() {
		line := sc.Text()
		sb.WriteString(line + "\n")
		data, ok := strings.CutPrefix(line, "data: ")
		if !ok {
			continue
		}
		if data == "[DONE]" {
			dones++
			continue
		}
		var c sseChunk
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("chunk %q: %v", data, err)
		}
		chunks = append(chunks, c)
		if len(c.Choices) > 0 && (c.Choices[0].Text != nil && *c.Choices[0].Text != "" || c.Choices[0].Delta != nil && c.Choices[0].Delta.Content != nil && *c.Choices[0].Delta.Content != "") {
			if tokens++; tokens == migrateKillAfter {
				if err := syscall.Kill(victim.Pid(), syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("read the stream: %v", err)
	}
	return chunks, sb.String(), dones, header
}

// survivor is the replica that was not killed.
func survivor(f *fleet, killed string) *sim {
	for id, s := range f.sims {
		if id != killed {
			return s
		}
	}
	return nil
}

// seeded asks s for the whole seeded sequence, non-streamed: its token
// ids and the prompt's length.
func seeded(t *testing.T, s *sim, prompt string) (ids []uint32, promptTokens int) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"model": model, "prompt": prompt, "max_tokens": migrateTokens, "seed": migrateSeed,
		"ignore_eos": true, "return_token_ids": true})
	a := call(t, s.addr, "/v1/completions", string(b))
	var out struct {
		Choices []struct {
			TokenIDs []uint32 `json:"token_ids"`
		} `json:"choices"`
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		} `json:"usage"`
	}
	if err := json.Unmarshal(a.body, &out); err != nil || len(out.Choices) != 1 || len(out.Choices[0].TokenIDs) != migrateTokens {
		t.Fatalf("seeded sequence from %s: %d %s (%v)", s.addr, a.code, a.body, err)
	}
	return out.Choices[0].TokenIDs, out.Usage.PromptTokens
}

// detokenize decodes ids on s, as the simulator decodes its output.
func detokenize(t *testing.T, s *sim, ids []uint32) string {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"model": model, "tokens": ids})
	a := call(t, s.addr, "/detokenize", string(b))
	var out struct {
		Prompt string `json:"prompt"`
	}
	if err := json.Unmarshal(a.body, &out); err != nil || a.code != http.StatusOK {
		t.Fatalf("detokenize: %d %s (%v)", a.code, a.body, err)
	}
	return out.Prompt
}

// checkSeamless checks what every migrated stream must be: one id,
// created and model throughout, one [DONE] at the end, no error event.
func checkSeamless(t *testing.T, chunks []sseChunk, raw string, dones int) {
	t.Helper()
	if dones != 1 || !strings.HasSuffix(strings.TrimRight(raw, "\n"), "data: [DONE]") {
		t.Errorf("%d [DONE] lines, stream ends %q; want one, at the end", dones, raw[max(0, len(raw)-200):])
	}
	for i, c := range chunks {
		if len(c.Error) > 0 {
			t.Fatalf("chunk %d is an error event: %s", i, c.Error)
		}
		if c.ID != chunks[0].ID || c.Created != chunks[0].Created || c.Model != chunks[0].Model {
			t.Errorf("chunk %d has id %q created %d model %q; the first had %q %d %q", i, c.ID, c.Created, c.Model, chunks[0].ID, chunks[0].Created, chunks[0].Model)
		}
	}
}

// TestStreamMigratesWhenReplicaDies kills the replica of a streamed
// completion after its first token: the client gets one stream whose
// tokens are, token by token, the first replica's k tokens and then the
// second replica's continuation, max_tokens in all, with usage that adds
// up, and the router counts a successful migration.
func TestStreamMigratesWhenReplicaDies(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Consul and vllm-sim processes")
	}
	f, r := migrateFleet(t, true)
	prompt := longPrompt(41)
	body, _ := json.Marshal(map[string]any{"model": model, "prompt": prompt, "max_tokens": migrateTokens, "seed": migrateSeed,
		"ignore_eos": true, "stream": true, "return_token_ids": true, "stream_options": map[string]bool{"include_usage": true}})
	chunks, raw, dones, killed := killedStream(t, f, r, "/v1/completions", string(body))
	checkSeamless(t, chunks, raw, dones)

	s := survivor(f, killed)
	full, promptTokens := seeded(t, s, prompt)
	var got []uint32
	var text strings.Builder
	var prompts int
	for _, c := range chunks {
		for _, ch := range c.Choices {
			got = append(got, ch.TokenIDs...)
			if len(ch.PromptTokenIDs) > 0 {
				prompts++
				if len(ch.PromptTokenIDs) != promptTokens {
					t.Errorf("prompt_token_ids has %d ids; the prompt has %d", len(ch.PromptTokenIDs), promptTokens)
				}
			}
			if ch.Text != nil {
				text.WriteString(*ch.Text)
			}
		}
	}
	if prompts != 1 {
		t.Errorf("%d chunks carry prompt_token_ids; want the first only", prompts)
	}
	checkContinued(t, r, s, got, text.String(), chunks[len(chunks)-1], full, promptTokens)
}

// checkContinued checks a migrated completion's tokens got (with their
// text and the stream's last chunk) against the seeded sequence full from
// the survivor s: the killed replica's first k, at least the
// migrateKillAfter the client read, then the survivor's continuation,
// which restarts the sequence; the text both replicas' tokens; usage the
// prompt and migrateTokens; and one successful migration on r.
func checkContinued(t *testing.T, r *server.Server, s *sim, got []uint32, text string, last sseChunk, full []uint32, promptTokens int) {
	t.Helper()
	if len(got) != migrateTokens {
		t.Fatalf("the stream has %d tokens; want %d", len(got), migrateTokens)
	}
	k := seam(got, full)
	if k < migrateKillAfter {
		t.Fatalf("tokens %v are no split after the %d the client read before the kill of the seeded sequence %v between the two replicas", got, migrateKillAfter, full)
	}
	t.Logf("the stream moved after %d of %d tokens", k, migrateTokens)
	if want := detokenize(t, s, full[:k]) + detokenize(t, s, full[:migrateTokens-k]); text != want {
		t.Errorf("text %q\nwant %q (both replicas' tokens)", text, want)
	}
	if last.Usage == nil || last.Usage.PromptTokens != promptTokens || last.Usage.CompletionTokens != migrateTokens || last.Usage.TotalTokens != promptTokens+migrateTokens {
		t.Errorf("usage %+v; want %d prompt and %d completion tokens", last.Usage, promptTokens, migrateTokens)
	}
	if v := metricValue(t, r, `llmgw_stream_migrations_total{result="succeeded"}`); v != 1 {
		t.Errorf("succeeded migrations %v; want 1", v)
	}
}

// seam returns the k in 1..len(got)-1 for which got is full[:k] and then
// full[:len(got)-k], or 0 when there is none.
func seam(got, full []uint32) int {
	for k := 1; k < len(got); k++ {
		if slices.Equal(got[:k], full[:k]) && slices.Equal(got[k:], full[:len(got)-k]) {
			return k
		}
	}
	return 0
}

// TestChatStreamMigratesWhenReplicaDies is the same for a chat stream,
// continued with the partial answer as the final assistant message: the
// client does not ask for token ids, so the chunks must not carry them.
func TestChatStreamMigratesWhenReplicaDies(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Consul and vllm-sim processes")
	}
	f, r := migrateFleet(t, true)
	body, _ := json.Marshal(map[string]any{"model": model, "messages": []map[string]string{{"role": "user", "content": longPrompt(42)}},
		"max_tokens": migrateTokens, "seed": migrateSeed, "ignore_eos": true, "stream": true, "stream_options": map[string]bool{"include_usage": true}})
	chunks, raw, dones, killed := killedStream(t, f, r, "/v1/chat/completions", string(body))
	checkSeamless(t, chunks, raw, dones)
	if strings.Contains(raw, "token_ids") {
		t.Errorf("the client did not ask for token ids, and got them")
	}
	var text strings.Builder
	roles, tokens := 0, 0
	for _, c := range chunks {
		for _, ch := range c.Choices {
			if ch.Delta == nil {
				continue
			}
			if ch.Delta.Role != "" {
				roles++
			}
			if ch.Delta.Content != nil && *ch.Delta.Content != "" {
				tokens++ // vllm-sim sends a chunk per token
				text.WriteString(*ch.Delta.Content)
			}
		}
	}
	if roles != 1 || tokens != migrateTokens {
		t.Errorf("%d role chunks and %d token chunks; want 1 and %d", roles, tokens, migrateTokens)
	}
	s := survivor(f, killed)
	full, _ := seeded(t, s, "x")
	found := 0
	for k := migrateKillAfter; k < migrateTokens; k++ {
		if text.String() == detokenize(t, s, full[:k])+detokenize(t, s, full[:migrateTokens-k]) {
			found = k
			break
		}
	}
	if found == 0 {
		t.Errorf("text %q is no split of the seeded sequence between the two replicas", text.String())
	}
	// The original conversation's prompt, as the engine counts it.
	direct, _ := json.Marshal(map[string]any{"model": model, "messages": []map[string]string{{"role": "user", "content": longPrompt(42)}}, "max_tokens": 1})
	var du struct {
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		}
	}
	if a := call(t, s.addr, "/v1/chat/completions", string(direct)); json.Unmarshal(a.body, &du) != nil || du.Usage.PromptTokens == 0 {
		t.Fatalf("the survivor's own count of the prompt: %d %s", a.code, a.body)
	}
	last := chunks[len(chunks)-1]
	if last.Usage == nil || last.Usage.PromptTokens != du.Usage.PromptTokens || last.Usage.CompletionTokens != migrateTokens || last.Usage.TotalTokens != du.Usage.PromptTokens+migrateTokens {
		t.Errorf("usage %+v; want %d prompt and %d completion tokens", last.Usage, du.Usage.PromptTokens, migrateTokens)
	}
	if v := metricValue(t, r, `llmgw_stream_migrations_total{result="succeeded"}`); v != 1 {
		t.Errorf("succeeded migrations %v; want 1", v)
	}
}

// TestStreamNotMigratedWhenOff: with migration off, a second replica
// standing by changes nothing: the client gets today's error event.
func TestStreamNotMigratedWhenOff(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Consul and vllm-sim processes")
	}
	f, r := migrateFleet(t, false)
	body, _ := json.Marshal(map[string]any{"model": model, "prompt": longPrompt(43), "max_tokens": migrateTokens, "seed": migrateSeed, "ignore_eos": true, "stream": true})
	chunks, raw, dones, _ := killedStream(t, f, r, "/v1/completions", string(body))
	if dones != 1 || !strings.Contains(raw, "failed mid-stream") || len(chunks) == 0 || len(chunks[len(chunks)-1].Error) == 0 {
		t.Errorf("stream tail %q; want an error event and [DONE]", raw[max(0, len(raw)-300):])
	}
	if strings.Contains(raw, "token_ids") {
		t.Errorf("with migration off the router asked for token ids")
	}
}
