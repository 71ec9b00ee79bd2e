package scheduler

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/router/index"
	"github.com/llmgw/llmgw/router/load"
)

// TestDefaultWeighsPrefixAgainstLoad runs the default configuration over
// three exact replicas for a 1,024-token prompt (64 blocks of 16): a
// cached prefix wins while the work queued ahead of it costs less than the
// prefill it saves, and loses to an idle replica once it costs more.
func TestDefaultWeighsPrefixAgainstLoad(t *testing.T) {
	prompt := keys(1, 64)
	const tokens = 64 * 16
	tests := []struct {
		name string
		// held is how many of the prompt's leading blocks each replica
		// caches on the GPU; load is each one's load.
		held    [3]int
		load    [3]load.Load
		session string // the session's replica ("" for none)
		want    string
	}{
		{"even load: the replica holding the prompt", [3]int{64, 0, 0}, [3]load.Load{}, "", "a"},
		{"even load: the longest prefix", [3]int{32, 48, 0}, [3]load.Load{}, "", "b"},
		{"queue cheaper than the prefill saved: stays on the cache",
			[3]int{64, 0, 0}, [3]load.Load{{InFlight: 1, PrefillTokens: 600}, {}, {}}, "", "a"},
		{"queue dearer than the prefill saved: the idle replica",
			[3]int{64, 0, 0}, [3]load.Load{{InFlight: 3, PrefillTokens: 3000}, {}, {}}, "", "b|c"},
		{"half the prompt, one queued prompt ahead: the idle replica",
			[3]int{32, 0, 0}, [3]load.Load{{InFlight: 1, PrefillTokens: tokens}, {}, {}}, "", "b|c"},
		{"other routers' requests waiting in the engine count",
			[3]int{64, 0, 0}, [3]load.Load{{Waiting: 8}, {}, {}}, "", "b|c"},
		{"no hit: the least loaded",
			[3]int{}, [3]load.Load{{InFlight: 1, PrefillTokens: 500}, {InFlight: 1, PrefillTokens: 200}, {InFlight: 2, PrefillTokens: 900}}, "", "b"},
		{"no hit, running requests only: the least busy",
			[3]int{}, [3]load.Load{{InFlight: 3}, {Running: 5}, {InFlight: 1}}, "", "c"},
		{"a session stays while its replica is somewhat slower",
			[3]int{64, 64, 0}, [3]load.Load{{InFlight: 2, PrefillTokens: 250}, {}, {}}, "a", "a"},
		{"a session moves when a rival is clearly better",
			[3]int{64, 64, 0}, [3]load.Load{{InFlight: 6, PrefillTokens: 6000}, {}, {}}, "a", "b"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, DefaultConfig())
			var cands []Candidate
			for i, id := range []string{"a", "b", "c"} {
				if tc.held[i] > 0 {
					e.store(t, id, index.GPU, prompt[:tc.held[i]])
				}
				c := cand(id, ModeExact)
				c.Load = tc.load[i]
				cands = append(cands, c)
			}
			if tc.session != "" {
				e.s.Routed(&Request{Model: "m", SessionID: "s"}, &Candidate{ID: tc.session})
			}
			req := &Request{Model: "m", Keys: prompt, BlockTokens: 16, PromptTokens: tokens, SessionID: "s"}
			d, err := e.s.Schedule(context.Background(), req, cands)
			if err != nil {
				t.Fatal(err)
			}
			if got := d.Chosen.Candidate.ID; !strings.Contains("|"+tc.want+"|", "|"+got+"|") {
				t.Errorf("chose %s (total %.3f, ttft %.3f); want %s; fallbacks %+v", got, d.Chosen.Total,
					d.Score(d.Chosen, "ttft"), tc.want, d.Fallbacks)
			}
		})
	}
}

