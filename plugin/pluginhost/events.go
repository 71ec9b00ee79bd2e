package pluginhost

import (
	"context"
	"sync"
	"time"

	"github.com/llmgw/llmgw/plugin/proto/drivers"
)

// Events receives a plugin's task events the way Nomad's client does, so a
// test sees which of them Nomad would show and which it would drop:
//
//   - one TaskEvents stream for the plugin's life, opened again when it
//     ends (drivermanager's instanceManager.handleEvents);
//   - each event handed to its task's handler, looked up by allocation id
//     and task name when the event arrives (instanceManager.handleEvent,
//     Client.GetTaskEventHandler, allocRunner.GetTaskEventHandler); an
//     event whose task has no handler is dropped, where Nomad logs "no
//     handler registered for event";
//   - a task has a handler from just before its StartTask (the client adds
//     an allocation's runner to its allocations before it runs it);
//   - after an agent restart, a task has none while it is recovered:
//     Client.restoreState adds the allocation's runner only once
//     allocRunner.Restore, whose task runners call RecoverTask, has
//     returned, and runs the runners (whose first call for a task is
//     WaitTask) after every allocation is restored. The host registers
//     a recovered task's handler at the latest point that order allows,
//     Nomad's first call for the task after a RecoverTask that succeeded
//     (WaitTask, StopTask, DestroyTask, InspectTask, TaskStats,
//     SignalTask, ExecTask through Host.Driver): a driver that delivers
//     its recovery events here delivers them whenever Nomad registers.
//
// Handlers stay registered for the host's life: Nomad removes an
// allocation's only when it garbage-collects it, which no test here does.
type Events struct {
	handlers *handlers
	cancel   context.CancelFunc
	done     chan struct{}

	mu        sync.Mutex // guards delivered, dropped and changed
	delivered []*drivers.DriverTaskEvent
	dropped   []*drivers.DriverTaskEvent
	changed   chan struct{} // closed and replaced on each event
}

// WatchEvents starts receiving h's task events; Close stops it. It keeps
// opening the stream again while the plugin runs, as Nomad does.
func (h *Host) WatchEvents() *Events {
	ctx, cancel := context.WithCancel(context.Background())
	e := &Events{handlers: h.tracked.handlers, cancel: cancel, done: make(chan struct{}), changed: make(chan struct{})}
	go e.run(ctx, h)
	return e
}

// reopenEvery is how long the host waits before opening an ended stream
// again.
const reopenEvery = 50 * time.Millisecond

func (e *Events) run(ctx context.Context, h *Host) {
	defer close(e.done)
	for ctx.Err() == nil && !h.Exited() {
		if stream, err := h.Driver.TaskEvents(ctx, &drivers.TaskEventsRequest{}); err == nil {
			for {
				ev, err := stream.Recv()
				if err != nil {
					break
				}
				e.handle(ev)
			}
		}
		t := time.NewTimer(reopenEvery)
		select {
		case <-ctx.Done():
		case <-t.C:
		}
		t.Stop()
	}
}

func (e *Events) handle(ev *drivers.DriverTaskEvent) {
	ok := e.handlers.has(ev.GetAllocId(), ev.GetTaskName())
	e.mu.Lock()
	defer e.mu.Unlock()
	if ok {
		e.delivered = append(e.delivered, ev)
	} else {
		e.dropped = append(e.dropped, ev)
	}
	close(e.changed)
	e.changed = make(chan struct{})
}

// Delivered returns the events Nomad would have recorded, in order.
func (e *Events) Delivered() []*drivers.DriverTaskEvent {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]*drivers.DriverTaskEvent(nil), e.delivered...)
}

// Dropped returns the events Nomad would have dropped for want of a
// handler, in order.
func (e *Events) Dropped() []*drivers.DriverTaskEvent {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]*drivers.DriverTaskEvent(nil), e.dropped...)
}

// Changed is closed when the next event arrives, delivered or dropped.
// Take it before reading Delivered or Dropped, so no event slips between.
func (e *Events) Changed() <-chan struct{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.changed
}

// Close stops receiving and waits for the receiver to return.
func (e *Events) Close() {
	e.cancel()
	<-e.done
}
