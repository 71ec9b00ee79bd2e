package scheduler

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/router/index"
	"github.com/llmgw/llmgw/router/load"
)

func TestMaxScorePicker(t *testing.T) {
	tests := []struct {
		name   string
		totals []float64
		temp   float64
		// allowed lists the picks that may occur; every one must occur
		// over the trials.
		allowed []int
	}{
		{"single best", []float64{0.1, 0.9, 0.5}, 0, []int{1}},
		{"ties are shared", []float64{0.7, 0.2, 0.7, 0.7}, 0, []int{0, 2, 3}},
		{"near-equal is a tie", []float64{0.5, 0.5 + 1e-12}, 0, []int{0, 1}},
		{"tiny temperature is greedy", []float64{0.2, 0.9}, 1e-4, []int{1}},
		{"high temperature explores", []float64{0.2, 0.9, 0.5}, 10, []int{0, 1, 2}},
	}
	for _, tc := range tests {
		p := newMaxScorePicker(TypedName{"max-score", "max-score"}, PickerParams{Temperature: tc.temp}, rand.NewPCG(7, 7))
		seen := map[int]int{}
		for i := 0; i < 200; i++ {
			seen[p.Pick(context.Background(), nil, nil, tc.totals)]++
		}
		for _, a := range tc.allowed {
			if seen[a] == 0 {
				t.Errorf("%s: %d never picked in 200 trials (%v)", tc.name, a, seen)
			}
			delete(seen, a)
		}
		if len(seen) > 0 {
			t.Errorf("%s: picked outside %v: %v", tc.name, tc.allowed, seen)
		}
	}
	p := newMaxScorePicker(TypedName{}, PickerParams{}, rand.NewPCG(1, 1))
	if got := p.Pick(context.Background(), nil, nil, nil); got != -1 {
		t.Errorf("Pick of nothing = %d; want -1", got)
	}
}

// TestPickerIsDeterministic: the same source gives the same choices.
func TestPickerIsDeterministic(t *testing.T) {
	run := func() []int {
		p := newMaxScorePicker(TypedName{}, PickerParams{}, rand.NewPCG(3, 4))
		var got []int
		for i := 0; i < 20; i++ {
			got = append(got, p.Pick(context.Background(), nil, nil, []float64{1, 1, 1, 1}))
		}
		return got
	}
	a, b := run(), run()
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("runs differ: %v vs %v", a, b)
		}
	}
}

func TestLoadScorer(t *testing.T) {
	s := &LoadScorer{p: defaultLoadParams()}
	tests := []struct {
		name  string
		loads []load.Load
		want  []float64
	}{
		{"all idle tie at 1", []load.Load{{}, {}}, []float64{1, 1}},
		{"in flight", []load.Load{{InFlight: 4, InFlightTokens: 400}, {InFlight: 2, InFlightTokens: 200}, {}}, []float64{1 - 2/4.0, 1 - 1/4.0, 1}},
		{"engine queue", []load.Load{{Waiting: 10, Running: 8}, {Running: 8}}, []float64{1 - 1.5/4.0, 1 - 0.5/4.0}},
		{"kv usage counts as is", []load.Load{{KVUsage: 1}, {KVUsage: 0.5}}, []float64{1 - 0.5/4.0, 1 - 0.25/4.0}},
	}
	for _, tc := range tests {
		cands := make([]Candidate, len(tc.loads))
		for i, l := range tc.loads {
			cands[i].Load = l
		}
		got := make([]float64, len(cands))
		s.Score(context.Background(), &Request{}, cands, got)
		for i := range got {
			if d := got[i] - tc.want[i]; d > 1e-9 || d < -1e-9 {
				t.Errorf("%s: score[%d] = %g; want %g", tc.name, i, got[i], tc.want[i])
			}
		}
	}
}

