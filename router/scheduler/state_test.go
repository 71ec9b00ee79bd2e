package scheduler_test

// These tests stand outside the package and use only its exported API, as
// a plugin of an embedding program would.

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/llmgw/llmgw/router/index"
	"github.com/llmgw/llmgw/router/scheduler"
)

// spyScorer reads the prefix scorers' predictions and keeps what it saw.
type spyScorer struct {
	name scheduler.TypedName
	seen map[string]scheduler.Prediction
}

func (s *spyScorer) TypedName() scheduler.TypedName { return s.name }

func (s *spyScorer) ReadsState() []scheduler.AnyStateKey {
	return []scheduler.AnyStateKey{scheduler.Predictions}
}

func (s *spyScorer) Score(_ context.Context, req *scheduler.Request, cands []scheduler.Candidate, scores []float64) {
	for i := range cands {
		if p, ok := scheduler.Predictions.Get(req, i); ok {
			s.seen[cands[i].ID] = p
		}
	}
}

// oracleScorer knows a replica's cache some other way (say, an engine
// API) and tells the ttft scorer: candidate `holder` caches the whole
// prompt. Its own score is 0 everywhere.
type oracleScorer struct {
	name   scheduler.TypedName
	holder string
}

func (s *oracleScorer) TypedName() scheduler.TypedName { return s.name }

func (s *oracleScorer) WritesState() []scheduler.AnyStateKey {
	return []scheduler.AnyStateKey{scheduler.Predictions}
}

func (s *oracleScorer) Score(_ context.Context, req *scheduler.Request, cands []scheduler.Candidate, _ []float64) {
	for i := range cands {
		if cands[i].ID == s.holder {
			n := len(req.ApproxKeys)
			scheduler.NotePrediction(req, i, scheduler.Prediction{Blocks: n, Credit: float64(n), Mode: scheduler.ModeApprox})
		}
	}
}

