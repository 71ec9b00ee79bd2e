package gateway

import (
	"context"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/internal/kvwire"
	"github.com/llmgw/llmgw/router/openai"
	"github.com/llmgw/llmgw/router/prompt"
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
			req, err := openai.Parse(openai.Completion, []byte(`{"model":"m","prompt":"`+pdPrompt+strings.Repeat("word ", 8)+`"}`))
			if err != nil {
				t.Fatal(err)
			}
			res, err := h.gw.d.Prompts.ComputeFor(req, prompt.Target{Model: "m", BlockSize: 16})
			if err != nil {
				t.Fatal(err)
			}
			sreq := &scheduler.Request{}
			sreq.Reset(scheduler.Request{Model: "m", Keys: res.Keys, BlockTokens: 16, PromptTokens: res.Tokens, Fallbacks: 4})
			d, err := h.gw.scheduleContinuation(context.Background(), "m", sreq, tc.failed)
			if err != nil || d.Chosen.Candidate.ID != tc.want {
				t.Fatalf("continuation after %v failed goes to %q (%v); want %s", tc.failed, d.Chosen.Candidate.ID, err, tc.want)
			}
			if tc.want != "p0" {
				for _, f := range d.Fallbacks {
					if f.Candidate.ID == "p0" {
						t.Errorf("the prefill replica is a fallback of %s: %+v", tc.want, d.Fallbacks)
					}
				}
			}
		})
	}
}
