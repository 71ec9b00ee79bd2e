package replicas

import (
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
