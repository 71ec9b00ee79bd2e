package driver

import (
	"strconv"
	"testing"

	"github.com/llmgw/llmgw/plugin/proto/drivers"
)

// TestEventsHeldForTheNextStream: an event emitted while no TaskEvents
// stream is open (a recovery that runs before Nomad's stream reaches the
// plugin) reaches the next stream, oldest dropped past the buffer, and is
// delivered once.
func TestEventsHeldForTheNextStream(t *testing.T) {
	cfg := &drivers.TaskConfig{Id: "a/t/1"}
	for _, tc := range []struct {
		name      string
		emitted   int
		wantFirst int // index of the first event the stream gets
	}{
		{"one", 1, 0},
		{"a full buffer", subscribeBuffer, 0},
		{"past the buffer", subscribeBuffer + 10, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newEventBus()
			for i := range tc.emitted {
				b.emit(cfg, strconv.Itoa(i), nil)
			}
			ch, cancel := b.subscribe()
			defer cancel()
			if got, want := len(ch), tc.emitted-tc.wantFirst; got != want {
				t.Fatalf("the stream got %d held events, want %d", got, want)
			}
			if first := (<-ch).GetMessage(); first != strconv.Itoa(tc.wantFirst) {
				t.Errorf("first held event %q, want %d", first, tc.wantFirst)
			}
			again, cancel2 := b.subscribe()
			defer cancel2()
			if len(again) != 0 {
				t.Errorf("a second stream got %d events already delivered", len(again))
			}
		})
	}
}

// TestEventsLiveGoToStreams: with a stream open nothing is held back.
func TestEventsLiveGoToStreams(t *testing.T) {
	b := newEventBus()
	ch, cancel := b.subscribe()
	b.emit(&drivers.TaskConfig{Id: "a/t/1"}, "live", nil)
	cancel()
	if got := (<-ch).GetMessage(); got != "live" {
		t.Errorf("stream got %q, want live", got)
	}
	late, cancel2 := b.subscribe()
	defer cancel2()
	if len(late) != 0 {
		t.Errorf("a later stream got %d events the open one had", len(late))
	}
}
