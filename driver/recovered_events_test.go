package driver

import (
	"strconv"
	"testing"

	"github.com/llmgw/llmgw/plugin/proto/drivers"
)

// TestRecoveredEventsHeldUntilNomadCalls: a recovered task's events wait
// for release (Nomad's first call for the task), then go out in order,
// the oldest dropped past heldPerTask; other tasks' events are not held.
func TestRecoveredEventsHeldUntilNomadCalls(t *testing.T) {
	recovered, other := &drivers.TaskConfig{Id: "a/t/1"}, &drivers.TaskConfig{Id: "b/t/2"}
	for _, tc := range []struct {
		name      string
		emitted   int
		wantFirst int // index of the first held event the stream gets
	}{
		{"one", 1, 0},
		{"a full hold", heldPerTask, 0},
		{"past the hold", heldPerTask + 5, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newEventBus()
			ch, cancel := b.subscribe()
			defer cancel()
			b.hold(recovered.Id)
			for i := range tc.emitted {
				b.emit(recovered, strconv.Itoa(i), nil)
			}
			b.emit(other, "other", nil)
			if got := (<-ch).GetMessage(); got != "other" || len(ch) != 0 {
				t.Fatalf("before release the stream got %q and %d more; want only the other task's event", got, len(ch))
			}
			b.release(recovered.Id)
			if got, want := len(ch), tc.emitted-tc.wantFirst; got != want {
				t.Fatalf("release sent %d events, want %d", got, want)
			}
			for i := tc.wantFirst; i < tc.emitted; i++ {
				if got := (<-ch).GetMessage(); got != strconv.Itoa(i) {
					t.Fatalf("released event %q, want %d", got, i)
				}
			}
			b.emit(recovered, "live", nil)
			if got := (<-ch).GetMessage(); got != "live" {
				t.Errorf("after release the stream got %q, want live", got)
			}
			b.release(recovered.Id) // a second call: nothing held, nothing sent
			if len(ch) != 0 {
				t.Errorf("a second release sent %d events", len(ch))
			}
		})
	}
}
