package consul

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/llmgw/llmgw/internal/testkit/poll"
)

// answer is what one query of a lockstep source returns.
type answer struct {
	instances []Instance
	index     uint64
	err       error
}

// call is one query a watcher made: the index it asked at, and where the
// test sends the answer.
type call struct {
	index  uint64
	answer chan<- answer
}

// lockstep is a Source the test answers query by query: a watcher's next
// query arrives only once it has handled the last answer.
type lockstep struct{ calls chan call }

func (l lockstep) Query(ctx context.Context, index uint64, _ time.Duration) ([]Instance, uint64, error) {
	ans := make(chan answer, 1)
	select {
	case l.calls <- call{index, ans}:
	case <-ctx.Done():
		return nil, 0, ctx.Err()
	}
	select {
	case a := <-ans:
		return a.instances, a.index, a.err
	case <-ctx.Done():
		return nil, 0, ctx.Err()
	}
}

func (lockstep) String() string { return "lockstep" }

// TestWatchLoopIndexRules drives the loop Watcher runs for Consul and
// Nomad alike through each rule: the index it asks at next, the wake-ups a
// set change gives, and the backoff after errors.
func TestWatchLoopIndexRules(t *testing.T) {
	t.Parallel()
	a := []Instance{{ServiceID: "a", Health: HealthPassing}}
	aWarn := []Instance{{ServiceID: "a", Health: HealthWarning}}
	fail := errors.New("agent unreachable")
	const ms = time.Millisecond
	for _, tc := range []struct {
		name        string
		answers     []answer
		wantAsked   []uint64 // the index of each query, one more than answers
		wantWakeups int
		wantPauses  []time.Duration
		wantErrors  uint64
	}{
		{"index moves forward", []answer{{a, 10, nil}, {a, 12, nil}}, []uint64{0, 10, 12}, 1, nil, 0},
		{"same index, same set: no update", []answer{{a, 10, nil}, {a, 10, nil}}, []uint64{0, 10, 10}, 1, nil, 0},
		// Nomad's index moves with registrations only, not check results.
		{"same index, health changed: an update", []answer{{a, 10, nil}, {aWarn, 10, nil}}, []uint64{0, 10, 10}, 2, nil, 0},
		{"index went backwards: a fresh query", []answer{{a, 10, nil}, {a, 5, nil}}, []uint64{0, 10, 0}, 1, nil, 0},
		{"index 0 never blocks", []answer{{a, 0, nil}}, []uint64{0, 1}, 1, nil, 0},
		{"errors: backoff doubling, then a fresh query",
			[]answer{{a, 10, nil}, {nil, 0, fail}, {nil, 0, fail}, {a, 11, nil}},
			[]uint64{0, 10, 0, 0, 11}, 1, []time.Duration{ms, 2 * ms}, 2},
		{"backoff capped", []answer{{nil, 0, fail}, {nil, 0, fail}, {nil, 0, fail}, {nil, 0, fail}},
			[]uint64{0, 0, 0, 0, 0}, 0, []time.Duration{ms, 2 * ms, 3 * ms, 3 * ms}, 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			src := lockstep{calls: make(chan call)}
			var pauses []time.Duration
			pause := func(_ context.Context, d time.Duration) bool { pauses = append(pauses, d); return true }
			ids := func(in []Instance) ([]string, []error) {
				var out []string
				for _, i := range in {
					out = append(out, i.ServiceID+":"+i.Health)
				}
				return out, nil
			}
			w, err := startWatcher(context.Background(), src, ids, WatchOptions{MinBackoff: ms, MaxBackoff: 3 * ms}, pause)
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			var asked []uint64
			wakeups := 0
			next := func() call {
				t.Helper()
				select {
				case c := <-src.calls:
					asked = append(asked, c.index)
					select { // the last answer has been handled
					case <-w.Changed():
						wakeups++
					default:
					}
					return c
				case <-time.After(poll.Timeout):
					t.Fatalf("no query after %d answers", len(asked))
					return call{}
				}
			}
			for _, ans := range tc.answers {
				next().answer <- ans
			}
			next()
			if !slices.Equal(asked, tc.wantAsked) {
				t.Errorf("queries at indexes %v; want %v", asked, tc.wantAsked)
			}
			if wakeups != tc.wantWakeups {
				t.Errorf("%d wake-ups; want %d", wakeups, tc.wantWakeups)
			}
			if !slices.Equal(pauses, tc.wantPauses) {
				t.Errorf("backoffs %v; want %v", pauses, tc.wantPauses)
			}
			if st := w.Status(); st.Errors != tc.wantErrors {
				t.Errorf("status %+v; want %d errors", st, tc.wantErrors)
			}
		})
	}
}
