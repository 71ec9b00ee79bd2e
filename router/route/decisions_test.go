package route

import (
	"fmt"
	"testing"
	"time"

	"github.com/llmgw/llmgw/router/openai"
	"github.com/llmgw/llmgw/router/scheduler"
)

func rankedAs(id string, total float64, blocks int) scheduler.Ranked {
	return scheduler.Ranked{Candidate: scheduler.Candidate{ID: id}, Total: total, Scores: []float64{total, 0.5}, CachedBlocks: blocks, Mode: scheduler.ModeExact}
}

// TestDecisionLog: the log keeps the newest decisionLogSize decisions,
// newest first, with the runner-up among the other candidates (a retry's
// chosen replica may be a fallback), and tallies predictions per replica.
func TestDecisionLog(t *testing.T) {
	g := &Planner{}
	if got := g.RecentDecisions(); len(got) != 0 {
		t.Fatalf("empty log: %v", got)
	}
	for i := range decisionLogSize + 5 {
		p := &Plan{pl: g, Request: &openai.Request{Model: fmt.Sprint("m", i)}, PromptTokens: 64, BlockTokens: 16, Overhead: time.Duration(i) * time.Microsecond}
		p.decision = scheduler.Decision{Chosen: rankedAs("a", 2, 1), Fallbacks: []scheduler.Ranked{rankedAs("b", 1, 0), rankedAs("c", 1.5, 0)}, Scorers: []string{"prefix", "load"}}
		chosen := p.decision.Chosen
		if i%2 == 1 { // served by a fallback
			chosen = p.decision.Fallbacks[0]
		}
		g.decisions.record(p, Attempt{Replica: chosen.Candidate.ID, Mode: chosen.Mode, CachedTokens: chosen.CachedBlocks * p.BlockTokens, ranked: chosen})
	}
	got := g.RecentDecisions()
	if len(got) != decisionLogSize {
		t.Fatalf("%d decisions; want %d", len(got), decisionLogSize)
	}
	newest, oldest := got[0], got[len(got)-1]
	if newest.Model != fmt.Sprint("m", decisionLogSize+4) || oldest.Model != "m5" {
		t.Errorf("newest %s, oldest %s; want m%d, m5", newest.Model, oldest.Model, decisionLogSize+4)
	}
	// m54 was served by its chosen replica a; m53 by the fallback b.
	if newest.Replica != "a" || newest.RunnerUp != "c" || newest.RunnerUpTotal != 1.5 || newest.Candidates != 3 || newest.CachedTokens != 16 {
		t.Errorf("newest: %+v; want a, runner-up c (1.5) of 3, 16 cached", newest)
	}
	if got[1].Replica != "b" || got[1].RunnerUp != "a" {
		t.Errorf("a fallback's decision: replica %s, runner-up %s; want b, a", got[1].Replica, got[1].RunnerUp)
	}
	if len(newest.Scores) != 2 || newest.Scorers[0] != "prefix" || newest.Scores[0] != 2 {
		t.Errorf("scores %v %v", newest.Scorers, newest.Scores)
	}
	got[0].Scores[0] = -1 // a copy: the log is not changed through it
	if g.RecentDecisions()[0].Scores[0] != 2 {
		t.Error("RecentDecisions shares the log's scores")
	}
	n := uint64(decisionLogSize + 5)
	if p := g.PredictedFor("a"); p.PromptTokens != 64*(n/2+1) || p.CachedTokens != 16*(n/2+1) {
		t.Errorf("predicted for a: %+v; want %d prompt, %d cached", p, 64*(n/2+1), 16*(n/2+1))
	}
	if p := g.PredictedFor("none"); p != (Predicted{}) {
		t.Errorf("predicted for an unknown replica: %+v", p)
	}
}

// TestReplicaHitsSetPredictionAgainstEngine: the admin listing's hits
// are this router's tallies beside the engine's counters, named as their
// source only when the engine exports them.
func TestReplicaHitsSetPredictionAgainstEngine(t *testing.T) {
	engine := map[string][2]float64{"a": {640, 480}}
	tests := []struct {
		name string
		hits func(string) (float64, float64, bool)
		id   string
		want ReplicaHits
	}{
		{"no counters wired", nil, "a", ReplicaHits{PredictedPromptTokens: 64, PredictedCachedTokens: 16}},
		{"engine exports none", func(string) (float64, float64, bool) { return 0, 0, false }, "a",
			ReplicaHits{PredictedPromptTokens: 64, PredictedCachedTokens: 16}},
		{"engine counters", func(id string) (float64, float64, bool) { c, ok := engine[id]; return c[0], c[1], ok }, "a",
			ReplicaHits{PredictedPromptTokens: 64, PredictedCachedTokens: 16, ReportedFrom: "engine_counters", ReportedQueryTokens: 640, ReportedHitTokens: 480}},
		{"nothing routed there", func(string) (float64, float64, bool) { return 32, 0, true }, "b",
			ReplicaHits{ReportedFrom: "engine_counters", ReportedQueryTokens: 32}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := &Planner{d: Deps{EngineHits: tt.hits}}
			p := &Plan{pl: g, Request: &openai.Request{Model: "m"}, PromptTokens: 64, BlockTokens: 16}
			p.decision = scheduler.Decision{Chosen: rankedAs("a", 2, 1)}
			g.decisions.record(p, Attempt{Replica: "a", Mode: scheduler.ModeExact, CachedTokens: 16, ranked: p.decision.Chosen})
			if got := g.hitsOf(tt.id); got != tt.want {
				t.Errorf("hitsOf(%s) = %+v; want %+v", tt.id, got, tt.want)
			}
		})
	}
}
