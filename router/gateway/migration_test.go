package gateway

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/llmgw/llmgw/router/scheduler"
)

// engineTokens is what the test engines generate: ids 1..8, each the text
// "<id>", after the prompt ids 100..139 (two and a half blocks).
var (
	engineTokens = []uint32{1, 2, 3, 4, 5, 6, 7, 8}
	enginePrompt = func() []uint32 {
		ids := make([]uint32, 40)
		for i := range ids {
			ids[i] = uint32(100 + i)
		}
		return ids
	}()
)

// migratingEngine answers a text prompt with the first two tokens, then
// dies; a prompt of token ids (a continuation) with the tokens after it,
// a finish reason, usage and [DONE]. Each body it was sent is recorded.
type migratingEngine struct {
	mu     sync.Mutex
	bodies []map[string]any
}

func (e *migratingEngine) serve(w http.ResponseWriter, r *http.Request) {
	var req map[string]any
	b, _ := io.ReadAll(r.Body)
	_ = json.Unmarshal(b, &req)
	e.mu.Lock()
	e.bodies = append(e.bodies, req)
	e.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	ids, _ := req["prompt"].([]any)
	chunk := func(i int, tok uint32, final bool) {
		ch := map[string]any{"index": 0, "text": fmt.Sprintf("<%d>", tok), "token_ids": []uint32{tok}}
		if i == 0 {
			ch["prompt_token_ids"] = enginePrompt
			if ids != nil {
				ch["prompt_token_ids"] = ids
			}
		}
		if final {
			ch["finish_reason"] = "length"
		}
		c, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("cmpl-%d", len(ids)), "object": "text_completion", "created": 100 + len(ids), "model": "m", "choices": []any{ch}})
		fmt.Fprintf(w, "data: %s\n\n", c)
		w.(http.Flusher).Flush()
	}
	if ids == nil {
		chunk(0, engineTokens[0], false)
		chunk(1, engineTokens[1], false)
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			conn.Close() // the replica dies
		}
		return
	}
	done := len(ids) - len(enginePrompt)
	for i, tok := range engineTokens[done:] {
		chunk(i, tok, done+i == len(engineTokens)-1)
	}
	u, _ := json.Marshal(map[string]any{"id": "cmpl-x", "object": "text_completion", "created": 1, "model": "m", "choices": []any{},
		"usage": map[string]int{"prompt_tokens": len(ids), "completion_tokens": len(engineTokens) - done, "total_tokens": len(ids) + len(engineTokens) - done}})
	fmt.Fprintf(w, "data: %s\n\ndata: [DONE]\n\n", u)
}

func migrationHarness(t *testing.T, on bool) (*harness, *migratingEngine) {
	t.Helper()
	e := &migratingEngine{}
	h := newHarnessWith(t, func(d *testDeps, _ *scheduler.Config) {
		d.Options.Migration = Migration{Enabled: on, MaxAttempts: 2, MaxTokens: 100}
	}, backend(t, e.serve), backend(t, e.serve))
	return h, e
}