func TestHistoryCapAndTTL(t *testing.T) {
	c := newClock()
	h := NewHistory(time.Minute, 100, c.now)
	depth := func(ks []uint64) map[string]int {
		m := map[string]int{}
		h.Match(ks, func(r string, d int) { m[r] = d })
		return m
	}
	a := keys(1, 10)
	h.Record(a, "r1")
	h.Record(a[:4], "r2")
	if got := depth(a); got["r1"] != 10 || got["r2"] != 4 || len(got) != 2 {
		t.Errorf("depths = %v; want r1:10 r2:4", got)
	}
	// Fill far past the cap: the size stays bounded, recent keys survive.
	for i := uint64(0); i < 100; i++ {
		h.Record(keys(1000+i*10, 1000+i*10+9), "r3")
	}
	if n := h.size(); n > 100 {
		t.Errorf("history holds %d pairs; cap is 100", n)
	}
	if got := depth(keys(1990, 1999)); got["r3"] != 10 {
		t.Errorf("most recent prompt: depth %v; want r3:10", got)
	}
	if got := depth(a); len(got) != 0 {
		t.Errorf("old prompt survived a full turnover: %v", got)
	}
	c.advance(2 * time.Minute)
	if got := depth(keys(1990, 1999)); len(got) != 0 {
		t.Errorf("expired entries matched: %v", got)
	}
}

func TestSessionEviction(t *testing.T) {
	c := newClock()
	s := newSessionScorer(TypedName{}, SessionParams{Header: "X-S", IdleTTL: Duration(time.Minute), MaxSessions: 2}, c.now)
	route := func(id, replica string) {
		s.Routed(&Request{SessionID: id}, &Candidate{ID: replica})
		c.advance(time.Second)
	}
	route("s1", "a")
	route("s2", "b")
	route("s3", "c") // evicts s1, the least recently used
	if len(s.sessions) != 2 {
		t.Fatalf("%d sessions; want 2", len(s.sessions))
	}
	if _, ok := s.sessions["s1"]; ok {
		t.Error("s1 kept; want it evicted as least recently used")
	}
	scores := make([]float64, 2)
	s.Score(context.Background(), &Request{SessionID: "s2"}, []Candidate{{ID: "a"}, {ID: "b"}}, scores)
	if scores[0] != 0 || scores[1] != 1 {
		t.Errorf("s2 scores %v; want [0 1]", scores)
	}
	c.advance(2 * time.Minute)
	scores = make([]float64, 2)
	s.Score(context.Background(), &Request{SessionID: "s2"}, []Candidate{{ID: "a"}, {ID: "b"}}, scores)
	if scores[1] != 0 {
		t.Errorf("idle session still bound: %v", scores)
	}
}

func TestRegistryBuild(t *testing.T) {
	r := NewRegistry()
	if err := RegisterBuiltins(r); err != nil {
		t.Fatal(err)
	}
	if err := RegisterBuiltins(r); err == nil {
		t.Error("registering builtins twice: got nil error")
	}
	deps := Deps{Index: nil}
	withIndex := Deps{Index: emptyIndex{}}
	tests := []struct {
		name string
		cfg  string
		deps Deps
		want string // substring of the error; "" for success
	}{
		{"default", "", withIndex, ""},
		{"prefix without index", `{"scorers":[{"type":"prefix","weight":1}],"picker":{"type":"max-score"}}`, deps, "needs the prefix index"},
		{"unknown type", `{"filters":[{"type":"gpu-magic"}],"picker":{"type":"max-score"}}`, deps, `unknown plugin type "gpu-magic"`},
		{"unknown param", `{"scorers":[{"type":"load","weight":1,"params":{"in_flite":1}}],"picker":{"type":"max-score"}}`, deps, `unknown field "in_flite"`},
		{"params on a plain filter", `{"filters":[{"type":"model","params":{"x":1}}],"picker":{"type":"max-score"}}`, deps, "unknown field"},
		{"wrong type", `{"scorers":[{"type":"approx-prefix","weight":1,"params":{"ttl":120}}],"picker":{"type":"max-score"}}`, deps, "duration must be a string"},
		{"bad duration", `{"scorers":[{"type":"session","weight":1,"params":{"idle_ttl":"soon"}}],"picker":{"type":"max-score"}}`, deps, `duration "soon"`},
		{"zero weight", `{"scorers":[{"type":"load"}],"picker":{"type":"max-score"}}`, deps, "weight 0"},
		{"invalid value", `{"scorers":[{"type":"prefix","weight":1,"params":{"cpu_weight":2}}],"picker":{"type":"max-score"}}`, withIndex, "cpu_weight 2"},
		{"stride zero", `{"scorers":[{"type":"prefix","weight":1,"params":{"stride":0}}],"picker":{"type":"max-score"}}`, withIndex, "stride 0"},
		{"negative temperature", `{"picker":{"type":"max-score","params":{"temperature":-1}}}`, deps, "temperature"},
		{"no picker", `{"filters":[{"type":"model"}]}`, deps, "picker: no type"},
		{"filter as picker", `{"picker":{"type":"model"}}`, deps, "not a picker"},
		{"scorer as filter", `{"filters":[{"type":"load"}],"picker":{"type":"max-score"}}`, deps, "not a filter"},
		{"duplicate", `{"scorers":[{"type":"load","weight":1},{"type":"load","weight":2}],"picker":{"type":"max-score"}}`, deps, "duplicate plugin load"},
		{"two named", `{"scorers":[{"type":"load","weight":1},{"type":"load","name":"kv","weight":2,"params":{"in_flight":0,"in_flight_tokens":0,"waiting":0,"running":0,"kv_usage":1}}],"picker":{"type":"max-score"}}`, deps, ""},
		{"trailing data", `{"scorers":[{"type":"load","weight":1,"params":{"waiting":1} {"running":1}}],"picker":{"type":"max-score"}}`, deps, "invalid"},
		{"all load weights zero", `{"scorers":[{"type":"load","weight":1,"params":{"in_flight":0,"in_flight_tokens":0,"waiting":0,"running":0,"kv_usage":0}}],"picker":{"type":"max-score"}}`, deps, "at least one weight"},
	}
	for _, tc := range tests {
		cfg := DefaultConfig()
		if tc.cfg != "" {
			cfg = Config{}
			if err := json.Unmarshal([]byte(tc.cfg), &cfg); err != nil {
				if tc.want != "" && strings.Contains(err.Error(), tc.want) {
					continue
				}
				t.Fatalf("%s: config JSON: %v", tc.name, err)
			}
		}
		_, err := r.Build(cfg, tc.deps)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: got %v; want an error containing %q", tc.name, err, tc.want)
		}
	}
}

