package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/llmgw/llmgw/internal/kvwire"
	"github.com/llmgw/llmgw/router/disagg"
	"github.com/llmgw/llmgw/router/openai"
	"github.com/llmgw/llmgw/router/replicas"
	"github.com/llmgw/llmgw/router/scheduler"
)

// TestContinuationAvoidsPrefillReplicas: a migrated stream's continuation
// on a disaggregated model goes to a decode or aggregated replica even
// though the prefill replica caches its whole prompt (it prefilled it),
// and to the prefill replica only when every other replica failed.
func TestContinuationAvoidsPrefillReplicas(t *testing.T) {
	cases := []struct {
		name   string
		roles  []replicas.Role
		failed []string
		want   string
	}{
		{"another decode replica", []replicas.Role{replicas.RolePrefill, replicas.RoleDecode, replicas.RoleDecode}, []string{"d0"}, "d1"},
		{"an aggregated replica", []replicas.Role{replicas.RolePrefill, replicas.RoleDecode, replicas.RoleAggregated}, []string{"d0"}, "a0"},
		{"the prefill replica, last", []replicas.Role{replicas.RolePrefill, replicas.RoleDecode, replicas.RoleDecode}, []string{"d0", "d1"}, "p0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newPDHarness(t, nil, tc.roles...)
			up := &kvwire.Update{Version: kvwire.Version, Driver: "drv", Epoch: 1, Seq: 1, Snapshot: true}
			for id := range h.engines {
				r := kvwire.Replica{ID: id, BlockSize: 16}
				if id == "p0" {
					r.Groups = []kvwire.Group{{Tier: kvwire.TierGPU, Add: promptKeys(t, pdPrompt)}}
				}
				up.Replicas = append(up.Replicas, r)
			}
			h.sink.ApplyUpdate(up)
			// The continuation: the prompt and a few generated words.
			body := []byte(`{"model":"m","prompt":"` + pdPrompt + strings.Repeat("word ", 8) + `"}`)
			p, err := h.planner.Reschedule(context.Background(), openai.Completion, body, "", tc.failed)
			if err != nil || p.Attempts[0].Replica != tc.want {
				got := ""
				if p != nil {
					got = p.Attempts[0].Replica
				}
				t.Fatalf("continuation after %v failed goes to %q (%v); want %s", tc.failed, got, err, tc.want)
			}
			if tc.want != "p0" {
				for _, a := range p.Attempts {
					if a.Replica == "p0" {
						t.Errorf("the prefill replica is a fallback of %s: %+v", tc.want, p.Attempts)
					}
				}
			}
		})
	}
}

// TestPDStreamMigrates: the decode replica of a disaggregated stream dies
// after two tokens; the continuation goes to the other decode replica,
// not to the prefill replica, without kv_transfer_params and under an
// X-Request-Id of its own (the prefill replica may still hold blocks under
// the first), and the client reads every token once.
func TestPDStreamMigrates(t *testing.T) {
	h := newPDHarness(t, func(d *testDeps, _ *scheduler.Config) {
		d.Options.Migration = Migration{Enabled: true, MaxAttempts: 2, MaxTokens: 100}
	}, replicas.RolePrefill, replicas.RoleDecode, replicas.RoleDecode)
	e := &migratingEngine{}
	var mu sync.Mutex
	ids := map[string][]string{} // replica: the X-Request-Id of each request
	list := h.set.All()
	for i, r := range list {
		if r.Role == replicas.RoleDecode {
			list[i].Address = backend(t, func(w http.ResponseWriter, req *http.Request) {
				mu.Lock()
				ids[r.ID] = append(ids[r.ID], req.Header.Get(disagg.HeaderRequestID))
				mu.Unlock()
				e.serve(w, req)
			})
		}
	}
	h.set.Replace(list)
	resp, b := post(t, h.srv.URL+"/v1/completions", `{"model":"m","prompt":"`+pdPrompt+`","max_tokens":8,"stream":true}`)
	if resp.StatusCode != http.StatusOK || resp.Header.Get(HeaderPrefillReplica) != "p0" {
		t.Fatalf("status %d, prefill %q: %s; want 200 after p0", resp.StatusCode, resp.Header.Get(HeaderPrefillReplica), b)
	}
	var want strings.Builder
	for _, tok := range engineTokens {
		fmt.Fprintf(&want, "<%d>", tok)
	}
	var text strings.Builder
	for _, ev := range strings.Split(string(b), "\n\n") {
		var c struct{ Choices []struct{ Text string } }
		if d, ok := strings.CutPrefix(ev, "data: "); ok && d != "[DONE]" && json.Unmarshal([]byte(d), &c) == nil {
			for _, ch := range c.Choices {
				text.WriteString(ch.Text)
			}
		}
	}
	if text.String() != want.String() || strings.Count(string(b), "[DONE]") != 1 {
		t.Fatalf("stream %q; want the text %q and one [DONE]", b, want.String())
	}
	if pre, _ := h.engines["p0"].requests(); len(pre) != 1 {
		t.Errorf("the prefill replica got %d requests; want the prefill step alone", len(pre))
	}
	first := resp.Header.Get(HeaderReplica)
	other := "d0"
	if first == "d0" {
		other = "d1"
	}
	mu.Lock()
	defer mu.Unlock()
	e.mu.Lock()
	defer e.mu.Unlock()
	_, prefillIDs := h.engines["p0"].requests()
	if len(e.bodies) != 2 || len(ids[first]) != 1 || len(ids[other]) != 1 {
		t.Fatalf("decode requests %v; want one on %s, then the continuation on %s", ids, first, other)
	}
	if e.bodies[0]["kv_transfer_params"] == nil || e.bodies[1]["kv_transfer_params"] != nil {
		t.Errorf("kv_transfer_params: decode step %v, continuation %v; want them on the decode step only", e.bodies[0]["kv_transfer_params"], e.bodies[1]["kv_transfer_params"])
	}
	if pid := prefillIDs[0]; ids[first][0] != pid || ids[other][0] == "" || ids[other][0] == pid {
		t.Errorf("X-Request-Id: prefill %q, decode %q, continuation %q; want the decode step's the prefill's, the continuation's new", pid, ids[first][0], ids[other][0])
	}
}