// TestMigrationContinuesStream: the replica that answers dies after two
// tokens; the other gets the prompt's and those tokens' ids with
// max_tokens reduced, and the client reads every token once, under the
// first id, with usage for the whole answer and one [DONE].
func TestMigrationContinuesStream(t *testing.T) {
	h, e := migrationHarness(t, true)
	resp, b := post(t, h.srv.URL+"/v1/completions", `{"model":"m","prompt":"tell me","max_tokens":8,"stream":true,"stream_options":{"include_usage":true}}`)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %d: %s", resp.StatusCode, b)
	}
	s := string(b)
	var want strings.Builder
	for _, tok := range engineTokens {
		fmt.Fprintf(&want, "<%d>", tok)
	}
	var text strings.Builder
	for _, ev := range strings.Split(s, "\n\n") {
		var c struct {
			ID      string
			Choices []struct{ Text string }
		}
		if d, ok := strings.CutPrefix(ev, "data: "); ok && d != "[DONE]" {
			if err := json.Unmarshal([]byte(d), &c); err != nil {
				t.Fatalf("event %q: %v", ev, err)
			}
			if c.ID != "cmpl-0" {
				t.Errorf("event %q: id %q; want the first stream's cmpl-0", ev, c.ID)
			}
			for _, ch := range c.Choices {
				text.WriteString(ch.Text)
			}
		}
	}
	if text.String() != want.String() || strings.Count(s, "[DONE]") != 1 || strings.Contains(s, "token_ids") ||
		!strings.Contains(s, `"prompt_tokens":40`) || !strings.Contains(s, `"completion_tokens":8`) || !strings.Contains(s, `"total_tokens":48`) {
		t.Errorf("stream:\n%s", s)
	}
	cont := append(append([]uint32{}, enginePrompt...), 1, 2)
	e.mu.Lock()
	if len(e.bodies) != 2 || e.bodies[0]["return_token_ids"] != true || fmt.Sprint(e.bodies[1]["prompt"]) != fmt.Sprint(cont) || e.bodies[1]["max_tokens"] != 6.0 {
		t.Errorf("bodies sent %v; want the first asking for token ids, the second continuing after [1 2] with 6 tokens left", e.bodies)
	}
	e.mu.Unlock()
	// The replica that took the continuation is credited with its prefix:
	// the router now predicts those blocks cached there.
	served := resp.Header.Get(HeaderReplica)
	body, _ := json.Marshal(map[string]any{"model": "m", "prompt": cont})
	_, eb := post(t, h.admin.URL+"/admin/explain/completions", string(body))
	var ex struct {
		Chosen struct {
			Replica      string `json:"replica"`
			CachedTokens int    `json:"cached_tokens"`
		} `json:"chosen"`
	}
	if err := json.Unmarshal(eb, &ex); err != nil || ex.Chosen.Replica == served || ex.Chosen.CachedTokens < 32 {
		t.Errorf("explain %s; want the replica other than the failed %s, with the continuation's two full blocks credited", eb, served)
	}
	// The continuation is a decision of its own in the log, newest first,
	// naming the replica whose stream it continued.
	if ds := h.planner.RecentDecisions(); len(ds) < 2 || ds[0].ContinuedFrom != served || ds[0].Replica == served ||
		ds[0].PromptTokens != len(cont) || ds[1].Replica != served || ds[1].ContinuedFrom != "" {
		t.Errorf("decision log %+v; want the continuation (from %s, %d prompt tokens) after the first decision", ds, served, len(cont))
	}
	m := h.gw.d.Metrics.Migrations
	if testutil.ToFloat64(m.results.WithLabelValues("migrated")) != 1 || testutil.ToFloat64(m.results.WithLabelValues("succeeded")) != 1 {
		t.Errorf("migration metrics: migrated %v, succeeded %v; want 1 and 1",
			testutil.ToFloat64(m.results.WithLabelValues("migrated")), testutil.ToFloat64(m.results.WithLabelValues("succeeded")))
	}
}

// TestMigrationRefusedAndOff: a request a continuation cannot reproduce
// ends with an error event that says why, counted by reason; with
// migration off the body reaches the engine untouched and the error event
// is today's.
func TestMigrationRefusedAndOff(t *testing.T) {
	cases := []struct {
		name, body, want, reason string
		on                       bool
	}{
		{"n", `{"model":"m","prompt":"x","n":2,"stream":true}`, "not migrated: requests with n", "n", true},
		{"off", `{"model":"m","prompt":"x","stream":true}`, "failed mid-stream", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h, e := migrationHarness(t, tc.on)
			_, b := post(t, h.srv.URL+"/v1/completions", tc.body)
			s := string(b)
			if !strings.Contains(s, tc.want) || !strings.HasSuffix(s, "data: [DONE]\n\n") || strings.Count(s, "[DONE]") != 1 {
				t.Errorf("stream %q; want %q in an error event, then [DONE]", s, tc.want)
			}
			e.mu.Lock()
			defer e.mu.Unlock()
			if len(e.bodies) != 1 || e.bodies[0]["return_token_ids"] != nil {
				t.Errorf("bodies sent %v; want one, as the client sent it", e.bodies)
			}
			if tc.reason != "" && testutil.ToFloat64(h.gw.d.Metrics.Migrations.refused.WithLabelValues(tc.reason)) != 1 {
				t.Errorf("refused{%s} not counted", tc.reason)
			}
		})
	}
}