// TestTTFTScores checks the scores themselves: cheapest/cost, with the cost
// in prefill tokens.
func TestTTFTScores(t *testing.T) {
	p := TTFTParams{BaseTokens: 100, WaitingTokens: 50, RunningTokens: 10}
	tests := []struct {
		name   string
		credit []float64 // cached blocks of 10 tokens credited per candidate
		loads  []load.Load
		want   []float64
	}{
		// prompt 1,000 tokens: costs 100+1000, 100+0 (+0 queued)
		{"a full hit", []float64{0, 100}, []load.Load{{}, {}}, []float64{100.0 / 1100, 1}},
		// 100+500+300 vs 100+1000
		{"queued prefill", []float64{50, 0}, []load.Load{{PrefillTokens: 300}, {}}, []float64{1, 900.0 / 1100}},
		// none of the 10 waiting is the routers': 10 x 50 = 500 on top of
		// their own 200; running 3 x 10
		{"waiting requests the routers did not send", []float64{0, 0}, []load.Load{{PrefillTokens: 200, Waiting: 10, Running: 3}, {}},
			[]float64{1100.0 / 1830, 1}},
		// 4 waiting, 5 in flight from the routers: their 200 tokens are the
		// queue; running max(5, 1) x 10
		{"the routers' own waiting requests count by their tokens", []float64{0, 0}, []load.Load{{PrefillTokens: 200, Waiting: 4, Running: 1, InFlight: 5}, {}},
			[]float64{1100.0 / 1350, 1}},
		// 7 waiting, 5 of them the routers': 2 x 50 more
		{"the waiting beyond the routers' requests", []float64{0, 0}, []load.Load{{PrefillTokens: 200, Waiting: 7, InFlight: 5}, {}},
			[]float64{1100.0 / 1450, 1}},
		{"a broken scrape is the last choice, not NaN", []float64{0, 0}, []load.Load{{Waiting: math.Inf(1)}, {Running: math.NaN()}},
			[]float64{1100 / (1100 + 50e9), 1}},
		{"credit beyond the prompt saves the whole prompt, no more", []float64{500, 0}, []load.Load{{}, {}}, []float64{1, 100.0 / 1100}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := &TTFTScorer{p: p}
			req := &Request{Keys: keys(1, 100), BlockTokens: 10, PromptTokens: 1000}
			req.resetCycle(len(tc.credit))
			cands := make([]Candidate, len(tc.credit))
			for i := range cands {
				NotePrediction(req, i, Prediction{Blocks: int(tc.credit[i]), Credit: tc.credit[i], Mode: ModeExact})
				cands[i].Load = tc.loads[i]
			}
			got := make([]float64, len(cands))
			s.Score(context.Background(), req, cands, got)
			for i := range got {
				if math.Abs(got[i]-tc.want[i]) > 1e-9 {
					t.Errorf("score[%d] = %g; want %g", i, got[i], tc.want[i])
				}
			}
		})
	}
}

// TestTTFTMustFollowPredictions: the ttft scorer reads what the prefix
// scorers predicted, so a config listing it first is an error.
func TestTTFTMustFollowPredictions(t *testing.T) {
	r := NewRegistry()
	if err := RegisterBuiltins(r); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Scorers: []Spec{{Type: "ttft", Weight: 1}, {Type: "approx-prefix", Weight: 1}}, Picker: Spec{Type: "max-score"}}
	if _, err := r.Build(cfg, Deps{}); err == nil || !strings.Contains(err.Error(), "must come after") {
		t.Errorf("ttft before approx-prefix: got %v; want an ordering error", err)
	}
	cfg.Scorers[0], cfg.Scorers[1] = cfg.Scorers[1], cfg.Scorers[0]
	if _, err := r.Build(cfg, Deps{}); err != nil {
		t.Errorf("ttft after approx-prefix: %v", err)
	}
	for _, params := range []string{`{"base_tokens":0}`, `{"waiting_tokens":-1}`, `{"running_tokens":"x"}`, `{"queue":1}`} {
		cfg.Scorers[1].Params = []byte(params)
		if _, err := r.Build(cfg, Deps{}); err == nil {
			t.Errorf("params %s: no error", params)
		}
	}
}

// FuzzTTFTScore: whatever the loads and predictions (scrapes can report
// NaN, infinities, negatives), every score is in [0, 1] and the cheapest
// candidate scores 1.
func FuzzTTFTScore(f *testing.F) {
	f.Add(0, 0.0, 0.0, 0, 1000, 10.0)
	f.Add(-5, math.Inf(1), math.NaN(), 3, 0, -1.0)
	f.Add(1<<40, -1.0, 1e300, -7, 1<<30, math.Inf(-1))
	f.Add(-1<<62, 0.0, 0.0, 0, -100, math.NaN())
	s := &TTFTScorer{p: defaultTTFTParams()}
	f.Fuzz(func(t *testing.T, prefill int, waiting, running float64, inFlight, prompt int, credit float64) {
		req := &Request{Keys: keys(1, 8), BlockTokens: 16, PromptTokens: prompt}
		req.resetCycle(2)
		NotePrediction(req, 0, Prediction{Blocks: 8, Credit: credit, Mode: ModeExact})
		cands := []Candidate{{Load: load.Load{PrefillTokens: prefill, Waiting: waiting, Running: running, InFlight: inFlight}}, {}}
		scores := make([]float64, 2)
		s.Score(context.Background(), req, cands, scores)
		best := 0.0
		for i, v := range scores {
			if !(v >= 0 && v <= 1) {
				t.Fatalf("score[%d] = %g; want it in [0, 1]", i, v)
			}
			best = max(best, v)
		}
		if best != 1 {
			t.Fatalf("scores %v: the cheapest should score 1", scores)
		}
	})
}