func TestDecodeParamsTrailing(t *testing.T) {
	var p LoadParams
	if err := DecodeParams([]byte(`{"waiting":1} {"running":1}`), &p); err == nil || !strings.Contains(err.Error(), "trailing") {
		t.Errorf("got %v; want a trailing-data error", err)
	}
	if err := DecodeParams([]byte(" null "), &p); err != nil {
		t.Errorf("null params: %v", err)
	}
}

type emptyIndex struct{}

func (emptyIndex) LookupReplicas(_ string, _ []uint64, _ int, replicas []string, _ []index.Match) []index.Match {
	return make([]index.Match, len(replicas))
}

// FuzzPluginParams feeds arbitrary parameter bytes to every builtin: each
// either builds a plugin or returns an error; none panics.
func FuzzPluginParams(f *testing.F) {
	for _, s := range []string{``, `null`, `{}`, `{"ttl":"1s"}`, `{"temperature":0.5}`, `{"max_in_flight":-1}`, `[1,2]`, `{"cpu_weight":1e400}`, `{"base_tokens":0}`, `{"waiting_tokens":1e308,"running_tokens":-0}`} {
		f.Add(s)
	}
	r := NewRegistry()
	if err := RegisterBuiltins(r); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, params string) {
		for _, typ := range r.Types() {
			p, err := r.New(Spec{Type: typ, Params: json.RawMessage(params)}, Deps{Index: emptyIndex{}})
			if err == nil && p == nil {
				t.Fatalf("%s: nil plugin without error", typ)
			}
		}
	})
}

// TestHistoryManyReplicas: past maxNames distinct replicas the history
// starts afresh instead of growing without bound.
func TestHistoryManyReplicas(t *testing.T) {
	c := newClock()
	h := NewHistory(time.Minute, 1<<20, c.now)
	for i := uint64(0); i < maxNames; i++ {
		h.Record(keys(10+2*i, 11+2*i), fmt.Sprint("r", i))
	}
	k := keys(1, 2)
	if n := h.size(); n != 2*maxNames {
		t.Fatalf("size %d; want %d", n, 2*maxNames)
	}
	h.Record(k, "one-more")
	got := map[string]int{}
	h.Match(k, func(r string, d int) { got[r] = d })
	if len(got) != 1 || got["one-more"] != 2 || len(h.names) != 1 {
		t.Errorf("after overflow: matches %v, %d names; want only one-more with depth 2", got, len(h.names))
	}
}
