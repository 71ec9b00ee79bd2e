package replicas

import (
	"slices"
	"testing"
	"time"

	"github.com/llmgw/llmgw/router/scheduler"
)

// TestAppendCandidatesCopies: candidates come from a template kept per
// replica list, so what a caller does to its copy must not reach the next
// caller, a breaker must show on the next call, and a reused buffer takes
// them without allocating.
func TestAppendCandidatesCopies(t *testing.T) {
	f := newFixture()
	f.set.Replace([]Replica{{ID: "a/1", Model: "m"}, {ID: "b/1", Model: "m"}})
	first := f.set.AppendCandidates(nil, "m")
	first[0].ID, first[0].Healthy = "scribbled", false
	buf := f.set.AppendCandidates(make([]scheduler.Candidate, 0, 4), "m")
	if buf[0].ID != "a/1" || !buf[0].Healthy {
		t.Fatalf("after a caller changed its copy: %+v; want a/1, healthy", buf[0])
	}
	for range 3 {
		f.set.Failed("b/1")
	}
	buf = f.set.AppendCandidates(buf[:0], "m")
	if buf[1].Healthy {
		t.Errorf("b/1 healthy with its breaker open")
	}
	f.now = f.now.Add(time.Hour)
	if allocs := testing.AllocsPerRun(100, func() { buf = f.set.AppendCandidates(buf[:0], "m") }); allocs != 0 {
		t.Errorf("AppendCandidates into a buffer with room: %v allocations; want 0", allocs)
	}
	if !buf[1].Healthy {
		t.Errorf("b/1 not healthy again after its cooldown")
	}
}

// TestCandidateModesFollowKVState: the modes AppendCandidates keeps per
// template change as soon as a replica's KV state does, both ways, and a
// replica set changed meanwhile gets modes of its own.
func TestCandidateModesFollowKVState(t *testing.T) {
	f := newFixture()
	f.set.Replace([]Replica{{ID: "a/1", Model: "m"}, {ID: "b/1", Model: "m"}})
	modes := func() []scheduler.Mode {
		var out []scheduler.Mode
		for _, c := range f.set.AppendCandidates(nil, "m") {
			out = append(out, c.Mode)
		}
		return out
	}
	approx, exact := scheduler.ModeApprox, scheduler.ModeExact
	steps := []struct {
		name string
		do   func()
		want []scheduler.Mode
	}{
		{"no KV state", func() {}, []scheduler.Mode{approx, approx}},
		{"b's driver sends a snapshot", func() { f.snapshot("d", 1, "b/1") }, []scheduler.Mode{approx, exact}},
		{"asked again, nothing changed", func() {}, []scheduler.Mode{approx, exact}},
		{"the driver's next snapshot has a, not b", func() { f.snapshot("d", 2, "a/1") }, []scheduler.Mode{exact, approx}},
		{"c joins", func() {
			f.set.Replace([]Replica{{ID: "a/1", Model: "m"}, {ID: "b/1", Model: "m"}, {ID: "c/1", Model: "m"}})
		}, []scheduler.Mode{exact, approx, approx}},
	}
	for _, st := range steps {
		st.do()
		if got := modes(); !slices.Equal(got, st.want) {
			t.Fatalf("%s: modes %v; want %v", st.name, got, st.want)
		}
	}
}
