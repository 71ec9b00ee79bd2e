package driver

import (
	"sync"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/llmgw/llmgw/plugin/proto/drivers"
)

// eventBus fans driver task events out to the TaskEvents streams. Nomad
// keeps one stream open for the plugin's life and re-opens it at once if it
// ends; a slow stream loses events rather than stalling a task. Events
// emitted while no stream is open (a plugin that recovers its tasks before
// Nomad's stream has reached it, or between a stream's end and the next)
// are held, up to subscribeBuffer of them, for the next stream.
//
// A recovered task's events are held apart until Nomad can take them
// (hold, release; recovered_events.go).
type eventBus struct {
	mu      sync.Mutex // guards subs, pending and held
	subs    map[chan *drivers.DriverTaskEvent]struct{}
	pending []*drivers.DriverTaskEvent
	held    map[string][]*drivers.DriverTaskEvent // by task id
}

func newEventBus() *eventBus {
	return &eventBus{subs: map[chan *drivers.DriverTaskEvent]struct{}{}, held: map[string][]*drivers.DriverTaskEvent{}}
}

// subscribeBuffer is how many events a stream may fall behind.
const subscribeBuffer = 256

func (b *eventBus) subscribe() (chan *drivers.DriverTaskEvent, func()) {
	ch := make(chan *drivers.DriverTaskEvent, subscribeBuffer)
	b.mu.Lock()
	for _, ev := range b.pending {
		ch <- ev // fits: pending holds at most subscribeBuffer
	}
	b.pending = nil
	b.subs[ch] = struct{}{}
	b.mu.Unlock()
	return ch, func() {
		b.mu.Lock()
		delete(b.subs, ch)
		b.mu.Unlock()
	}
}

// emit sends an event for cfg's task to every stream, never blocking.
func (b *eventBus) emit(cfg *drivers.TaskConfig, msg string, annotations map[string]string) {
	ev := &drivers.DriverTaskEvent{
		TaskId: cfg.GetId(), AllocId: cfg.GetAllocId(), TaskName: cfg.GetName(),
		Timestamp: timestamppb.New(time.Now()), Message: msg, Annotations: annotations,
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if q, ok := b.held[ev.TaskId]; ok {
		if len(q) == heldPerTask {
			q = q[1:] // the oldest goes first
		}
		b.held[ev.TaskId] = append(q, ev)
		return
	}
	b.send(ev)
}

// send hands ev to every stream, or keeps it for the next one. Callers
// hold b.mu.
func (b *eventBus) send(ev *drivers.DriverTaskEvent) {
	if len(b.subs) == 0 {
		if len(b.pending) == subscribeBuffer {
			b.pending = b.pending[1:] // the oldest goes first
		}
		b.pending = append(b.pending, ev)
		return
	}
	for ch := range b.subs {
		select {
		case ch <- ev:
		default: // a stream this far behind is being torn down
		}
	}
}