// registry is the builtins plus the outside plugins, the way an embedding
// program extends the router's registry.
func registry(t *testing.T, spy *spyScorer) *scheduler.Registry {
	t.Helper()
	r := scheduler.NewRegistry()
	if err := scheduler.RegisterBuiltins(r); err != nil {
		t.Fatal(err)
	}
	err := r.Register("spy", func(n scheduler.TypedName, _ json.RawMessage, _ scheduler.Deps) (scheduler.Plugin, error) {
		spy.name = n
		return spy, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	err = r.Register("oracle", func(n scheduler.TypedName, raw json.RawMessage, _ scheduler.Deps) (scheduler.Plugin, error) {
		var p struct {
			Holder string `json:"holder"`
		}
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, err
		}
		return &oracleScorer{name: n, holder: p.Holder}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func candidates(mode scheduler.Mode, ids ...string) []scheduler.Candidate {
	var cs []scheduler.Candidate
	for _, id := range ids {
		cs = append(cs, scheduler.Candidate{ID: id, Model: "m", Mode: mode, Healthy: true})
	}
	return cs
}

func blockKeys(n int) []uint64 {
	ks := make([]uint64, n)
	for i := range ks {
		ks[i] = uint64(i+1) * 0x9E3779B97F4A7C15
	}
	return ks
}

// TestOutsideScorerReadsPrefixPredictions: a scorer defined outside the
// package, listed after prefix, reads what prefix predicted per
// candidate; listed before it, the config is refused.
func TestOutsideScorerReadsPrefixPredictions(t *testing.T) {
	prompt := blockKeys(16)
	idx := index.NewModels(index.Options{})
	err := idx.For("m").Update("a", []index.Change{
		{Tier: index.GPU, Add: prompt[:6]}, {Tier: index.CPU, Add: prompt[6:8]}})
	if err != nil {
		t.Fatal(err)
	}
	spy := &spyScorer{seen: map[string]scheduler.Prediction{}}
	r := registry(t, spy)
	cfg := scheduler.Config{
		Scorers: []scheduler.Spec{{Type: "prefix", Weight: 1}, {Type: "spy", Weight: 1}},
		Picker:  scheduler.Spec{Type: "max-score"},
	}
	s, err := r.Build(cfg, scheduler.Deps{Index: idx})
	if err != nil {
		t.Fatal(err)
	}
	d, err := s.Schedule(t.Context(), &scheduler.Request{Model: "m", Keys: prompt, BlockTokens: 16}, candidates(scheduler.ModeExact, "a", "b"))
	if err != nil {
		t.Fatal(err)
	}
	// cpu_weight 0.75: 6 GPU blocks + 2 x 0.75, all on rank 0.
	want := map[string]scheduler.Prediction{
		"a": {Blocks: 8, Credit: 7.5, Mode: scheduler.ModeExact, Rank: scheduler.RankHit{Rank: 0, Blocks: 8}},
		"b": {Blocks: 0, Credit: 0, Mode: scheduler.ModeExact},
	}
	for id, w := range want {
		if got := spy.seen[id]; got != w {
			t.Errorf("spy saw %s: %+v; want %+v", id, got, w)
		}
	}
	if d.Chosen.Candidate.ID != "a" || d.Chosen.CachedBlocks != 8 {
		t.Errorf("chose %s with %d cached blocks; want a with 8", d.Chosen.Candidate.ID, d.Chosen.CachedBlocks)
	}

	cfg.Scorers[0], cfg.Scorers[1] = cfg.Scorers[1], cfg.Scorers[0]
	if _, err := r.Build(cfg, scheduler.Deps{Index: idx}); err == nil || !strings.Contains(err.Error(), "must come after") {
		t.Errorf("spy before prefix: got %v; want an ordering error", err)
	}
}

// TestOutsideProducerFeedsTTFT: a prediction written by a scorer defined
// outside the package moves the ttft scorer, which alone would see two
// equally idle replicas with nothing cached.
func TestOutsideProducerFeedsTTFT(t *testing.T) {
	r := registry(t, &spyScorer{})
	cands := candidates(scheduler.ModeApprox, "a", "b", "c")
	tests := []struct {
		name    string
		scorers []scheduler.Spec
		ttft    map[string]float64 // want: each candidate's ttft score
		cached  int                // want: the chosen replica's cached blocks
	}{
		{"ttft alone ties", []scheduler.Spec{{Type: "ttft", Weight: 1}},
			map[string]float64{"a": 1, "b": 1, "c": 1}, 0},
		// 32 chunks of 32 tokens: 256 + 1024 uncached, against 256 + 0.
		{"the oracle's prediction decides", []scheduler.Spec{
			{Type: "oracle", Weight: 1, Params: json.RawMessage(`{"holder":"b"}`)}, {Type: "ttft", Weight: 1}},
			map[string]float64{"a": 256.0 / 1280, "b": 1, "c": 256.0 / 1280}, 32},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := r.Build(scheduler.Config{Scorers: tc.scorers, Picker: scheduler.Spec{Type: "max-score"}}, scheduler.Deps{})
			if err != nil {
				t.Fatal(err)
			}
			req := &scheduler.Request{Model: "m", ApproxKeys: blockKeys(32), PromptTokens: 1024}
			d, err := s.Schedule(t.Context(), req, cands)
			if err != nil {
				t.Fatal(err)
			}
			for _, rk := range append([]scheduler.Ranked{d.Chosen}, d.Fallbacks...) {
				if got, want := d.Score(rk, "ttft"), tc.ttft[rk.Candidate.ID]; got != want {
					t.Errorf("ttft score of %s = %g; want %g", rk.Candidate.ID, got, want)
				}
			}
			if d.Chosen.CachedBlocks != tc.cached {
				t.Errorf("chosen %s reports %d cached blocks; want %d", d.Chosen.Candidate.ID, d.Chosen.CachedBlocks, tc.cached)
			}
			if tc.cached > 0 && d.Chosen.Candidate.ID != "b" {
				t.Errorf("chose %s; want b, which the oracle says caches the prompt", d.Chosen.Candidate.ID)
			}
		})
	}
	bad := scheduler.Config{Scorers: []scheduler.Spec{{Type: "ttft", Weight: 1},
		{Type: "oracle", Weight: 1, Params: json.RawMessage(`{"holder":"b"}`)}}, Picker: scheduler.Spec{Type: "max-score"}}
	if _, err := r.Build(bad, scheduler.Deps{}); err == nil || !strings.Contains(err.Error(), "must come after") {
		t.Errorf("ttft before oracle: got %v; want an ordering error", err)
	}
}

// depthKey is an outside plugin's own state key: one scorer writes each
// candidate's value, another reads it.
var depthKey = scheduler.NewStateKey[float64]("queue depth")

type depthWriter struct{ name scheduler.TypedName }

func (w *depthWriter) TypedName() scheduler.TypedName { return w.name }

func (w *depthWriter) WritesState() []scheduler.AnyStateKey { return []scheduler.AnyStateKey{depthKey} }

func (w *depthWriter) Score(_ context.Context, req *scheduler.Request, cands []scheduler.Candidate, _ []float64) {
	for i := range cands {
		depthKey.Set(req, i, cands[i].Load.Waiting)
	}
}

type depthReader struct{ name scheduler.TypedName }

func (r *depthReader) TypedName() scheduler.TypedName { return r.name }

func (r *depthReader) ReadsState() []scheduler.AnyStateKey { return []scheduler.AnyStateKey{depthKey} }

func (r *depthReader) Score(_ context.Context, req *scheduler.Request, cands []scheduler.Candidate, scores []float64) {
	for i := range cands {
		if d, ok := depthKey.Get(req, i); ok {
			scores[i] = 1 / (1 + d)
		}
	}
}

// TestOwnStateKeyAllocatesNothing: an outside key and the Predictions
// hand-off cost no allocation per decision on a reused Request, and the
// reader sees what the writer set (the shallowest queue wins).
func TestOwnStateKeyAllocatesNothing(t *testing.T) {
	w, rd := &depthWriter{name: scheduler.TypedName{Type: "w", Name: "w"}}, &depthReader{name: scheduler.TypedName{Type: "r", Name: "r"}}
	reg := registry(t, &spyScorer{})
	oracle, err := reg.New(scheduler.Spec{Type: "oracle", Params: json.RawMessage(`{"holder":"a"}`)}, scheduler.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	ttft, err := reg.New(scheduler.Spec{Type: "ttft"}, scheduler.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	picker, err := reg.New(scheduler.Spec{Type: "max-score"}, scheduler.Deps{})
	if err != nil {
		t.Fatal(err)
	}
	s, err := scheduler.New(nil, []scheduler.WeightedScorer{
		{Scorer: w, Weight: 1}, {Scorer: rd, Weight: 4}, {Scorer: oracle.(scheduler.Scorer), Weight: 1}, {Scorer: ttft.(scheduler.Scorer), Weight: 1},
	}, picker.(scheduler.Picker))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := scheduler.New(nil, []scheduler.WeightedScorer{{Scorer: rd, Weight: 1}, {Scorer: w, Weight: 1}}, picker.(scheduler.Picker)); err == nil ||
		!strings.Contains(err.Error(), "queue depth") {
		t.Errorf("reader before writer: got %v; want an ordering error naming the key", err)
	}
	cands := candidates(scheduler.ModeApprox, "a", "b", "c")
	cands[0].Load.Waiting, cands[1].Load.Waiting, cands[2].Load.Waiting = 9, 0, 3
	prompt := blockKeys(8)
	var req scheduler.Request
	schedule := func() {
		req.Reset(scheduler.Request{Model: "m", ApproxKeys: prompt, PromptTokens: 128})
		d, err := s.Schedule(t.Context(), &req, cands)
		if err != nil || d.Chosen.Candidate.ID != "b" || d.Score(d.Chosen, "r") != 1 {
			t.Fatalf("decision %+v, %v; want b, with reader score 1", d.Chosen, err)
		}
		if a := d.Fallbacks[len(d.Fallbacks)-1]; a.Candidate.ID != "a" || a.CachedBlocks != 8 {
			t.Fatalf("last fallback %+v; want a with the oracle's 8 blocks", a)
		}
	}
	schedule()
	if n := testing.AllocsPerRun(50, schedule); n != 0 {
		t.Errorf("Schedule allocates %v times per decision; want 0", n)
	}
}
