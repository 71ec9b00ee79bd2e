package scheduler

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmgw/llmgw/router/index"
)

// hotFixture is a scheduler on the default config with replica "a"
// caching head, and b and c caching nothing.
func hotFixture(t *testing.T, head []uint64) (*env, []Candidate) {
	t.Helper()
	e := newEnv(t, DefaultConfig())
	e.store(t, "a", index.GPU, head)
	return e, []Candidate{cand("a", ModeExact), cand("b", ModeExact), cand("c", ModeExact)}
}

// headRequest is a request whose prompt is head and four blocks of its own.
func headRequest(head []uint64, n int, session string) *Request {
	own := keys(uint64(10_000+10*n), uint64(10_000+10*n+3))
	ks := slices.Concat(head, own)
	return &Request{Model: "m", Keys: ks, BlockTokens: 16, PromptTokens: 16 * len(ks), SessionID: session}
}

// TestHotPrefixProposesIdleNonHolders pins when the replicator proposes a
// copy: only once the deepest held prefix was sent in three distinct
// seconds of the last 30 s, only a long enough prefix, only to an idle
// replica that lacks it.
func TestHotPrefixProposesIdleNonHolders(t *testing.T) {
	long, short := keys(1, 40), keys(1, 16)
	for _, tc := range []struct {
		name string
		head []uint64
		// gaps before each request after the first; the last request's
		// decision is checked
		gaps []time.Duration
		busy bool // b and c have a request in flight
		want bool // the last decision proposes b or c
	}{
		{name: "three distinct seconds", head: long, gaps: []time.Duration{time.Second, time.Second, time.Second}, want: true},
		{name: "two distinct seconds", head: long, gaps: []time.Duration{time.Second, 0, 0, time.Second}},
		{name: "one burst in one second", head: long, gaps: slices.Repeat([]time.Duration{10 * time.Millisecond}, 20)},
		{name: "older than the window", head: long, gaps: []time.Duration{time.Second, time.Second, 31 * time.Second}},
		{name: "prefix under min_blocks", head: short, gaps: []time.Duration{time.Second, time.Second, time.Second}},
		{name: "no idle replica lacks it", head: long, gaps: []time.Duration{time.Second, time.Second, time.Second}, busy: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, cands := hotFixture(t, tc.head)
			if tc.busy {
				cands[1].Load.InFlight, cands[2].Load.InFlight = 1, 1
			}
			var d Decision
			for i := 0; i <= len(tc.gaps); i++ {
				if i > 0 {
					e.clock.advance(tc.gaps[i-1])
				}
				d = e.route(t, headRequest(tc.head, i, ""), cands)
				if i < len(tc.gaps) && d.Warm != nil && !tc.want {
					t.Fatalf("request %d: proposed copying to %s before the prefix was hot", i, d.Warm.Candidate.ID)
				}
			}
			if got := d.Warm != nil; got != tc.want {
				t.Fatalf("last decision proposes a copy: %v; want %v", got, tc.want)
			}
			if d.Warm == nil {
				return
			}
			if id := d.Warm.Candidate.ID; id == "a" || id == d.Chosen.Candidate.ID {
				t.Errorf("proposed %s (chosen %s); want an idle replica without the head", id, d.Chosen.Candidate.ID)
			}
		})
	}
}

// TestHotPrefixCopiesUntilEveryReplicaHolds follows a hot prefix as the
// gateway acts on the proposals: each copy is credited to its replica
// (Scheduler.Warming), the next proposal is another replica, none once
// every replica holds the prefix, and the session whose request was
// copied stays on the replica that served it.
func TestHotPrefixCopiesUntilEveryReplicaHolds(t *testing.T) {
	head := keys(1, 40)
	e, cands := hotFixture(t, head)
	for i := range 3 {
		e.route(t, headRequest(head, i, ""), cands)
		e.clock.advance(time.Second)
	}
	var copied []string
	for i := 3; i < 6; i++ {
		req := headRequest(head, i, "s")
		d, err := e.s.Schedule(context.Background(), req, cands)
		if err != nil {
			t.Fatal(err)
		}
		if d.Warm != nil { // as the gateway: the copy, then the request
			copied = append(copied, d.Warm.Candidate.ID)
			e.s.Warming(req, &d.Warm.Candidate)
		}
		e.s.Routed(req, &d.Chosen.Candidate)
		next, err := e.s.Schedule(context.Background(), headRequest(head, 100+i, "s"), cands)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range append([]Ranked{next.Chosen}, next.Fallbacks...) {
			want := 0.0
			if r.Candidate.ID == d.Chosen.Candidate.ID {
				want = 1
			}
			if got := next.Score(r, "session"); got != want {
				t.Errorf("request %d: session score on %s is %g; want %g (the session follows the request, not the copy)", i, r.Candidate.ID, got, want)
			}
			if slices.Contains(copied, r.Candidate.ID) && r.CachedBlocks < len(head) {
				t.Errorf("request %d: %s was sent a copy but is predicted to hold %d of the head's %d blocks", i, r.Candidate.ID, r.CachedBlocks, len(head))
			}
		}
		e.clock.advance(time.Second)
	}
	slices.Sort(copied)
	if strings.Join(copied, ",") != "b,c" {
		t.Errorf("copies went to %v; want one each to b and c, then none", copied)
	}
}

func TestHotPrefixParams(t *testing.T) {
	for _, tc := range []struct {
		raw, want string
	}{
		{`{"min_blocks": 0}`, "min_blocks 0 must be at least 1"},
		{`{"window": "0s"}`, "window must be positive"},
		{`{"min_seconds": 9}`, "min_seconds 9 must be in 1..8"},
		{`{"max_entries": 0}`, "max_entries 0 must be positive"},
		{`{"window": 30}`, "duration must be a string"},
		{`{"min_second": 2}`, "unknown field"},
	} {
		r := NewRegistry()
		if err := RegisterBuiltins(r); err != nil {
			t.Fatal(err)
		}
		_, err := r.New(Spec{Type: "hot-prefix", Params: []byte(tc.raw)}, Deps{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v; want one containing %q", tc.raw, err, tc.want)
		}
	}
}

// TestHotPrefixMemoryBounded: past max_entries prefixes the older
// generation is dropped, and a prefix seen again moves to the current one.
func TestHotPrefixMemoryBounded(t *testing.T) {
	c := newClock()
	h := newHotPrefix(TypedName{Type: "hot-prefix"}, HotPrefixParams{MinBlocks: 1, Window: Duration(time.Minute), MinSeconds: 1, MaxEntries: 4}, c.now)
	for k := range uint64(100) {
		req := &Request{Keys: []uint64{k}}
		req.resetCycle(1)
		hotKey.Set(req, 0, k)
		h.Routed(req, nil)
	}
	if n := len(h.cur) + len(h.older); n > 8 {
		t.Errorf("%d prefixes remembered; want at most 2 x max_entries (8)", n)
	}
	if !h.hot(99) || h.hot(0) {
		t.Errorf("hot(99) = %v, hot(0) = %v; want the newest kept and the oldest dropped", h.hot(99), h.hot(0))
	}
}
