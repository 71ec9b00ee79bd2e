package scheduler

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
)

// TestRoundRobin: requests go to candidates in turn, in replica-ID order
// whatever the input order and the scores.
func TestRoundRobin(t *testing.T) {
	var cfg Config
	if err := json.Unmarshal([]byte(`{"filters":[{"type":"model"}],"scorers":[{"type":"load","weight":1}],"picker":{"type":"round-robin"}}`), &cfg); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, cfg)
	cands := []Candidate{cand("c", ModeExact), cand("a", ModeExact), cand("b", ModeExact)}
	cands[1].Load.InFlight = 50 // the busiest still gets its turn
	var got []string
	for range 7 {
		got = append(got, e.route(t, &Request{Model: "m", Keys: keys(1, 4)}, cands).Chosen.Candidate.ID)
	}
	if want := []string{"a", "b", "c", "a", "b", "c", "a"}; !slices.Equal(got, want) {
		t.Errorf("got %v; want %v", got, want)
	}
	p := &RoundRobinPicker{}
	if i := p.Pick(context.Background(), nil, nil, nil); i != -1 {
		t.Errorf("no candidates: picked %d; want -1", i)
	}
	r := NewRegistry()
	if err := RegisterBuiltins(r); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(`{"picker":{"type":"round-robin","params":{"start":1}}}`), &cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Build(cfg, Deps{}); err == nil {
		t.Error("round-robin with params: no error")
	}
}

// TestApproxIgnoreEvents: with ignore_events the approximate scorer routes
// replicas whose events flow by routing history alone; without it, it
// leaves them to the precise scorer.
func TestApproxIgnoreEvents(t *testing.T) {
	for _, tc := range []struct {
		params     string
		wantCached int
		wantMode   Mode
	}{
		{`{"ignore_events": true}`, 12, ModeApprox},
		{`{}`, 0, ModeLoad},
	} {
		var cfg Config
		raw := `{"scorers":[{"type":"approx-prefix","weight":2,"params":` + tc.params + `},{"type":"load","weight":1}],"picker":{"type":"max-score"}}`
		if err := json.Unmarshal([]byte(raw), &cfg); err != nil {
			t.Fatal(err)
		}
		e := newEnv(t, cfg)
		cands := []Candidate{cand("a", ModeExact), cand("b", ModeExact), cand("c", ModeExact)}
		prompt := keys(1, 12)
		first := e.route(t, &Request{Model: "m", Keys: prompt}, cands)
		again := e.route(t, &Request{Model: "m", Keys: prompt}, cands)
		if again.Chosen.CachedBlocks != tc.wantCached || again.Chosen.Mode != tc.wantMode {
			t.Errorf("%s: repeat predicted %d blocks in mode %s; want %d, %s", tc.params, again.Chosen.CachedBlocks, again.Chosen.Mode, tc.wantCached, tc.wantMode)
		}
		if tc.wantCached > 0 && again.Chosen.Candidate.ID != first.Chosen.Candidate.ID {
			t.Errorf("%s: repeat went to %s; want %s", tc.params, again.Chosen.Candidate.ID, first.Chosen.Candidate.ID)
		}
	}
}
