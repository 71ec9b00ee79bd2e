package replicas

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/llmgw/llmgw/router/scheduler"
)

func ids(rs []Replica) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.ID)
	}
	return out
}

func TestAdapters(t *testing.T) {
	f := newFixture()
	f.set.Replace([]Replica{
		{ID: "a/1", Model: "m", Address: "h:1"},
		{ID: "b/1", Model: "m", Address: "h:2"},
		{ID: "c/1", Model: "other", Address: "h:3"},
	})
	steps := []struct {
		name     string
		do       func()
		sql      []string // replicas serving "sql"
		adapters []Adapter
	}{
		{"none yet", func() {}, nil, []Adapter{}},
		{"a serves sql; a base model's name stays the base's", func() { f.set.SetAdapters("a/1", []string{"sql", "m", "sql"}) },
			[]string{"a/1"}, []Adapter{{"sql", "m"}}},
		{"b too", func() { f.set.SetAdapters("b/1", []string{"sql", "chat"}) },
			[]string{"a/1", "b/1"}, []Adapter{{"chat", "m"}, {"sql", "m"}}},
		{"another base model's replica does not join m's", func() { f.set.SetAdapters("c/1", []string{"sql"}) },
			[]string{"a/1", "b/1"}, []Adapter{{"chat", "m"}, {"sql", "m"}}},
		{"unknown replica ignored", func() { f.set.SetAdapters("zz/1", []string{"ghost"}) },
			[]string{"a/1", "b/1"}, []Adapter{{"chat", "m"}, {"sql", "m"}}},
		{"a leaves the set", func() {
			f.set.Replace([]Replica{{ID: "b/1", Model: "m", Address: "h:2"}, {ID: "c/1", Model: "other", Address: "h:3"}})
		}, []string{"b/1"}, []Adapter{{"chat", "m"}, {"sql", "m"}}},
		{"b unloads its adapters: sql falls to the other base model", func() { f.set.SetAdapters("b/1", nil) },
			[]string{"c/1"}, []Adapter{{"sql", "other"}}},
	}
	for _, st := range steps {
		st.do()
		if d := cmp.Diff(st.sql, ids(f.set.ForModel("sql"))); d != "" {
			t.Errorf("%s: ForModel(sql) (-want +got):\n%s", st.name, d)
		}
		if d := cmp.Diff(st.adapters, f.set.Adapters()); d != "" {
			t.Errorf("%s: Adapters (-want +got):\n%s", st.name, d)
		}
	}
	if got := f.set.Models(); !cmp.Equal(got, []string{"m", "other"}) {
		t.Errorf("Models = %v; adapters must not be listed as base models", got)
	}
	for _, c := range f.set.Candidates("sql") {
		if c.Model != "other" {
			t.Errorf("candidate %s for an adapter has model %q; want its base model", c.ID, c.Model)
		}
	}
}

// TestDrainingKeepsState: a replica that starts draining keeps its KV state
// and routing mode, is marked for the healthy filter, and takes requests
// again with its state intact when it passes again.
func TestDrainingKeepsState(t *testing.T) {
	f := newFixture()
	a := Replica{ID: "a/1", Model: "m", Address: "h:1", KVEvents: true}
	b := Replica{ID: "b/1", Model: "m", Address: "h:2"}
	f.set.Replace([]Replica{a, b})
	f.snapshot("d", 1, "a/1")
	healthy := &scheduler.HealthyFilter{}
	for _, tc := range []struct {
		name     string
		draining bool
		kept     []string
	}{
		{"passing", false, []string{"a/1", "b/1"}},
		{"warning", true, []string{"b/1"}},
		{"passing again", false, []string{"a/1", "b/1"}},
	} {
		a.Draining = tc.draining
		f.set.Replace([]Replica{a, b})
		cands := f.set.Candidates("m")
		if cands[0].Draining != tc.draining {
			t.Errorf("%s: candidate a draining %v; want %v", tc.name, cands[0].Draining, tc.draining)
		}
		var kept []string
		for _, c := range healthy.Filter(context.Background(), nil, cands) {
			kept = append(kept, c.ID)
		}
		if d := cmp.Diff(tc.kept, kept); d != "" {
			t.Errorf("%s: healthy filter (-want +got):\n%s", tc.name, d)
		}
		if m := f.models.Lookup("m", []uint64{42}, nil); len(m) != 1 || m[0].Replica != "a/1" {
			t.Errorf("%s: index holds %v; want a/1's block kept", tc.name, m)
		}
		if mode := f.set.Mode("a/1"); mode != scheduler.ModeExact {
			t.Errorf("%s: mode %s; want exact", tc.name, mode)
		}
	}
	if len(f.resnap) != 0 {
		t.Errorf("draining asked drivers for snapshots: %v", f.resnap)
	}
}
